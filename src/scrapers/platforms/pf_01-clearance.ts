// pf_01's clearances (issue 23): made once in the warm Chromium, then used by plain HTTP polls of
// the two data arms until they expire or are refused. pf_01's data endpoints refuse a client
// without the token its page script obtains by answering a JavaScript challenge, bound to a cookie
// and to the user agent that asked (docs/simulator.md, "pf_01's protection"). We never answer the
// challenge ourselves, nor look for the token: Chromium runs the platform's own script on its
// front page, whose script then asks one of the platform's data endpoints with it, as the home
// page does. We record that request as the browser sent it (issue 37: Playwright's response
// events, nothing altered), and the clearance is exactly its headers (the user agent, client hints,
// language and whatever carries the token: a header, a cookie) and the context's cookies, which
// every poll then sends. So a platform that moves its token to another header or into a cookie
// needs no change here. The expiry is the one the token endpoint's answer gives (`expires_at`).
//
// With proxies (issue 27) a clearance is made through the exit its polls leave from, as the client
// that exit's scrape session is (browser-pages.ts): the platform then sees the front page, the
// challenge and the polls come from one address and one browser. So there is one pool per exit,
// made when a poll first goes through it, each of BROWSER_SESSIONS clearances: an exit's polls are
// paced by its own budget, so the clearances it needs do not shrink as exits are added, and every
// exit in use needs at least one of its own anyway. Polls with no scrape session, or through a direct
// exit, share the one pool there was before. `pool`'s figures and close() cover every exit's.
import { errors, type Page, type Request, type Response } from 'playwright-core';
import { blockPageFailure, failureForStatus } from '../answer-status.ts';
import { cloudflareChallenge } from '../block-pages.ts';
import type { ScrapeSession } from '../egress/scrape-session.ts';
import { createClearancePool } from '../clearance-pool.ts';
import { ScrapeFailure, type ClearanceLease, type ClearancePool, type ClearancePoolStats, type PageFetcher, type PageOpener } from '../types.ts';

export interface Pf01Clearance {
  /**
   * The headers of the page's own data request, in the order the browser sent them, names in
   * lower case; without the cookie (below) and what the connection itself carries (host, the
   * content codings the client decodes).
   */
  headers: [name: string, value: string][];
  /** The Cookie header: the browser context's cookies for the data endpoints once the page had loaded. */
  cookie: string;
  /** When the platform said the token ends (epoch ms), or null if it did not say. */
  expiresAt: number | null;
}

/** A clearance of this module's making: what pf_01's adapter checks a pool's clearance is (types.ts knows no platform's). */
export function isPf01Clearance(value: unknown): value is Pf01Clearance {
  if (typeof value !== 'object' || value === null) return false;
  const s = value as Partial<Pf01Clearance>;
  return Array.isArray(s.headers) && typeof s.cookie === 'string' && (s.expiresAt === null || typeof s.expiresAt === 'number');
}

/** pf_01 is behind Cloudflare's managed challenge (block-pages.ts), its front page included. */
export const PF01_BLOCK_PAGE = cloudflareChallenge;

/**
 * How long the front page may take to answer its challenge and ask its data once loaded: that
 * takes milliseconds, so a page that has not by then has changed, not slowed down.
 */
const CHALLENGE_WAIT_MS = 10_000;

/**
 * Headers of a recorded request that are not the page's to replay: the connection's own (HTTP/2
 * pseudo-headers, host, hop-by-hop), the cookie (taken from the context), and the content codings,
 * which the client that sends the poll decodes itself.
 */
const NOT_REPLAYED = new Set(['host', 'connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'transfer-encoding', 'upgrade', 'te', 'content-length', 'cookie', 'accept-encoding']);

/** The headers of one request made with `clearance`: the page's own, and its cookies. */
export function clearanceHeaders(clearance: Pf01Clearance): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of clearance.headers) out[name] = value;
  if (clearance.cookie) out.cookie = clearance.cookie;
  return out;
}

/** What the page's own requests showed while it loaded (watchFrontPage). */
interface Watched {
  /** The first request the page's script made to a data endpoint, once answered. */
  data: Promise<{ request: Request; status: number }>;
  /** The token endpoint's status, once it answered. */
  tokenStatus: number | null;
  /** The expiry the token endpoint's answer gave (epoch ms), or null. */
  expiresAt: Promise<number | null>;
}

/** The expiry in the token endpoint's answer (`{"token", "expires_at"}`), or null. */
async function expiryOf(response: Response): Promise<number | null> {
  try {
    const body: unknown = await response.json();
    const at = typeof body === 'object' && body !== null ? (body as { expires_at?: unknown }).expires_at : undefined;
    const ms = typeof at === 'string' ? Date.parse(at) : NaN;
    return Number.isFinite(ms) ? ms : null;
  } catch {
    return null;
  }
}

/**
 * Listens to the front page's answers, before it navigates: the data endpoints are those below
 * `${baseUrl}/api/` that the page's script asks (fetch or XHR GETs), the token endpoint is
 * `api/session` (the platform's word). Only observed: no request is held, changed or answered here.
 */
function watchFrontPage(baseUrl: string): { watched: Watched; watch: (page: Page) => () => void } {
  const api = `${baseUrl}/api/`;
  const tokenUrl = `${api}session`;
  let answered!: (value: { request: Request; status: number }) => void;
  let expiry!: (value: Promise<number | null>) => void;
  const watched: Watched = { data: new Promise((resolve) => (answered = resolve)), tokenStatus: null, expiresAt: new Promise((resolve) => (expiry = resolve)) };
  const onResponse = (response: Response) => {
    const request = response.request();
    const url = request.url().split(/[?#]/)[0]!;
    if (url === tokenUrl && request.method() === 'POST') {
      watched.tokenStatus = response.status();
      expiry(response.ok() ? expiryOf(response) : Promise.resolve(null));
    } else if (url.startsWith(api) && request.method() === 'GET' && (request.resourceType() === 'fetch' || request.resourceType() === 'xhr')) {
      answered({ request, status: response.status() });
    }
  };
  return {
    watched,
    watch: (page) => {
      page.on('response', onResponse);
      return () => {
        page.off('response', onResponse);
        expiry(Promise.resolve(null));
      };
    },
  };
}

/** Runs in the page; no named inner functions (tsx's keepNames helper does not exist there). */
function navigationStatus(): number {
  const entry = performance.getEntriesByType('navigation')[0] as (PerformanceNavigationTiming & { responseStatus?: number }) | undefined;
  return entry?.responseStatus ?? 0;
}

/** The clearance a loaded front page obtained, or a ScrapeFailure saying why there is none. */
async function captureClearance(page: Page, frontUrl: string, waitMs: number, watched: Watched): Promise<Pf01Clearance> {
  const status = await page.evaluate(navigationStatus);
  if (status === 404 || status === 410) throw new ScrapeFailure('malformed', `pf_01: the front page (${frontUrl}) answered ${status}: its challenge page has moved`);
  if (status >= 400) throw new ScrapeFailure('upstream', `pf_01: the front page answered ${status}`);
  let timer: NodeJS.Timeout | undefined;
  const data = await Promise.race([watched.data, new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), waitMs)))]).finally(() => clearTimeout(timer));
  if (!data) {
    if (watched.tokenStatus !== null && watched.tokenStatus >= 400) {
      throw new ScrapeFailure('upstream', `pf_01: the platform did not accept the challenge's answer (its token endpoint answered ${watched.tokenStatus})`);
    }
    throw new ScrapeFailure('malformed', `pf_01: the front page asked none of its data endpoints within ${waitMs / 1000} s: the challenge page may have changed`);
  }
  if (data.status >= 400) throw new ScrapeFailure('upstream', `pf_01: the platform refused the front page's own data request (${data.request.url().split('?')[0]} answered ${data.status})`);
  const headers: [string, string][] = [];
  for (const { name, value } of await data.request.headersArray()) {
    const lower = name.toLowerCase();
    if (!lower.startsWith(':') && !NOT_REPLAYED.has(lower)) headers.push([lower, value]);
  }
  if (!headers.some(([name]) => name === 'user-agent')) throw new ScrapeFailure('upstream', 'pf_01: the browser did not say which headers its data request carried');
  const cookies = await page.context().cookies(data.request.url());
  if (cookies.length === 0) throw new ScrapeFailure('malformed', 'pf_01: the challenge page set no cookie: the challenge page may have changed');
  return { headers, cookie: cookies.map((c) => `${c.name}=${c.value}`).join('; '), expiresAt: await watched.expiresAt };
}

/**
 * A clearance obtained in `page`, a page of a visit already under way (the scrape's browser
 * context: its exit, its identity), exactly as a pool makes one: the front page loaded in it, and
 * the platform's own script answering its challenge and asking its data with the token. For what
 * the page visited cannot ask itself: the data arms of an event page that answered 404, which
 * carries no challenge (pf_01.ts, issue 38). The front page's blocks and 5xx are thrown as a
 * visit's are (browser-pages.ts); a front page that gives no session, as captureClearance says.
 */
export async function clearanceInPage(page: Page, baseUrl: string, waitMs: number = CHALLENGE_WAIT_MS): Promise<Pf01Clearance> {
  const frontUrl = `${baseUrl}/`;
  const { watched, watch } = watchFrontPage(baseUrl);
  const unwatch = watch(page);
  try {
    let response: Response | null;
    try {
      response = await page.goto(frontUrl, { waitUntil: 'domcontentloaded' });
    } catch (err) {
      // A time-out is the visit's (browser-pages.ts says which step); anything else, the platform's.
      if (err instanceof errors.TimeoutError) throw err;
      throw new ScrapeFailure('upstream', `pf_01: could not load the front page: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}`, { cause: err });
    }
    if (response) {
      const refusal = failureForStatus(frontUrl, response.status(), await response.headerValue('retry-after'), Date.now());
      if (refusal) throw refusal;
      const headers = await response.allHeaders();
      const body = await response.text().catch(() => page.content());
      const wall = PF01_BLOCK_PAGE({ status: response.status(), headers, body });
      if (wall) throw blockPageFailure(frontUrl, wall, headers['retry-after'], Date.now());
    }
    return await captureClearance(page, frontUrl, waitMs, watched);
  } finally {
    unwatch();
  }
}

/** A pool's figures, with each exit's when there are proxies (`npm run ops -- scrapers:sessions`). */
export type Pf01ClearanceStats = ClearancePoolStats & { exits?: Record<string, ClearancePoolStats> };

export interface Pf01Clearances {
  /**
   * The clearances of polls made without a proxy (acquire, ready, refused); its stats() sum every
   * exit's pool, listed by exit under `exits`, and its close() closes them all.
   */
  pool: Omit<ClearancePool<Pf01Clearance>, 'stats'> & { stats(): Pf01ClearanceStats };
  /** The pool a poll made with scrape session `session` uses: its exit's if that is a proxy, else the plain one. */
  poolFor(session: ScrapeSession | undefined): ClearancePool<Pf01Clearance>;
  /** The lean fetcher the clearances' requests go through; the adapter gets it bound to its scrape (scrape-via.ts). */
  http: PageFetcher;
}

export interface Pf01ClearancesOptions {
  browser: PageOpener;
  http: PageFetcher;
  /** pf_01's base URL (no trailing slash). */
  baseUrl: string;
  /** Clearances kept at once, per exit (BROWSER_SESSIONS). */
  size: number;
  /** Upper bound of making one clearance, page load included. */
  makeTimeoutMs: number;
  /** How long a loaded front page may take over its challenge (default CHALLENGE_WAIT_MS); below the page visit's own limit. */
  challengeWaitMs?: number;
}

/** Figures of several pools as one: counts summed, the latest reason none could be made. */
function sumStats(all: ClearancePoolStats[]): ClearancePoolStats {
  const sum: ClearancePoolStats = { size: 0, ready: 0, made: 0, renewed: 0, refused: 0, failed: 0, polls: 0, lastError: null };
  for (const s of all) {
    sum.size += s.size;
    sum.ready += s.ready;
    sum.made += s.made;
    sum.renewed += s.renewed;
    sum.refused += s.refused;
    sum.failed += s.failed;
    sum.polls += s.polls;
    if (s.lastError && (!sum.lastError || s.lastError.at > sum.lastError.at)) sum.lastError = s.lastError;
  }
  return sum;
}

export function createPf01Clearances(options: Pf01ClearancesOptions): Pf01Clearances {
  const frontUrl = `${options.baseUrl}/`;
  const waitMs = options.challengeWaitMs ?? CHALLENGE_WAIT_MS;
  /** Made through the exit `scrape()` names: the scrape session last seen of it, when its pool needs one. */
  const poolOf = (scrape: () => ScrapeSession | undefined) =>
    createClearancePool<Pf01Clearance>({
      size: options.size,
      makeTimeoutMs: options.makeTimeoutMs,
      expiresAt: (s) => s.expiresAt,
      make: (signal) => {
        const { watched, watch } = watchFrontPage(options.baseUrl);
        return options.browser.withPage(frontUrl, (page) => captureClearance(page, frontUrl, waitMs, watched), { signal, session: scrape(), blockPage: PF01_BLOCK_PAGE, watch, isolated: true });
      },
    });
  const plain = poolOf(() => undefined);
  let plainUsed = false;
  /** By proxy URL (in memory only: it holds the credentials), so one address has one pool. */
  const byProxy = new Map<string, { label: string; pool: ClearancePool<Pf01Clearance>; latest: ScrapeSession }>();

  let closed = false;

  const poolFor = (session: ScrapeSession | undefined): ClearancePool<Pf01Clearance> => {
    const proxy = session?.exit.proxy;
    // Once closed, no pool is made that nobody would close: the plain one answers that it is closed.
    if (!session || !proxy || closed) {
      plainUsed = true;
      return plain;
    }
    let entry = byProxy.get(proxy.url);
    if (!entry) {
      const made: { label: string; pool: ClearancePool<Pf01Clearance>; latest: ScrapeSession } = { label: proxy.label, pool: null!, latest: session };
      made.pool = poolOf(() => made.latest);
      byProxy.set(proxy.url, made);
      entry = made;
    }
    // A new scrape session's header set: the clearances made from now on are that browser's.
    entry.latest = session;
    return entry.pool;
  };

  const stats = (): Pf01ClearanceStats => {
    if (byProxy.size === 0) return plain.stats();
    const exits: Record<string, ClearancePoolStats> = {};
    if (plainUsed) exits.direct = plain.stats();
    for (const { label, pool } of byProxy.values()) exits[label] = pool.stats();
    return { ...sumStats(Object.values(exits)), exits };
  };

  const pool: Pf01Clearances['pool'] = {
    acquire: (signal) => poolFor(undefined).acquire(signal),
    ready: () => poolFor(undefined).ready(),
    refused: (lease: ClearanceLease<Pf01Clearance>) => plain.refused(lease),
    now: plain.now,
    stats,
    close: async () => {
      closed = true;
      await Promise.all([plain.close(), ...[...byProxy.values()].map((e) => e.pool.close())]);
    },
  };
  return { pool, poolFor, http: options.http };
}
