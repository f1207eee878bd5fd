// The one browser every HTTP request of the scrapers claims to be (issue 37): Chrome 151, as impit's
// `chrome151` profile speaks it on the wire (TLS ClientHello, HTTP/2 SETTINGS and pseudo-header
// order), with a user agent, client hints and accept-language of that same browser and version,
// sent in the order Chrome sends them. A bot wall compares these with each other: a Chrome user
// agent over another client's handshake, client hints of another version, or headers in another
// order are what it blocks first.
//
// Why chrome151 (measured with a TCP listener computing the JA4 of each ClientHello):
//   impit `chrome` (Chrome 124)  t13d1516h2_8daaf6152771_02713d6af862 (ALPS 17513, no ML-DSA signatures)
//   impit `chrome151`            t13d1516h2_8daaf6152771_806a8c22fdea (ALPS 17613, ML-DSA 0x0904-0x0906)
//   Chromium 156 (Debian's)      t13d1517h2_8daaf6152771_…            (the same, plus extension 51764)
// Both are real Chromes' fingerprints; chrome151's extension set and signature algorithms are those
// of the installed Chromium but one extension, `chrome`'s are two years older.
//
// Only what a real population of that browser varies is drawn per identity: the operating system
// (the user agent's platform token and sec-ch-ua-platform together; Chrome's handshake is the same
// on all three) and the language. The version stays the profile's, so that the user agent, the
// client hints and the handshake always agree.
import type { RequestKind } from './scrape-session.ts';

/** impit's browser profile for every client of the scrapers. */
export const CHROME_PROFILE = 'chrome151' as const;

/** Chrome 151's brand list, as that version sends it (impit's profile carries the same). */
const SEC_CH_UA = '"Not=A?Brand";v="99", "Google Chrome";v="151", "Chromium";v="151"';

/** Desktop systems by their share of Chrome visits, with the tokens Chrome 151 gives each. */
const SYSTEMS = [
  { weight: 0.62, ua: 'Windows NT 10.0; Win64; x64', platform: '"Windows"' },
  { weight: 0.28, ua: 'Macintosh; Intel Mac OS X 10_15_7', platform: '"macOS"' },
  { weight: 0.1, ua: 'X11; Linux x86_64', platform: '"Linux"' },
] as const;

/** English locales, as Chrome writes its accept-language for each. */
const LANGUAGES = ['en-US,en;q=0.9', 'en-US,en;q=0.9', 'en-US,en;q=0.9', 'en-GB,en;q=0.9', 'en-US,en;q=0.9,es;q=0.8', 'en-CA,en;q=0.9,fr-CA;q=0.8'] as const;

const NAVIGATION_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7';

/**
 * One Chrome 151 identity's headers for a top-level navigation, lower-case, in Chrome's order.
 * `random` is for tests; a draw takes a few microseconds.
 */
export function chromeHeaderSet(random: () => number = Math.random): Record<string, string> {
  let pick = random();
  const system = SYSTEMS.find((s) => (pick -= s.weight) < 0) ?? SYSTEMS[0];
  const language = LANGUAGES[Math.floor(random() * LANGUAGES.length)] ?? LANGUAGES[0];
  return {
    'sec-ch-ua': SEC_CH_UA,
    'sec-ch-ua-mobile': '?0',
    'sec-ch-ua-platform': system.platform,
    'upgrade-insecure-requests': '1',
    'user-agent': `Mozilla/5.0 (${system.ua}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/151.0.0.0 Safari/537.36`,
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

/**
 * The headers impit's Chrome profile adds on its own. impit sends the headers it is given first, in
 * the order given, then those of its profile the request did not name; an empty value removes one.
 * So every request names all of them (with '' for those it must not send) and its order is ours.
 */
const PROFILE_HEADERS = ['sec-ch-ua', 'sec-ch-ua-mobile', 'sec-ch-ua-platform', 'upgrade-insecure-requests', 'user-agent', 'accept', 'sec-fetch-site', 'sec-fetch-mode', 'sec-fetch-user', 'sec-fetch-dest', 'accept-encoding', 'accept-language', 'priority'] as const;

const KNOWN: Record<RequestKind, ReadonlySet<string>> = { html: new Set(ORDER.html), json: new Set(ORDER.json) };

/**
 * The header list impit is given for one request of `kind` to `target`: `headers` (lower-case
 * names) in Chrome's order. Over plain HTTP the connection is HTTP/1.1, where Chrome leads with
 * Host and Connection (HTTP/2 has :authority instead, and no such header may be sent). A POST from
 * a page's script carries its Origin.
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
  for (const name of PROFILE_HEADERS) if (headers[name] === undefined) out.push([name, '']);
  return out;
}
