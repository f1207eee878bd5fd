// The scrape activity: runs one platform adapter for one event and returns the spec 2.5
// response. Failures become Temporal ApplicationFailures typed by ScrapeFailure kind and marked
// non-retryable unless transient; a crash (a bug, not the platform) is type `internal`, final.
// An attempt gives up at the request's deadline as type `timeout`, final: what remains of the
// request's limit is all it may use (workflows/scrape-timing.ts).
// scrapeActivityFailure is shared with the event tracker's activity (activities/tracking.ts).
// A failure's message is what the caller is told (the client's `{detail}`, the tracker's
// last_error): the customer's text (src/scrapers/failure-detail.ts), never the ScrapeFailure's own
// message, which names URLs, proxies and network errors and goes to the log line beside it.
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { EventRef } from '../src/platform/event-ref.ts';
import type { Scrapers } from '../src/scrapers/index.ts';
import { toScrapeResponse, type ScrapeResponse } from '../src/scrapers/response.ts';
import { ScrapeFailure } from '../src/scrapers/types.ts';
import type { Logger } from '../src/logger.ts';
import type { ProxyEndpoint } from '../src/scrapers/egress/proxy-urls.ts';
import { failureDetail } from '../src/scrapers/failure-detail.ts';
import { attemptDeadlineMs } from '../workflows/scrape-timing.ts';

export interface ScrapeActivities {
  scrapePlatform(ref: EventRef): Promise<ScrapeResponse>;
}

/**
 * A scrape failure of `source` (a platform or marketplace key) as an activity's failure: typed by
 * its kind, final unless transient, its message the customer's text. `proxies`: every configured
 * proxy (SCRAPE_PROXY_URLS), which that text is checked against. The ScrapeFailure rides along as
 * the cause, for the operators' view of the run (Temporal's history and UI), never for a caller.
 */
export function scrapeActivityFailure(err: ScrapeFailure, source: string, proxies: readonly ProxyEndpoint[]): ApplicationFailure {
  return ApplicationFailure.create({ type: err.kind, message: failureDetail(err, source, proxies), nonRetryable: !err.retryable, cause: err });
}

/** Scrapes `ref` inside the current activity, logging the outcome and typing any failure. */
async function scrapeInActivity(scrapers: Scrapers, ref: EventRef, log: Logger, proxies: readonly ProxyEndpoint[]): Promise<ScrapeResponse> {
  const ctx = Context.current();
  const started = performance.now();
  // The workflow id names the (platform, region, event) run every joined request shares; the
  // gateway logs it with each request id, so a request's scrape can be found from its logs.
  const run = { workflow_id: ctx.info.workflowExecution?.workflowId ?? null, run_id: ctx.info.workflowExecution?.runId ?? null };
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), Math.max(0, attemptDeadlineMs(ctx.info) - Date.now()));
  try {
    const data = await scrapers.scrape(ref, { signal: AbortSignal.any([ctx.cancellationSignal, deadline.signal]) });
    log.info({ ...run, platform: ref.platform, region: ref.region, attempt: ctx.info.attempt, ms: Math.round(performance.now() - started) }, 'scraped');
    return toScrapeResponse(ref, data, new Date());
  } catch (err) {
    const fields = { ...run, platform: ref.platform, region: ref.region, attempt: ctx.info.attempt, ms: Math.round(performance.now() - started) };
    if (deadline.signal.aborted) {
      log.warn({ ...fields, kind: 'timeout' }, 'scrape failed');
      // The workflow words the client's message (it knows the whole limit; this attempt, only what was left).
      throw ApplicationFailure.create({ type: 'timeout', message: `${ref.platform} reached the request's time limit`, nonRetryable: true });
    }
    if (err instanceof ScrapeFailure) {
      log.warn({ ...fields, kind: err.kind, err: err.message }, 'scrape failed');
      throw scrapeActivityFailure(err, ref.platform, proxies);
    }
    log.error({ ...fields, err }, 'scrape crashed');
    throw ApplicationFailure.create({ type: 'internal', message: 'unexpected error while scraping', nonRetryable: true, cause: err as Error });
  } finally {
    clearTimeout(timer);
  }
}

/** `proxies`: every configured proxy (SCRAPE_PROXY_URLS), kept out of what callers are told. */
export function createScrapeActivities(scrapers: Scrapers, log: Logger, proxies: readonly ProxyEndpoint[] = []): ScrapeActivities {
  return {
    scrapePlatform: (ref) => scrapeInActivity(scrapers, ref, log, proxies),
  };
}
