// The event tracker's activities (workflows/track-event.ts). trackTick first asks the database
// whether the tracking goes on (src/market-data/tracking-lifecycle.ts): it may have ended (its
// event's date is past, it has had no date too long, no account tracks it), which is recorded
// and answered `ended`; or be paused (no account tracking it is served), answered `paused`
// without a scrape. Otherwise it scrapes one marketplace event page and applies it in one
// transaction (src/market-data/tracking-store.ts): at most once per tick, so a retried or re-run tick writes nothing twice (and one found applied
// already is not scraped again). recordTrackingFailure keeps the tracking record's status and
// last error. Scrape failures become ApplicationFailures typed by their kind, as on-demand
// scrapes' do: only transient ones are retried within a tick, and only `not_found` ends the
// tracking (the workflow records the others and tries the next tick). Their message, which
// becomes the record's last_error, is the customer's text (src/scrapers/failure-detail.ts); the
// log line says what really happened.
import { Context } from '@temporalio/activity';
import { scrapeActivityFailure } from './scrape.ts';
import type { Db } from '../db/connection.ts';
import type { Logger } from '../src/logger.ts';
import type { TrackableMarketplace } from '../src/market-data/tracking-ref.ts';
import { trackingGate, type TrackingDecision, type TrackingLimits } from '../src/market-data/tracking-lifecycle.ts';
import { applyTick, recordTickFailure, skippedTick, tickState, type ScrapedPage, type TickOutcome } from '../src/market-data/tracking-store.ts';
import { createMarketplaceScrapers, type MarketplaceScrapers } from '../src/scrapers/marketplaces/index.ts';
import { ScrapeFailure, type PageFetcher } from '../src/scrapers/types.ts';
import type { ExitPools } from '../src/scrapers/egress/exit-pool.ts';
import type { ProxyEndpoint } from '../src/scrapers/egress/proxy-urls.ts';

/** Well inside the workflow's heartbeat timeout (5 s); the SDK throttles what it sends anyway. */
const HEARTBEAT_EVERY_MS = 1_000;

export interface TickInput {
  marketplace: TrackableMarketplace;
  externalId: string;
  epoch: string;
  tick: number;
}

export interface TickResult {
  /**
   * `tracking`: the tick ran (scraped, or found applied already); `paused`: no account tracking
   * the event is served, nothing was scraped; `ended`: the tracking has ended (recorded), the
   * workflow completes. Absent in results recorded before it existed: `tracking`.
   */
  state?: 'tracking' | 'paused' | 'ended';
  applied: boolean;
  eventId: number | null;
  newSales: number;
  capturedAt: string;
  /** The worker's TRACK_INTERVAL_MS: the wait before the next tick. */
  intervalMs: number;
}

export interface TrackingActivities {
  trackTick(input: TickInput): Promise<TickResult>;
  recordTrackingFailure(input: { marketplace: TrackableMarketplace; externalId: string; message: string; final: boolean }): Promise<void>;
}

export interface TrackingActivityOptions {
  db: Db;
  log: Logger;
  /** Where each marketplace is scraped (MARKETPLACE_X_BASE_URL, or a test simulator's). */
  baseUrls: Record<'marketplace_a' | 'marketplace_b', string>;
  intervalMs: number;
  /** When trackings end (TRACKING_END_AFTER_EVENT_MS, TRACKING_UNDATED_MAX_MS). */
  limits: TrackingLimits;
  /** The worker's HTTP fetcher, shared with the platform scrapers (one concurrency bound). */
  http: PageFetcher;
  /** Where requests to the marketplaces leave from (SCRAPE_PROXY_URLS); none: direct. */
  exits?: ExitPools;
  /** Every configured proxy: none may be named in last_error (src/scrapers/failure-detail.ts). */
  proxies?: readonly ProxyEndpoint[];
}

async function scrape(scrapers: MarketplaceScrapers, marketplace: TrackableMarketplace, id: string, signal: AbortSignal): Promise<ScrapedPage> {
  return marketplace === 'marketplace_a'
    ? { marketplace, page: await scrapers.marketplaceA(id, { signal }) }
    : { marketplace, page: await scrapers.marketplaceB(id, { signal }) };
}

export function createTrackingActivities(opts: TrackingActivityOptions): TrackingActivities {
  const { db, log } = opts;
  const scrapers = createMarketplaceScrapers(opts.http, opts.baseUrls, opts.exits);
  type Outcome = TickOutcome & { capturedAt: Date; decision: TrackingDecision };
  const runTick = async (input: TickInput, fields: object, signal: AbortSignal): Promise<Outcome> => {
    // Whether the tracking goes on, asked before every scrape (a few ms): an account that stops
    // being served stops its trackings at their next tick, and starts them again the same way.
    const gate = await trackingGate(db, input, opts.limits);
    const before = tickState(gate.row ?? undefined, input);
    if (gate.decision.action !== 'scrape') return { ...skippedTick(before), capturedAt: new Date(), decision: gate.decision };
    // A retried tick (its first attempt applied it, then the worker died or the result was lost)
    // answers without scraping again; applyTick's locked claim still decides.
    if (before.applied) return { ...skippedTick(before), capturedAt: new Date(), decision: gate.decision };
    let scraped: ScrapedPage;
    try {
      scraped = await scrape(scrapers, input.marketplace, input.externalId, signal);
    } catch (err) {
      if (err instanceof ScrapeFailure) {
        log.warn({ ...fields, kind: err.kind, err: err.message }, 'tracking scrape failed');
        throw scrapeActivityFailure(err, input.marketplace, opts.proxies ?? []);
      }
      throw err;
    }
    const capturedAt = new Date();
    return { ...(await applyTick(db, { ...input, capturedAt }, scraped)), capturedAt, decision: gate.decision };
  };
  const activities: TrackingActivities = {
    async trackTick(input) {
      const ctx = Context.current();
      const fields = { marketplace: input.marketplace, event_id: input.externalId, tick: input.tick, attempt: ctx.info.attempt };
      const started = performance.now();
      // Heartbeats let Temporal see a dead worker within the heartbeat timeout and retry the
      // tick elsewhere, instead of waiting out the whole start-to-close timeout.
      ctx.heartbeat();
      const beat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
      try {
        const { decision, capturedAt, ...outcome } = await runTick(input, fields, ctx.cancellationSignal);
        const ms = Math.round(performance.now() - started);
        const result = { ...outcome, capturedAt: capturedAt.toISOString(), intervalMs: opts.intervalMs };
        if (decision.action === 'end') {
          if (decision.record) log.info({ ...fields, reason: decision.reason, ms }, 'tracking ended');
          return { ...result, state: 'ended' };
        }
        if (decision.action === 'pause') {
          log.debug({ ...fields, ms }, 'tracking paused: no account tracking it is served');
          return { ...result, state: 'paused' };
        }
        log.info({ ...fields, ...outcome, ms }, outcome.applied ? 'tracked event scraped' : 'tracking tick already applied');
        return { ...result, state: 'tracking' };
      } finally {
        clearInterval(beat);
      }
    },

    async recordTrackingFailure(input) {
      await recordTickFailure(db, { ...input, at: new Date() });
      if (input.final) log.warn({ marketplace: input.marketplace, event_id: input.externalId, reason: input.message }, 'tracking ended');
    },
  };
  return activities;
}
