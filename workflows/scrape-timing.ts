// How one scrape's time budget is split: the whole request is bounded by SCRAPE_TIMEOUT_MS
// (spec 4.2: 60 s) and each attempt gets a third of it, so a hung page still leaves room for
// retries and the client's answer never arrives later than the limit.
export function attemptTimeoutMs(totalMs: number): number {
  return Math.max(1_000, Math.round(totalMs / 3));
}

/** Transient failures are retried with backoff; the attempt cap keeps a dead platform's 500 fast. */
export const SCRAPE_RETRY = {
  initialInterval: 250,
  backoffCoefficient: 2,
  maximumInterval: 4_000,
  maximumAttempts: 4,
} as const;
