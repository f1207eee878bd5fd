// Starting the tracking of a marketplace event (POST /svc/data/events/add): one tracking record
// (tracked_events) and one trackEvent workflow per event, however often, however concurrently
// and by however many accounts it is added; each adding account gets a link to it
// (tracked_event_accounts, migration 027), and an account's live links are capped
// (TRACKING_MAX_EVENTS_PER_ACCOUNT). The record is inserted, the link written and the workflow
// started in one transaction: concurrent adds of one event meet on the record's unique key (the
// second waits for the first to commit, then finds the record), concurrent adds of one account
// meet on its account row (so the cap's count cannot be raced past), and a workflow that cannot
// be started rolls everything back, so the caller can simply retry. Every add also makes sure
// the workflow is running: it starts with conflict policy USE_EXISTING (the running tracking is
// kept) and reuse policy ALLOW_DUPLICATE, so a tracking that ended (`failed`, `ended`) or was
// terminated starts again, as a fresh run, when the event is added again.
import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import type { Db } from '../../db/connection.ts';
import type { TrackEventState, trackEvent } from '../../workflows/track-event.ts';
import { lockTracking, type EndReason, type TrackingStatus } from './tracking-lifecycle.ts';
import { trackingWorkflowId, type TrackableMarketplace } from './tracking-ref.ts';

export type { TrackingStatus };

/** A tracked_events row (migration 007) as the API reads it. */
export interface TrackedEventRow {
  id: number;
  marketplace: TrackableMarketplace;
  external_id: string;
  event_id: number | null;
  workflow_id: string;
  status: TrackingStatus;
  created_at: Date;
  updated_at: Date;
  last_scraped_at: Date | null;
  scrape_count: number;
  last_error: string | null;
  last_error_at: Date | null;
  started_at: Date;
  ended_at: Date | null;
  end_reason: EndReason | null;
}

/** What to track, for which account. */
export interface TrackTarget {
  marketplace: TrackableMarketplace;
  id: string;
  accountId: number;
}

export interface EventTracker {
  /** Where the tracker scrapes each marketplace: an event URL below these is accepted too. */
  readonly baseUrls: Record<TrackableMarketplace, string>;
  /**
   * Starts tracking for the account, or finds the tracking already under way (`created` false).
   * Throws TrackingCapError when the account tracks `maxPerAccount` other events already.
   */
  add(target: TrackTarget, limits: { maxPerAccount: number }): Promise<{ created: boolean; record: TrackedEventRow }>;
}

/** The account tracks as many events as it may (TRACKING_MAX_EVENTS_PER_ACCOUNT): nothing was stored. */
export class TrackingCapError extends Error {
  constructor(readonly max: number) {
    super(`an account may track at most ${max} events at once, and this account tracks ${max}; a tracking ends after its event's date`);
    this.name = 'TrackingCapError';
  }
}

/** Temporal could not be reached (or did not answer in time): nothing was stored. */
export class TrackingUnavailableError extends Error {
  constructor(options?: { cause?: unknown }) {
    super('the tracking backend could not be reached', options);
    this.name = 'TrackingUnavailableError';
  }
}

export const TRACK_WORKFLOW_TYPE = 'trackEvent';

/** How long starting (or finding) a workflow may take before Temporal counts as unreachable. */
const START_DEADLINE_MS = 5_000;

const COLUMNS = [
  'id',
  'marketplace',
  'external_id',
  'event_id',
  'workflow_id',
  'status',
  'created_at',
  'updated_at',
  'last_scraped_at',
  'scrape_count',
  'last_error',
  'last_error_at',
  'started_at',
  'ended_at',
  'end_reason',
];

export class TemporalEventTracker implements EventTracker {
  constructor(
    private readonly db: Db,
    private readonly client: Client,
    readonly baseUrls: Record<TrackableMarketplace, string>,
    private readonly options: {
      /** MONITOR_TASK_QUEUE: trackings are long-lived, mostly idle workflows like the monitors. */
      taskQueue: string;
      /**
       * SCRAPE_TASK_QUEUE: where each tick's scrape runs, bounded by the scrapes worker's
       * SCRAPE_CONCURRENCY as the pollers' scrapes are.
       */
      scrapeQueue: string;
      /** The first wait; each tick then brings the worker's TRACK_INTERVAL_MS. */
      intervalMs: number;
      /** Ticks per run before continue-as-new (tests shorten it). */
      ticksPerRun?: number;
    },
  ) {}

  async add(target: TrackTarget, limits: { maxPerAccount: number }): Promise<{ created: boolean; record: TrackedEventRow }> {
    const key = { marketplace: target.marketplace, external_id: target.id };
    const workflowId = trackingWorkflowId(target.marketplace, target.id);
    return this.db.transaction(async (trx) => {
      // The account's row serialises its adds, so two adds at the cap cannot both pass the count
      // below. NO KEY UPDATE: requests metered meanwhile (credit rows referencing the account)
      // take only KEY SHARE on it and are not held up.
      await trx('accounts').where({ id: target.accountId }).forNoKeyUpdate().first('id');
      // A gate of this tracking's workflow (tracking-lifecycle.ts) waits for this add to end.
      await lockTracking(trx, target.marketplace, target.id);
      const inserted: TrackedEventRow[] = await trx('tracked_events')
        .insert({ ...key, workflow_id: workflowId })
        .onConflict(['marketplace', 'external_id'])
        .ignore()
        .returning(COLUMNS);
      let record = inserted[0];
      const created = record !== undefined;
      record ??= (await trx('tracked_events').where(key).forUpdate().first(COLUMNS)) as TrackedEventRow;
      await this.link(trx, record.id, target.accountId, limits.maxPerAccount);
      // A tracking from before accounts were recorded belongs to its accounts from now on.
      await trx('tracked_events').where({ id: record.id, unattributed: true }).update({ unattributed: false, unattributed_since: null });
      const restart = record.status === 'failed' || record.status === 'ended';
      if (restart) {
        [record] = (await trx('tracked_events')
          .where({ id: record.id })
          .update({ status: 'pending', started_at: trx.fn.now(), ended_at: null, end_reason: null, updated_at: trx.fn.now() })
          .returning(COLUMNS)) as TrackedEventRow[];
      }
      await this.ensureRunning(target, workflowId, restart);
      return { created, record: record! };
    });
  }

  /** Makes the account's link to the tracking live, unless that would pass the account's cap. */
  private async link(trx: Knex.Transaction, trackingId: number, accountId: number, maxPerAccount: number): Promise<void> {
    const link = { tracked_event_id: trackingId, account_id: accountId };
    const existing = await trx('tracked_event_accounts').where(link).first('ended_at');
    if (existing && existing.ended_at === null) return; // tracked by this account already: no new slot
    const live = await trx('tracked_event_accounts').where({ account_id: accountId }).whereNull('ended_at').count({ n: '*' }).first();
    if (Number(live?.n ?? 0) >= maxPerAccount) throw new TrackingCapError(maxPerAccount);
    await trx('tracked_event_accounts')
      .insert(link)
      .onConflict(['tracked_event_id', 'account_id'])
      .merge({ added_at: trx.fn.now(), ended_at: null });
  }

  /**
   * Starts the tracking's workflow, or keeps the one running. A restart (the record said `failed`
   * or `ended`) replaces a run still finishing: that run decided to end and does nothing more.
   */
  private async ensureRunning(target: { marketplace: TrackableMarketplace; id: string }, workflowId: string, restart: boolean): Promise<void> {
    const state: TrackEventState = {
      marketplace: target.marketplace,
      externalId: target.id,
      scrapeQueue: this.options.scrapeQueue,
      intervalMs: this.options.intervalMs,
      ticks: 0,
      failures: 0,
      ticksPerRun: this.options.ticksPerRun,
    };
    try {
      // Bounded: the SDK retries an unreachable frontend for a long time, and the client should
      // get its 503 in seconds.
      await this.client.withDeadline(Date.now() + START_DEADLINE_MS, () =>
        this.client.workflow.start<typeof trackEvent>(TRACK_WORKFLOW_TYPE, {
          taskQueue: this.options.taskQueue,
          workflowId,
          args: [state],
          workflowIdConflictPolicy: restart ? 'TERMINATE_EXISTING' : 'USE_EXISTING',
          workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        }),
      );
    } catch (err) {
      throw new TrackingUnavailableError({ cause: err });
    }
  }
}
