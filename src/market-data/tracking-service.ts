// Starting the tracking of a marketplace event (POST /svc/data/events/add): one tracking record
// (tracked_events) and one trackEvent workflow per event, however often and however
// concurrently it is added. The record is inserted and the workflow started in one
// transaction: concurrent adds of one event meet on the record's unique key (the second waits
// for the first to commit, then finds the record), and a workflow that cannot be started rolls
// the new record back, so the caller can simply retry. Every add also makes sure the workflow
// is running: it starts with conflict policy USE_EXISTING (the running tracking is kept) and
// reuse policy ALLOW_DUPLICATE, so a tracking that ended (`failed`) or was terminated starts
// again, as a fresh run, when the event is added again.
import type { Client } from '@temporalio/client';
import type { Db } from '../../db/connection.ts';
import type { TrackEventState, trackEvent } from '../../workflows/track-event.ts';
import { trackingWorkflowId, type TrackableMarketplace } from './tracking-ref.ts';

export type TrackingStatus = 'pending' | 'active' | 'failing' | 'failed';

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
}

export interface EventTracker {
  /** Where the tracker scrapes each marketplace: an event URL below these is accepted too. */
  readonly baseUrls: Record<TrackableMarketplace, string>;
  /** Starts tracking, or finds the tracking already under way (`created` false). */
  add(target: { marketplace: TrackableMarketplace; id: string }): Promise<{ created: boolean; record: TrackedEventRow }>;
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

  async add(target: { marketplace: TrackableMarketplace; id: string }): Promise<{ created: boolean; record: TrackedEventRow }> {
    const key = { marketplace: target.marketplace, external_id: target.id };
    const workflowId = trackingWorkflowId(target.marketplace, target.id);
    return this.db.transaction(async (trx) => {
      const inserted: TrackedEventRow[] = await trx('tracked_events')
        .insert({ ...key, workflow_id: workflowId })
        .onConflict(['marketplace', 'external_id'])
        .ignore()
        .returning(COLUMNS);
      let record = inserted[0];
      const created = record !== undefined;
      if (!record) {
        record = (await trx('tracked_events').where(key).forUpdate().first(COLUMNS)) as TrackedEventRow;
        if (record.status === 'failed') {
          [record] = (await trx('tracked_events').where({ id: record.id }).update({ status: 'pending', updated_at: trx.fn.now() }).returning(COLUMNS)) as TrackedEventRow[];
        }
      }
      await this.ensureRunning(target, workflowId);
      return { created, record: record! };
    });
  }

  private async ensureRunning(target: { marketplace: TrackableMarketplace; id: string }, workflowId: string): Promise<void> {
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
          workflowIdConflictPolicy: 'USE_EXISTING',
          workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        }),
      );
    } catch (err) {
      throw new TrackingUnavailableError({ cause: err });
    }
  }
}
