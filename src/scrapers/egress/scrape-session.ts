// A scrape session (issue 27): what one client of a platform looks like from the platform's side,
// kept for the session's life: the address it comes from (its exit: a proxy, or this machine), a
// cookie jar, and one browser identity (chrome-identity.ts: Chrome 143's headers, of one system and
// language, the browser wreq-js's profile speaks on the wire). Every request of a session sends its
// headers and cookies and leaves through its exit; no request mixes two sessions. A session ends on
// a block, or ages out after SCRAPE_SESSION_MAX_REQUESTS requests or SCRAPE_SESSION_MAX_AGE_MS
// (exit-pool.ts). A request made without a session goes out as its platform's default client
// (http-fetcher.ts), a ClientIdentity of its own: headers and a jar, no exit.
import { CookieJar } from 'tough-cookie';
import { untilAborted } from '../../runtime/until-aborted.ts';
import { chromeHeaderSet } from './chrome-identity.ts';
import type { Exit } from './exit-pool.ts';

/** What a request asks for: a page a browser navigates to, or an API answer a page script fetches. */
export type RequestKind = 'html' | 'json';

/** The headers a browser context is told to send beside its user agent. */
const CONTEXT_HEADERS = ['accept-language', 'sec-ch-ua', 'sec-ch-ua-mobile', 'sec-ch-ua-platform'] as const;

/** One browser's headers for a navigation, lower-case: a Chrome 143 identity (chrome-identity.ts). */
export function browserHeaderSet(): Record<string, string> {
  return chromeHeaderSet();
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
  // A page script's fetch() is not the navigation's top priority (Chrome: u=1, i).
  if (out.priority !== undefined) out.priority = 'u=1, i';
  return out;
}

/** `a=1; b=2` as name/value pairs, in order; a pair without `=` is a value with an empty name, as browsers read it. */
function cookiePairs(header: string): [string, string][] {
  const out: [string, string][] = [];
  for (const part of header.split(';')) {
    const pair = part.trim();
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    out.push(eq < 0 ? ['', pair] : [pair.slice(0, eq).trim(), pair.slice(eq + 1).trim()]);
  }
  return out;
}

/**
 * Where a site's first answer sets the cookies its other pages need: the origin and the path's
 * first segment (a site's cookies are set for its root or for a section of it, `Path=/pf_03` on the
 * simulator where every site shares one host).
 */
function scopeOf(url: URL): string {
  const slash = url.pathname.indexOf('/', 1);
  return url.origin + (slash < 0 ? url.pathname : url.pathname.slice(0, slash));
}

/** Scopes an identity remembers having been answered in, at most (a site has a handful). */
const MAX_ANSWERED_SCOPES = 64;

/** The longest a site's first request holds the identity's others to that site back. */
export const FIRST_CONTACT_HOLD_MS = 2_000;

/** Says how the first request in a scope ended: `answered` lets the others go. */
export type FirstContact = (answered: boolean) => void;
const NOT_FIRST: FirstContact = () => {};

/**
 * What a client looks like to a platform, beside where it comes from: one browser's header set and
 * a cookie jar that keeps what every answer sets. A ScrapeSession is one (with its exit); a request
 * without a session goes out as its platform's default one (http-fetcher.ts).
 */
export class ClientIdentity {
  readonly jar = new CookieJar();
  private readonly byKind: Record<RequestKind, Readonly<Record<string, string>>>;
  private hasCookies = false;
  /** Scopes (scopeOf) this identity has had an answer from: its requests there go out at once. */
  private readonly answered = new Set<string>();
  /** The one request out in a scope not answered yet, which the others there wait for. */
  private readonly opening = new Map<string, Promise<void>>();

  constructor(navigation: Readonly<Record<string, string>>) {
    this.byKind = { html: navigation, json: apiHeaders(navigation) };
  }

  /** The header set of the identity (its user agent, client hints, language). */
  get headers(): Readonly<Record<string, string>> {
    return this.byKind.html;
  }

  /**
   * What a browser made as this client sends on every request beside its user agent (language and
   * client hints): browser-pages.ts gives them to the page's context, and pf_01's browser-made
   * sessions send them with their polls.
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
   * The headers of one request of `kind` to `url` (lower-case names), cookies included; `extra`
   * (an adapter's own headers, such as a content type or pf_01's browser-made session) goes on top.
   * A cookie `extra` names that the jar holds too is sent with the jar's value: the jar has what the
   * platform set last (a cookie it rotates), the caller's copy may be older.
   */
  requestHeaders(kind: RequestKind, url: string, extra?: Readonly<Record<string, string>>): Record<string, string> {
    const headers = { ...this.byKind[kind] };
    if (extra) for (const [name, value] of Object.entries(extra)) headers[name.toLowerCase()] = value;
    if (!this.hasCookies) return headers;
    const fromJar = this.jar.getCookieStringSync(url);
    if (!fromJar) return headers;
    const given = headers.cookie;
    if (given === undefined || given.trim() === '') {
      headers.cookie = fromJar;
      return headers;
    }
    const jarPairs = cookiePairs(fromJar);
    const inJar = new Set(jarPairs.map(([name]) => name));
    const kept = cookiePairs(given).filter(([name]) => !inJar.has(name));
    headers.cookie = [...kept, ...jarPairs].map(([name, value]) => (name === '' ? value : `${name}=${value}`)).join('; ');
    return headers;
  }

  /**
   * Waits, until `signal` aborts, while another request of this identity is the first in `url`'s
   * scope; then returns at once if the scope has answered, or makes this request its first. A
   * browser loads a site's page before the requests that page makes, so they carry the cookies its
   * answer set; a client that sends dozens at once with an empty jar (a worker just started, 64
   * polls due) gets a bot cookie issued to each, and a wall that bounds the cookies it gives an
   * address refuses the rest (cookie_missing: 56 refusals in one bench:monitors run on pf_03, all
   * at the first polls after the worker's restart). The first request's end must be told, answered
   * or not, through the function returned (a failed one lets the next waiting request be the
   * first); one still out after FIRST_CONTACT_HOLD_MS lets the next be a first beside it.
   */
  async firstContact(url: URL, signal: AbortSignal): Promise<FirstContact> {
    const scope = scopeOf(url);
    for (;;) {
      if (this.answered.has(scope)) return NOT_FIRST;
      const opening = this.opening.get(scope);
      if (!opening) break;
      await untilAborted(opening, signal, () => signal.reason);
    }
    let open!: () => void;
    const opening = new Promise<void>((resolve) => {
      open = resolve;
    });
    const release = () => {
      if (this.opening.get(scope) === opening) this.opening.delete(scope);
      open();
    };
    this.opening.set(scope, opening);
    // A first request the platform is slow to answer (one slow page) holds the others no longer
    // than this: then the next waiting one is the first as well.
    const timer = setTimeout(release, FIRST_CONTACT_HOLD_MS);
    timer.unref();
    return (answered) => {
      clearTimeout(timer);
      if (answered) {
        if (this.answered.size >= MAX_ANSWERED_SCOPES) this.answered.delete(this.answered.values().next().value!);
        this.answered.add(scope);
      }
      release();
    };
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

export class ScrapeSession extends ClientIdentity {
  /** Requests sent with it. */
  requests = 0;
  /** Ended: blocked, or aged out. A request in flight may still finish with it. */
  retired = false;

  constructor(
    /** e.g. `pf_03 via http://127.0.0.2:8000 #4` (no credentials). */
    readonly id: string,
    readonly exit: Exit,
    navigation: Readonly<Record<string, string>>,
    readonly createdAt: number,
  ) {
    super(navigation);
  }

  /** Counts one request sent with the session (and through its exit). */
  sent(): void {
    this.requests++;
    this.exit.requests++;
  }
}
