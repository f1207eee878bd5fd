// The one browser every HTTP request of the scrapers claims to be (issue 37): Chrome 143, as
// wreq-js's `chrome_143` profile speaks it on the wire (TLS ClientHello, HTTP/2 SETTINGS, window
// and pseudo-header order), with a user agent, client hints and accept-language of that same
// browser and version, sent in the order Chrome sends them. A bot wall compares these with each
// other: a Chrome user agent over another client's handshake, client hints of another version, or
// headers in another order are what it blocks first.
//
// Why chrome_143 (measured through the simulator's front, which computes each ClientHello's JA4):
//   wreq-js chrome_142, chrome_143, chrome_149   t13d1516h2_8daaf6152771_d8a2da3f94cd (with SNI)
//   browserleaks' capture of a real Chrome 143   t13d1516h2_8daaf6152771_d8a2da3f94cd
//   impit 0.14.5 chrome151 (the client before)   a part c no Chrome has (13 signature algorithms in
//     ascending order; Chrome sends its own 8 in its own order), and HTTP/2 SETTINGS without
//     HEADER_TABLE_SIZE but with MAX_FRAME_SIZE, which Akamai's HTTP/2 fingerprint tells apart.
// wreq's three profiles share one handshake; 143 is the version whose published capture it equals,
// so the user agent and the handshake are one real browser's. Its HTTP/2 SETTINGS are Chrome's
// (1:65536;2:0;4:6291456;6:262144, then WINDOW_UPDATE 15663105).
//
// Only what a real population of that browser varies is drawn per identity: the operating system
// (the user agent's platform token and sec-ch-ua-platform together, read from wreq's own profile
// for that system; Chrome's handshake is the same on all three); the language is the browser's
// default for all (LANGUAGES says why). The version stays the profile's, so that the user agent,
// the client hints and the handshake always agree.
import { getEmulationHeaders, type EmulationOS } from 'wreq-js';
import type { RequestKind } from './scrape-session.ts';

/** wreq-js's browser profile for every client of the scrapers. */
export const CHROME_PROFILE = 'chrome_143' as const;

/** The profile's own user agent and client hints on one system, so that they are never typed twice. */
function profileHeaders(os: EmulationOS): { ua: string; secChUa: string; platform: string } {
  const headers = getEmulationHeaders(CHROME_PROFILE, os);
  const ua = headers.get('user-agent');
  const secChUa = headers.get('sec-ch-ua');
  const platform = headers.get('sec-ch-ua-platform');
  if (!ua || !secChUa || !platform) throw new Error(`wreq-js's ${CHROME_PROFILE} profile has no user agent or client hints for ${os}`);
  return { ua, secChUa, platform };
}

/** Desktop systems by their share of Chrome visits, each with the headers the profile gives it. */
const SYSTEMS = ([
  { weight: 0.62, os: 'windows' },
  { weight: 0.28, os: 'macos' },
  { weight: 0.1, os: 'linux' },
] as const).map((s) => ({ ...s, ...profileHeaders(s.os) }));

/** The system an identity's headers claim (its sec-ch-ua-platform), for the transport's emulation. */
export function emulationOs(headers: Readonly<Record<string, string>>): EmulationOS {
  return SYSTEMS.find((s) => s.platform === headers['sec-ch-ua-platform'])?.os ?? 'windows';
}

/**
 * The one language every identity speaks: the browser's default, as Chromium writes it. A language
 * per identity cannot be given to the browser's pages without its header moving before
 * accept-encoding (browser-pages.ts), and a session's page and HTTP requests must say the same.
 */
const LANGUAGES = ['en-US,en;q=0.9'] as const;

const NAVIGATION_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7';

/**
 * One Chrome 143 identity's headers for a top-level navigation, lower-case, in Chrome's order.
 * `random` is for tests; a draw takes a few microseconds.
 */
export function chromeHeaderSet(random: () => number = Math.random): Record<string, string> {
  let pick = random();
  const system = SYSTEMS.find((s) => (pick -= s.weight) < 0) ?? SYSTEMS[0]!;
  const language = LANGUAGES[Math.floor(random() * LANGUAGES.length)] ?? LANGUAGES[0];
  return {
    'sec-ch-ua': system.secChUa,
    'sec-ch-ua-mobile': '?0',
    'sec-ch-ua-platform': system.platform,
    'upgrade-insecure-requests': '1',
    'user-agent': system.ua,
    accept: NAVIGATION_ACCEPT,
    'sec-fetch-site': 'none',
    'sec-fetch-mode': 'navigate',
    'sec-fetch-user': '?1',
    'sec-fetch-dest': 'document',
    'accept-encoding': 'gzip, deflate, br, zstd',
    'accept-language': language,
    priority: 'u=0, i',
  };
}

/**
 * Chrome's header order, captured from Chromium 156 over HTTP/2 (a page's navigation, and its
 * script's fetch() calls). `*` is where Chrome puts the headers a script sets itself (a content
 * type, a token header): after sec-ch-ua, in the order the script gave them.
 */
const ORDER: Record<RequestKind, readonly string[]> = {
  html: ['sec-ch-ua', 'sec-ch-ua-mobile', 'sec-ch-ua-platform', 'upgrade-insecure-requests', 'user-agent', 'accept', '*', 'sec-fetch-site', 'sec-fetch-mode', 'sec-fetch-user', 'sec-fetch-dest', 'referer', 'accept-encoding', 'accept-language', 'cookie', 'priority'],
  json: ['sec-ch-ua-platform', 'user-agent', 'sec-ch-ua', '*', 'sec-ch-ua-mobile', 'accept', 'origin', 'sec-fetch-site', 'sec-fetch-mode', 'sec-fetch-user', 'sec-fetch-dest', 'referer', 'accept-encoding', 'accept-language', 'cookie', 'priority'],
};

const KNOWN: Record<RequestKind, ReadonlySet<string>> = { html: new Set(ORDER.html), json: new Set(ORDER.json) };

/**
 * The header list wreq is given for one request of `kind` to `target`: `headers` (lower-case
 * names) in Chrome's order. wreq sends a list as given when told not to add its profile's own
 * (disableDefaultHeaders; checked on the wire in http-fetcher.wire.test.ts). Over plain HTTP the
 * connection is HTTP/1.1, where Chrome leads with Host and Connection (HTTP/2 has :authority
 * instead, and no such header may be sent). A POST from a page's script carries its Origin.
 */
export function onTheWire(kind: RequestKind, headers: Readonly<Record<string, string>>, target: URL, method: 'GET' | 'POST' = 'GET'): [string, string][] {
  const out: [string, string][] = [];
  if (target.protocol === 'http:') out.push(['host', target.host], ['connection', 'keep-alive']);
  const known = KNOWN[kind];
  for (const name of ORDER[kind]) {
    if (name === '*') {
      for (const [other, value] of Object.entries(headers)) if (!known.has(other) && other !== 'host' && other !== 'connection') out.push([other, value]);
      continue;
    }
    const value = name === 'origin' && method === 'POST' && kind === 'json' ? (headers.origin ?? target.origin) : headers[name];
    if (value !== undefined) out.push([name, value]);
  }
  return out;
}
