// How a platform's HTTP status becomes a scrape failure, in one place for the HTTP fetcher
// (http-fetcher.ts) and the browser (browser-pages.ts): 5xx is the platform's trouble (`upstream`, retried), 429 and
// 403 are the platform refusing us (`blocked`, with the wait its Retry-After asks for), anything
// else is a page for the adapter to read (a 404 may mean "no such event").
import { parseRetryAfter } from './retry-after.ts';
import { blockedFailure, isBlockedStatus, ScrapeFailure } from './types.ts';

/** The failure an answer with `status` means, or null when the adapter should read the page. */
export function failureForStatus(url: string, status: number, retryAfter: string | null | undefined, nowMs: number): ScrapeFailure | null {
  if (status >= 500) return new ScrapeFailure('upstream', `${url} answered ${status}`, { status });
  if (isBlockedStatus(status)) return blockedFailure(url, status, parseRetryAfter(retryAfter, nowMs));
  return null;
}

/** The `blocked` failure of an answer the platform's challenge-page rule matched (block-pages.ts). */
export function blockPageFailure(url: string, wall: string, retryAfter: string | null | undefined, nowMs: number): ScrapeFailure {
  return new ScrapeFailure('blocked', `${url} answered ${wall}`, { retryAfterMs: parseRetryAfter(retryAfter, nowMs), refusedByPlatform: true });
}
