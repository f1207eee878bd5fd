// pf_01's sessions (issue 23): made once in the warm Chromium, then used by plain HTTP polls of
// the two data arms until they expire or are refused. pf_01's data arms refuse a client without
// the token its page script obtains by answering a JavaScript challenge, bound to a cookie and
// to the user agent that asked (docs/simulator.md, "pf_01's protection"). We never answer the
// challenge ourselves: Chromium runs the platform's own script on its front page, and we copy
// out what it leaves behind: the token and its expiry from sessionStorage, the cookies, and the
// browser's user agent, which every request made with the session then sends.
import type { Page } from 'playwright-core';
import { createSessionPool, type SessionPool } from '../session-pool.ts';
import { ScrapeFailure, type BrowserSession, type PageFetcher } from '../types.ts';

export interface Pf01Session {
  token: string;
  /** The Cookie header the browser would send to the platform. */
  cookie: string;
  userAgent: string;
  /** When the platform said the token ends (epoch ms), or null if it did not say. */
  expiresAt: number | null;
}

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
  return { cookie: session.cookie, 'user-agent': session.userAgent, [TOKEN_HEADER]: session.token };
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
async function captureSession(page: Page, frontUrl: string, waitMs: number): Promise<Pf01Session> {
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
    expiresAt: Number.isFinite(expiresAt) ? expiresAt : null,
  };
}

export interface Pf01Sessions {
  pool: SessionPool<Pf01Session>;
  /** The lean fetcher the session's requests go through. */
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

export function createPf01Sessions(options: Pf01SessionsOptions): Pf01Sessions {
  const frontUrl = `${options.baseUrl}/`;
  const pool = createSessionPool<Pf01Session>({
    size: options.size,
    makeTimeoutMs: options.makeTimeoutMs,
    expiresAt: (s) => s.expiresAt,
    make: (signal) => options.browser.withPage(frontUrl, (page) => captureSession(page, frontUrl, options.challengeWaitMs ?? CHALLENGE_WAIT_MS), { signal }),
  });
  return { pool, http: options.http };
}
