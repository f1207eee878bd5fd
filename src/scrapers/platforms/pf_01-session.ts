// pf_01's sessions (issue 23): made once in the warm Chromium, then used by plain HTTP polls of
// the two data arms until they expire or are refused. pf_01's data arms refuse a client without
// the token its page script obtains by answering a JavaScript challenge, bound to a cookie and
// to the user agent that asked (docs/simulator.md, "pf_01's protection"). We never answer the
// challenge ourselves: Chromium runs the platform's own script on its front page, and we copy
// out what it leaves behind: the token and its expiry from sessionStorage, the cookies, and the
// browser's user agent, which every request made with the session then sends.
//
// With proxies (issue 27) a session is made through the exit its polls leave from, as the client
// that exit's scrape session is (browser-pages.ts): the platform then sees the front page, the
// challenge and the polls come from one address and one browser. So there is one pool per exit,
// made when a poll first goes through it, each of BROWSER_SESSIONS sessions: an exit's polls are
// paced by its own budget, so the sessions it needs do not shrink as exits are added, and every
// exit in use needs at least one of its own anyway. Polls with no session, or through a direct
// exit, share the one pool there was before. `pool`'s figures and close() cover every exit's.
import type { Page } from 'playwright-core';
import { cloudflareChallenge } from '../block-pages.ts';
import type { ScrapeSession } from '../egress/scrape-session.ts';
import { createSessionPool, type SessionLease, type SessionPool, type SessionPoolStats } from '../session-pool.ts';
import { ScrapeFailure, type BrowserSession, type PageFetcher } from '../types.ts';

export interface Pf01Session {
  token: string;
  /** The Cookie header the browser would send to the platform. */
  cookie: string;
  userAgent: string;
  /**
   * The rest of the browser's identity it was made as (language, client hints: a scrape
   * session's, through a proxy), sent with it so its requests stay that browser's when the
   * exit's scrape session has moved on to another header set; empty for a plain browser.
   */
  client: Readonly<Record<string, string>>;
  /** When the platform said the token ends (epoch ms), or null if it did not say. */
  expiresAt: number | null;
}

/** pf_01 is behind Cloudflare's managed challenge (block-pages.ts), its front page included. */
export const PF01_BLOCK_PAGE = cloudflareChallenge;

/** Where the page script keeps its session, and the header the data arms want it in. */
const STORAGE_KEY = 'pf01.session';
export const TOKEN_HEADER = 'x-pf01-token';
/**
 * How long the front page may take to answer its challenge once loaded: a challenge takes
 * milliseconds, so a page that has not finished by then has changed, not slowed down.
 */
const CHALLENGE_WAIT_MS = 10_000;

/** The headers of one request made with `session`. */
export function sessionHeaders(session: Pf01Session): Record<string, string> {
  return { ...session.client, cookie: session.cookie, 'user-agent': session.userAgent, [TOKEN_HEADER]: session.token };
}

/** The headers beside the user agent a browser made as `scrape`'s client sends (browser-pages.ts gives it the same). */
function clientHeaders(scrape: ScrapeSession | undefined): Record<string, string> {
  return scrape?.exit.proxy ? scrape.contextHeaders() : {};
}

/** Runs in the page; no named inner functions (tsx's keepNames helper does not exist there). */
function readSessionState(key: string): { state: string | null; stored: string | null; userAgent: string; status: number } {
  const entry = performance.getEntriesByType('navigation')[0] as (PerformanceNavigationTiming & { responseStatus?: number }) | undefined;
  return { state: document.body?.getAttribute('data-session') ?? null, stored: sessionStorage.getItem(key), userAgent: navigator.userAgent, status: entry?.responseStatus ?? 0 };
}

function parseStored(text: string | null): { token?: unknown; expires_at?: unknown } | null {
  if (text === null) return null;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null ? (value as { token?: unknown; expires_at?: unknown }) : null;
  } catch {
    return null;
  }
}

/** The session a loaded front page obtained, or a ScrapeFailure saying why there is none. */
async function captureSession(page: Page, frontUrl: string, waitMs: number, client: Record<string, string>): Promise<Pf01Session> {
  const first = await page.evaluate(readSessionState, STORAGE_KEY);
  if (first.status === 404 || first.status === 410) throw new ScrapeFailure('malformed', `pf_01: the front page (${frontUrl}) answered ${first.status}: its challenge page has moved`);
  if (first.status >= 400) throw new ScrapeFailure('upstream', `pf_01: the front page answered ${first.status}`);
  try {
    await page.waitForFunction(() => document.body?.getAttribute('data-session') !== null, undefined, { timeout: waitMs });
  } catch {
    throw new ScrapeFailure('malformed', `pf_01: the front page did not finish its challenge within ${waitMs / 1000} s (no body[data-session]): the challenge page may have changed`);
  }
  const after = await page.evaluate(readSessionState, STORAGE_KEY);
  if (after.state !== 'ok') throw new ScrapeFailure('upstream', `pf_01: the platform did not accept the challenge's answer (data-session is ${JSON.stringify(after.state)})`);
  const stored = parseStored(after.stored);
  if (!stored || typeof stored.token !== 'string' || stored.token.length === 0) {
    throw new ScrapeFailure('malformed', `pf_01: the challenge left no session token in sessionStorage['${STORAGE_KEY}']: the challenge page may have changed`);
  }
  const expiresAt = typeof stored.expires_at === 'string' ? Date.parse(stored.expires_at) : NaN;
  const cookies = await page.context().cookies(frontUrl);
  if (cookies.length === 0) throw new ScrapeFailure('malformed', 'pf_01: the challenge page set no cookie: the challenge page may have changed');
  return {
    token: stored.token,
    cookie: cookies.map((c) => `${c.name}=${c.value}`).join('; '),
    userAgent: after.userAgent,
    client,
    expiresAt: Number.isFinite(expiresAt) ? expiresAt : null,
  };
}

/** A pool's figures, with each exit's when there are proxies (`npm run ops -- scrapers:sessions`). */
export type Pf01SessionStats = SessionPoolStats & { exits?: Record<string, SessionPoolStats> };

export interface Pf01Sessions {
  /**
   * The sessions of polls made without a proxy (acquire, ready, refused); its stats() sum every
   * exit's pool, listed by exit under `exits`, and its close() closes them all.
   */
  pool: Omit<SessionPool<Pf01Session>, 'stats'> & { stats(): Pf01SessionStats };
  /** The pool a poll made with `session` uses: its exit's if that is a proxy, else the plain one. */
  poolFor(session: ScrapeSession | undefined): SessionPool<Pf01Session>;
  /** The lean fetcher the session's requests go through; the adapter gets it bound to its scrape (scrape-via.ts). */
  http: PageFetcher;
}

export interface Pf01SessionsOptions {
  browser: BrowserSession;
  http: PageFetcher;
  /** pf_01's base URL (no trailing slash). */
  baseUrl: string;
  /** Sessions kept at once (BROWSER_SESSIONS). */
  size: number;
  /** Upper bound of making one session, page load included. */
  makeTimeoutMs: number;
  /** How long a loaded front page may take over its challenge (default CHALLENGE_WAIT_MS); below the page visit's own limit. */
  challengeWaitMs?: number;
}

/** Figures of several pools as one: counts summed, the latest reason none could be made. */
function sumStats(all: SessionPoolStats[]): SessionPoolStats {
  const sum: SessionPoolStats = { size: 0, ready: 0, made: 0, renewed: 0, refused: 0, failed: 0, polls: 0, lastError: null };
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

export function createPf01Sessions(options: Pf01SessionsOptions): Pf01Sessions {
  const frontUrl = `${options.baseUrl}/`;
  const waitMs = options.challengeWaitMs ?? CHALLENGE_WAIT_MS;
  /** Made through the exit `scrape()` names: the scrape session last seen of it, when its pool needs one. */
  const poolOf = (scrape: () => ScrapeSession | undefined) =>
    createSessionPool<Pf01Session>({
      size: options.size,
      makeTimeoutMs: options.makeTimeoutMs,
      expiresAt: (s) => s.expiresAt,
      make: (signal) => {
        const session = scrape();
        return options.browser.withPage(frontUrl, (page) => captureSession(page, frontUrl, waitMs, clientHeaders(session)), { signal, session, blockPage: PF01_BLOCK_PAGE });
      },
    });
  const plain = poolOf(() => undefined);
  let plainUsed = false;
  /** By proxy URL (in memory only: it holds the credentials), so one address has one pool. */
  const byProxy = new Map<string, { label: string; pool: SessionPool<Pf01Session>; latest: ScrapeSession }>();

  let closed = false;

  const poolFor = (session: ScrapeSession | undefined): SessionPool<Pf01Session> => {
    const proxy = session?.exit.proxy;
    // Once closed, no pool is made that nobody would close: the plain one answers that it is closed.
    if (!session || !proxy || closed) {
      plainUsed = true;
      return plain;
    }
    let entry = byProxy.get(proxy.url);
    if (!entry) {
      const made: { label: string; pool: SessionPool<Pf01Session>; latest: ScrapeSession } = { label: proxy.label, pool: null!, latest: session };
      made.pool = poolOf(() => made.latest);
      byProxy.set(proxy.url, made);
      entry = made;
    }
    // A new session's header set: the sessions made from now on are that browser's.
    entry.latest = session;
    return entry.pool;
  };

  const stats = (): Pf01SessionStats => {
    if (byProxy.size === 0) return plain.stats();
    const exits: Record<string, SessionPoolStats> = {};
    if (plainUsed) exits.direct = plain.stats();
    for (const { label, pool } of byProxy.values()) exits[label] = pool.stats();
    return { ...sumStats(Object.values(exits)), exits };
  };

  const pool: Pf01Sessions['pool'] = {
    acquire: (signal) => poolFor(undefined).acquire(signal),
    ready: () => poolFor(undefined).ready(),
    refused: (lease: SessionLease<Pf01Session>) => plain.refused(lease),
    now: plain.now,
    stats,
    close: async () => {
      closed = true;
      await Promise.all([plain.close(), ...[...byProxy.values()].map((e) => e.pool.close())]);
    },
  };
  return { pool, poolFor, http: options.http };
}
