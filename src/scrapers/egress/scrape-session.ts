// A scrape session (issue 27): what one client of a platform looks like from the platform's side,
// kept for the session's life: the address it comes from (its exit: a proxy, or this machine), a
// cookie jar, and one realistic browser header set from Apify's header-generator (the fingerprint
// suite crawlee's got-scraping uses). Every request of a session sends its headers and cookies
// and leaves through its exit; no request mixes two sessions. A session ends on a block, or ages
// out after SCRAPE_SESSION_MAX_REQUESTS requests or SCRAPE_SESSION_MAX_AGE_MS (exit-pool.ts).
import { HeaderGenerator } from 'header-generator';
import { CookieJar } from 'tough-cookie';
import type { Exit } from './exit-pool.ts';

/** What a request asks for: a page a browser navigates to, or an API answer a page script fetches. */
export type RequestKind = 'html' | 'json';

let generator: HeaderGenerator | null = null;

/** The headers a browser context is told to send beside its user agent. */
const CONTEXT_HEADERS = ['accept-language', 'sec-ch-ua', 'sec-ch-ua-mobile', 'sec-ch-ua-platform'] as const;

/**
 * One browser's headers for a navigation, lower-case. Chrome on a desktop, as most visitors of a
 * ticketing site; `zstd` is dropped from accept-encoding because Node 20's zlib cannot decode it.
 */
export function browserHeaderSet(): Record<string, string> {
  // Built once per process (about 20 ms: it loads the fingerprint network), then ~0.1 ms a set.
  generator ??= new HeaderGenerator({
    browsers: [{ name: 'chrome', minVersion: 120 }],
    devices: ['desktop'],
    operatingSystems: ['windows', 'macos', 'linux'],
    locales: ['en-US', 'en'],
  });
  let out: Record<string, string> = {};
  // About 1 set in 250 lacks Chrome's client hints; a browser would then send its own, which
  // would not match the user agent. Such a set is drawn again.
  for (let draw = 0; draw < 10 && out['sec-ch-ua'] === undefined; draw++) {
    out = {};
    for (const [name, value] of Object.entries(generator.getHeaders())) out[name.toLowerCase()] = value;
  }
  out['accept-encoding'] = 'gzip, deflate, br';
  return out;
}

/** The headers a page script's fetch() sends, from the same browser as `navigation`. */
function apiHeaders(navigation: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(navigation)) {
    if (name === 'accept' || name === 'upgrade-insecure-requests' || name.startsWith('sec-fetch-')) continue;
    out[name] = value;
  }
  out.accept = 'application/json, text/plain, */*';
  out['sec-fetch-site'] = 'same-origin';
  out['sec-fetch-mode'] = 'cors';
  out['sec-fetch-dest'] = 'empty';
  return out;
}

export class ScrapeSession {
  readonly jar = new CookieJar();
  /** Requests sent with it. */
  requests = 0;
  /** Ended: blocked, or aged out. A request in flight may still finish with it. */
  retired = false;
  private readonly byKind: Record<RequestKind, Readonly<Record<string, string>>>;
  private hasCookies = false;

  constructor(
    /** e.g. `pf_03 via http://127.0.0.2:8000 #4` (no credentials). */
    readonly id: string,
    readonly exit: Exit,
    navigation: Readonly<Record<string, string>>,
    readonly createdAt: number,
  ) {
    this.byKind = { html: navigation, json: apiHeaders(navigation) };
  }

  /** The header set of the session (its user agent, client hints, language). */
  get headers(): Readonly<Record<string, string>> {
    return this.byKind.html;
  }

  /**
   * What a browser made as this session's client sends on every request beside its user agent
   * (language and client hints): browser-pages.ts gives them to the page's context, and pf_01's
   * browser-made sessions send them with their polls.
   */
  contextHeaders(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const name of CONTEXT_HEADERS) {
      const value = this.byKind.html[name];
      if (value !== undefined) out[name] = value;
    }
    return out;
  }

  /**
   * The headers of one request of `kind` to `url`, cookies included; `extra` (an adapter's own
   * headers, such as a content type or pf_01's browser-made session) goes on top.
   */
  requestHeaders(kind: RequestKind, url: string, extra?: Readonly<Record<string, string>>): Record<string, string> {
    const headers = { ...this.byKind[kind], ...extra };
    if (this.hasCookies && extra?.cookie === undefined) {
      const cookie = this.jar.getCookieStringSync(url);
      if (cookie) headers.cookie = cookie;
    }
    return headers;
  }

  /** Counts one request sent with the session (and through its exit). */
  sent(): void {
    this.requests++;
    this.exit.requests++;
  }

  /** Keeps the cookies an answer from `url` set. */
  received(url: string, setCookie: string | readonly string[] | undefined): void {
    if (setCookie === undefined) return;
    for (const cookie of typeof setCookie === 'string' ? [setCookie] : setCookie) {
      // A cookie the jar refuses (another domain, a bad date) is one a browser would drop too.
      if (this.jar.setCookieSync(cookie, url, { ignoreError: true })) this.hasCookies = true;
    }
  }
}
