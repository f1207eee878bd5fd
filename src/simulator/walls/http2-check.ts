// The wall's HTTP/2 check. Chrome, Firefox and Safari always speak HTTP/2 to a server that offers
// it in ALPN (the simulator's front does), each with SETTINGS values and a pseudo-header order of
// its own that HTTP libraries rarely copy: a request over HTTP/1.1, or over HTTP/2 with another
// client's SETTINGS or order, is not the browser its user agent names.
import type { WireFacts } from '../tls/wire-facts.ts';
import type { BrowserClaim, BrowserFamily } from './browser-claim.ts';

export interface Http2Profile {
  /** SETTINGS the family always sends, with their values (Node's names). Others are not judged. */
  settings: Readonly<Record<string, number | boolean>>;
  /** Values a family sends one of, by version (Safari's window grew in 18). */
  settingsOneOf?: Readonly<Record<string, readonly (number | boolean)[]>>;
  /** The pseudo-header orders the family sends. */
  pseudoOrders: readonly (readonly string[])[];
}

/**
 * Chrome's measured on this machine (test/simulator/walls-measure.test.ts: Chromium 156, and
 * wreq-js's Chrome profiles, the scrapers' client, send the same; impit's Chrome profiles leave out
 * HEADER_TABLE_SIZE and add MAX_FRAME_SIZE, and are refused); Firefox's and Safari's as published for Firefox 128+ and
 * Safari 17/18 (their Akamai HTTP/2 fingerprints `1:65536;4:131072;5:16384|12517377|3|m,p,a,s`
 * and `2:0;3:100;4:2097152;8:1;9:1|10420225|0|m,s,a,p` / `...;4:4194304|...|m,s,p,a`).
 */
export const HTTP2_PROFILES: Readonly<Record<BrowserFamily, Http2Profile>> = {
  chrome: {
    settings: { headerTableSize: 65536, enablePush: false, initialWindowSize: 6291456, maxHeaderListSize: 262144 },
    pseudoOrders: [[':method', ':authority', ':scheme', ':path']],
  },
  firefox: {
    settings: { headerTableSize: 65536, initialWindowSize: 131072, maxFrameSize: 16384 },
    pseudoOrders: [[':method', ':path', ':authority', ':scheme']],
  },
  safari: {
    settings: { maxConcurrentStreams: 100 },
    settingsOneOf: { initialWindowSize: [2097152, 4194304] },
    pseudoOrders: [
      [':method', ':scheme', ':path', ':authority'],
      [':method', ':scheme', ':authority', ':path'],
    ],
  },
};

/** Why the request fails the check, or null when it passes. A request claiming no browser fails. */
export function checkHttp2(wire: WireFacts, claim: BrowserClaim | null): string | null {
  if (!claim) return 'the user agent names no browser';
  if (wire.hello && !wire.hello.alpn.includes('h2')) return `the ClientHello offers no h2 (ALPN ${JSON.stringify(wire.hello.alpn).slice(0, 80)}), a ${claim.family} always does`;
  if (wire.httpVersion !== '2.0') return `HTTP/${String(wire.httpVersion).slice(0, 8)} where a ${claim.family} speaks HTTP/2`;
  const profile = HTTP2_PROFILES[claim.family];
  const sent = wire.h2Settings ?? {};
  for (const [name, value] of Object.entries(profile.settings)) {
    if (sent[name] !== value) return `SETTINGS ${name} ${String(sent[name])}, a ${claim.family} sends ${String(value)}`;
  }
  for (const [name, values] of Object.entries(profile.settingsOneOf ?? {})) {
    if (!values.includes(sent[name] as number | boolean)) return `SETTINGS ${name} ${String(sent[name])}, a ${claim.family} sends one of ${values.join(', ')}`;
  }
  const order = wire.pseudoHeaderOrder;
  if (!profile.pseudoOrders.some((want) => sameList(want, order))) return `pseudo-headers in the order ${order.join(' ').slice(0, 80)}, a ${claim.family} sends ${profile.pseudoOrders.map((o) => o.join(' ')).join(' or ')}`;
  return null;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((name, i) => name === b[i]);
}
