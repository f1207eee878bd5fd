// How one scrape's time budget is spent: the whole request is bounded by SCRAPE_TIMEOUT_MS
// (spec 4.2: a scrape "can take up to 60 seconds"), and each attempt may use all the time that
// is left, so a platform that answers slowly but validly (25 s, 45 s) is answered rather than
// cut off by a per-attempt share. A failed attempt is retried only within what remains: the
// local activity's schedule-to-close bound is the request's limit, and an attempt's own bound
// is the time left in it.

/** Transient failures are retried with backoff; the attempt cap keeps a dead platform's 500 fast. */
export const SCRAPE_RETRY = {
  initialInterval: 250,
  backoffCoefficient: 2,
  maximumInterval: 4_000,
  maximumAttempts: 4,
} as const;
