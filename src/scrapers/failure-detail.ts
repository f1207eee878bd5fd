// What a customer is told when a scrape fails (issue 36), decided here and nowhere else: the
// `{detail}` of POST /events/scrape's 500 (activities/scrape.ts) and the tracker's `last_error`
// (activities/tracking.ts). A ScrapeFailure's message is the operators': the fetchers write into it
// the URL asked for, the proxy the request left through and the raw network error, which may name
// a proxy's host and port. Logs keep it; a customer is told none of it.
//
// Whitelisting by kind, not scrubbing: a scrub has to know every shape a leak can take (a label,
// a bare host:port in an ECONNREFUSED, a TLS error, a got error quoting its options), a whitelist
// only what may be said. Kinds an adapter raises from reading the platform's own content
// (`not_found`, `unsupported`, `malformed`) keep their message, which is about the event; the kinds
// of fetchers and infrastructure (`upstream`, `attempt_timeout`, `blocked`, `browser_missing`) get
// one sentence per kind naming the platform and what happened. A failure raised with its own
// `detail` (types.ts) is told that instead.
//
// A last pass checks whatever was chosen against the configured proxies (host:port, host, label,
// user name and password, raw and percent-decoded) and against the shapes of an address or a
// proxy anywhere: a text that fails falls back to its kind's sentence, so a leak costs the customer
// words, never the secret.
import type { ProxyEndpoint } from './egress/proxy-urls.ts';
import type { ScrapeFailure, ScrapeFailureKind } from './types.ts';

/** Kinds raised from the platform's own answer: their message is about the event, not our egress. */
const FROM_THE_PLATFORMS_CONTENT: ReadonlySet<ScrapeFailureKind> = new Set(['not_found', 'unsupported', 'malformed']);

/**
 * Marks shorter than this are not looked for: a two-letter user name is found inside ordinary
 * words, and would turn every detail into its fallback. Such a credential is kept out by the kind
 * whitelist alone (no fetcher's text reaches a customer).
 */
const SHORTEST_MARK = 4;

/**
 * Shapes no customer text may hold whatever the configuration: an IPv4 or bracketed IPv6 address,
 * a URL with credentials, and the words that say a request went through a proxy.
 */
const NEVER_TOLD = [/\b\d{1,3}(?:\.\d{1,3}){3}\b/, /\[[0-9a-f.]*:[0-9a-f:.]*\]/i, /\/\/[^\s/@]*@/, /\bprox(?:y|ies)\b/i, /\bsocks\d?[ah]?\b/i];

/** Everything by which a text could name one of `proxies`. */
export function proxyMarks(proxies: readonly ProxyEndpoint[]): string[] {
  const marks = new Set<string>();
  for (const proxy of proxies) {
    const url = new URL(proxy.url);
    const port = url.port || (url.protocol === 'https:' ? '443' : url.protocol === 'http:' ? '80' : '1080');
    const host = url.hostname;
    for (const raw of [proxy.url, proxy.label, `${host}:${port}`, host, url.username, url.password]) {
      for (const form of [raw, safeDecode(raw)]) {
        if (form.length >= SHORTEST_MARK) marks.add(form.toLowerCase());
      }
    }
  }
  return [...marks];
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Whether `text` may be told to a customer: it names no proxy, address or credential. */
export function tellable(text: string, marks: readonly string[]): boolean {
  const lower = text.toLowerCase();
  return !NEVER_TOLD.some((shape) => shape.test(text)) && !marks.some((mark) => lower.includes(mark));
}

/** `text` with every mark cut out: only for a kind's own sentence that met a pathological credential. */
function redacted(text: string, marks: readonly string[]): string {
  let out = text;
  for (const mark of [...marks].sort((a, b) => b.length - a.length)) {
    out = out.replace(new RegExp(mark.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'gi'), '[redacted]');
  }
  return out;
}

/** The kind's own sentence about `source` (a platform key such as pf_06, or marketplace_a). */
export function kindSentence(failure: ScrapeFailure, source: string): string {
  switch (failure.kind) {
    case 'upstream':
      // A status is the platform's answer; without one no answer came (or our side failed).
      return failure.status === null ? `${source} could not be reached` : `${source} answered ${failure.status}`;
    case 'attempt_timeout':
      return `${source} did not answer in time`;
    case 'blocked': {
      const wait = failure.retryAfterMs === null || failure.retryAfterMs <= 0 ? 'later' : `in ${Math.ceil(failure.retryAfterMs / 1000)} s`;
      return `${source} is refusing our requests for this event for now; try again ${wait}`;
    }
    case 'browser_missing':
      return `${source} cannot be scraped right now: the Chromium browser it needs is missing on the server.`;
    case 'not_found':
      return `${source} has no such event`;
    case 'unsupported':
      return `${source} cannot scrape this event`;
    case 'malformed':
      return `${source} answered a page that could not be read`;
  }
}

/**
 * The customer's text for `failure` of a scrape of `source`, given every configured proxy
 * (SCRAPE_PROXY_URLS). Never names a proxy, its address, port, label or credentials.
 */
export function failureDetail(failure: ScrapeFailure, source: string, proxies: readonly ProxyEndpoint[] = []): string {
  const marks = proxyMarks(proxies);
  const chosen = failure.detail ?? (FROM_THE_PLATFORMS_CONTENT.has(failure.kind) ? failure.message : kindSentence(failure, source));
  if (tellable(chosen, marks)) return chosen;
  const sentence = kindSentence(failure, source);
  return tellable(sentence, marks) ? sentence : redacted(sentence, marks);
}
