// scrapeEvent: one on-demand availability scrape (POST /events/scrape). The activity is retried
// with backoff for transient failures (network, 5xx, a crashed browser, a timed-out attempt);
// not-found, unsupported, malformed and blocked (the platform's 429/403) answers fail at once. The whole run is bounded by the
// request's limit: running past it fails with type `timeout` (the API's 408). Identical
// concurrent requests share one run through its workflow id (src/apis/live-availability).
import { ActivityFailure, ApplicationFailure, proxyLocalActivities, TimeoutFailure } from '@temporalio/workflow';
import type { ScrapeActivities } from '../activities/scrape.ts';
import type { EventRef } from '../src/platform/event-ref.ts';
import type { ScrapeResponse } from '../src/scrapers/response.ts';
import { SCRAPE_RETRY } from './scrape-timing.ts';

export interface ScrapeEventInput {
  ref: EventRef;
  /** The request's whole limit, retries included. */
  timeoutMs: number;
  /**
   * When that limit ends (epoch ms), counted from the request's start by the gateway: a run whose
   * first workflow task waited in a busy queue has only what is left. Absent in runs started
   * before it existed: the limit then counts from the workflow task.
   */
  deadlineMs?: number;
}

/** What is left of the request's limit now; never more than the limit (a clock ahead of ours). */
function timeLeftMs(input: ScrapeEventInput): number {
  if (input.deadlineMs === undefined) return input.timeoutMs;
  return Math.min(input.timeoutMs, input.deadlineMs - Date.now());
}

function timedOut(input: ScrapeEventInput): ApplicationFailure {
  return ApplicationFailure.create({
    type: 'timeout',
    message: `${input.ref.platform} took longer than ${Math.round(input.timeoutMs / 1000)} seconds`,
    nonRetryable: true,
  });
}

export async function scrapeEvent(input: ScrapeEventInput): Promise<ScrapeResponse> {
  // Date.now() in a workflow is the workflow task's time: deterministic on replay.
  const leftMs = timeLeftMs(input);
  if (leftMs < 1) throw timedOut(input);
  // A local activity: it runs on the worker that holds the workflow task, so a scrape costs
  // one workflow task instead of three task dispatches (measured: bench:scrape). Scrapes are
  // short and bounded, which is what local activities are for; their retries and time-outs
  // are the same policy as a regular activity's.
  const { scrapePlatform } = proxyLocalActivities<ScrapeActivities>({
    // Every attempt may take what is left of the request's limit; the activity enforces it
    // itself, Temporal's bounds are the backstop (scrape-timing.ts).
    scheduleToCloseTimeout: leftMs,
    startToCloseTimeout: leftMs,
    // Which failures are final is decided once, where they arise: the activity marks them
    // non-retryable (ScrapeFailure.retryable), so the policy here only shapes the backoff.
    retry: SCRAPE_RETRY,
  });
  try {
    return await scrapePlatform(input.ref);
  } catch (err) {
    if (err instanceof ActivityFailure) {
      const cause = err.cause;
      if (cause instanceof TimeoutFailure) throw timedOut(input);
      if (cause instanceof ApplicationFailure) {
        // The last attempt's failure, retyped as the run's own so callers read one level. Its
        // message is the customer's text; its cause (the ScrapeFailure, whose message names URLs
        // and proxies) is kept for operators (ops scrapes:failed), never shown to a caller.
        throw ApplicationFailure.create({ type: cause.type ?? 'internal', message: cause.message, nonRetryable: true, cause: cause.cause });
      }
    }
    throw err;
  }
}
