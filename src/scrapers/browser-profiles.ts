// What the warm browser keeps between the page visits of one client (browser-pages.ts): cookies,
// in profiles. A person browsing a site keeps the bot cookie the site's wall gave at the first
// page (Cloudflare's __cf_bm, Akamai's _abck, ...) and sends it, rotated as the wall says, with
// every later page. Visits that each start with no cookies are each a new visitor, given a new bot
// cookie, and a wall that bounds the cookies it gives one address refuses the rest (bench:alerts,
// 2026-12-06: pf_01's not-found checks loaded event pages every few seconds, 30 cookies were given
// to this machine within a minute and the next 5 pages were refused).
//
// A profile is one browser's cookie jar, used by one visit at a time: a visit takes an idle
// profile of its client (PageClient.key: this machine's Chromium, or a scrape session's proxy and
// browser), preferring one that has cookies for the site, or a new one when all are in use, and
// gives it back with what its context ended with.
// One visit at a time, because a site's session cookie is set by its page and a challenge is
// bound to it: pf_01 keeps one pending challenge per session cookie, so two pages loaded at once
// with one cookie spoil each other's (the page's data arms are refused). So a client has at most
// as many profiles as it has visits at once (the pages of the pool), and a wall sees that many
// visitors from it, not one per page. A visit that must start as a new browser (pf_01's
// clearances: each its own session cookie and token) takes no profile.
import type { Cookie } from 'playwright-core';
import { domainMatch, pathMatch } from 'tough-cookie';

/** Idle profiles kept, over every client; past it the least recently used are forgotten. */
export const MAX_PROFILES = 256;

/** One browser's cookies between visits. */
export class BrowserProfile {
  private cookies: Cookie[] = [];

  /** The kept cookies still alive at `now` (epoch ms): what a visit's context starts with. */
  current(now = Date.now()): Cookie[] {
    // Playwright's `expires` is in seconds; -1 is a session cookie, alive while the browser is.
    return this.cookies.filter((c) => c.expires === -1 || c.expires * 1000 > now);
  }

  /** Whether it holds a live cookie that a request to `url` would send (RFC 6265's domain and path match, as the HTTP jars'). */
  hasCookiesFor(url: URL, now = Date.now()): boolean {
    return this.current(now).some((c) => domainMatch(url.hostname, c.domain) === true && pathMatch(url.pathname, c.path));
  }

  /** Keeps what the visit's context holds now (it started with what was kept). */
  keep(cookies: Cookie[]): void {
    this.cookies = cookies;
  }
}

/** The idle profiles of one browser pool's clients. */
export class BrowserProfiles {
  /** By client, least recently given back first; each list newest last. The keys hold a proxy's credentials: in memory only. */
  private readonly idle = new Map<string, BrowserProfile[]>();
  private count = 0;

  constructor(private readonly max = MAX_PROFILES) {}

  /**
   * An idle profile of `client` for a visit to `url`: the last given back of those that have
   * cookies for it (the site then sees a visitor it knows), else the last given back, else a new
   * one. The visit's until it gives it back.
   */
  take(client: string, url: URL): BrowserProfile {
    const list = this.idle.get(client);
    if (!list) return new BrowserProfile();
    let i = list.length - 1;
    while (i >= 0 && !list[i]!.hasCookiesFor(url)) i--;
    if (i < 0) i = list.length - 1;
    const [profile] = list.splice(i, 1);
    this.count--;
    if (list.length === 0) this.idle.delete(client);
    return profile!;
  }

  /** Back to `client`'s idle profiles, for its next visit. */
  giveBack(client: string, profile: BrowserProfile): void {
    const list = this.idle.get(client) ?? [];
    // Re-inserted: the client becomes the most recently used.
    this.idle.delete(client);
    this.idle.set(client, list);
    list.push(profile);
    this.count++;
    while (this.count > this.max) {
      const [oldest, profiles] = this.idle.entries().next().value!;
      profiles.shift();
      this.count--;
      if (profiles.length === 0) this.idle.delete(oldest);
    }
  }

  /** Idle profiles kept now. */
  get size(): number {
    return this.count;
  }
}
