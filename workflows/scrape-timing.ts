// How one scrape's time budget is spent. The whole request is bounded by SCRAPE_TIMEOUT_MS
// (spec 4.2: a scrape "can take up to 60 seconds"), and each attempt may use all the time that is
// left, so a platform that answers slowly but validly (25 s, 45 s) is answered rather than cut off
// by a per-attempt share. A failed attempt is retried only within what remains: the local
// activity's schedule-to-close bound is what is left of the request's limit, counted from the
// gateway's start of the request (a run that waited for a worker has less).
//
// The limit is enforced by the activity itself (activities/scrape.ts aborts its scrape at the
// deadline and fails it as `timeout`), not by waiting for Temporal to time the attempt out: a
// local activity's time-out reached the workflow up to 3 s late on a loaded machine, past the
// gateway's own wait, so the client got its 408 late.

/** Transient failures are retried with backoff; the attempt cap keeps a dead platform's 500 fast. */
export const SCRAPE_RETRY = {
  initialInterval: 250,
  backoffCoefficient: 2,
  maximumInterval: 4_000,
  maximumAttempts: 4,
} as const;

/**
 * The bound on one fetch where no request's limit governs it: a monitor's poll. Its scrape has
 * no client waiting, so a hung target gives its slot back after a third of the limit.
 */
export function pollAttemptTimeoutMs(limitMs: number): number {
  return Math.max(1_000, Math.round(limitMs / 3));
}

/**
 * The fetchers' own bound for on-demand scrapes: a backstop just past the whole limit, so it never
 * cuts an attempt short (which would turn it into a retry) before the deadline does.
 */
export function scrapeBackstopMs(limitMs: number): number {
  return limitMs + 1_000;
}

/**
 * When the current attempt must give up: the end of the request's schedule-to-close window,
 * a little early so the activity's own `timeout` reaches the workflow before Temporal's.
 */
export function attemptDeadlineMs(info: { scheduledTimestampMs: number; scheduleToCloseTimeoutMs: number }): number {
  return info.scheduledTimestampMs + info.scheduleToCloseTimeoutMs - DEADLINE_MARGIN_MS;
}

const DEADLINE_MARGIN_MS = 100;
