// trackEvent: one long-running workflow per tracked marketplace event (POST
// /svc/data/events/add; workflow id `track:{marketplace}:{event id}`, so adding an event twice
// meets the running tracking). Each tick the trackTick activity scrapes the event's page and
// writes the catalog row, the statistics and the search row in one transaction, at most once
// per tick (tick numbers are carried across continue-as-new). A transient failure is retried
// by the activity's policy, then recorded (`failing`) and the next tick waits longer (up to
// MAX_BACKOFF × the interval). An event the marketplace does not know ends the tracking: the
// record says `failed` and the workflow fails with type `not_found`. A killed worker loses
// nothing: the workflow resumes from its history on the next worker, and a tick it had
// applied but not reported is recognised and not written twice.
import { ActivityFailure, ApplicationFailure, continueAsNew, proxyActivities, setHandler, sleep, workflowInfo } from '@temporalio/workflow';
import type { TrackingActivities } from '../activities/tracking.ts';
import type { TrackableMarketplace } from '../src/market-data/tracking-ref.ts';
import { trackStatusQuery } from './track-event-messages.ts';

export interface TrackEventState {
  marketplace: TrackableMarketplace;
  externalId: string;
  /** Wait between ticks; each successful tick brings the worker's TRACK_INTERVAL_MS. */
  intervalMs: number;
  /** Ticks applied in the whole chain so far: the next tick's number is ticks + 1. */
  ticks: number;
  /** Failed ticks in a row. */
  failures: number;
  /** Ticks per run before continuing as new (default TICKS_PER_RUN; tests make it small). */
  ticksPerRun?: number;
}

/** Each tick is a handful of history events; a run continues as new after this many. */
const TICKS_PER_RUN = 200;
const MAX_BACKOFF = 16;

function describe(err: ActivityFailure): { type: string | null; message: string } {
  const cause = err.cause;
  if (cause instanceof ApplicationFailure) return { type: cause.type ?? null, message: cause.message };
  return { type: null, message: cause?.message ?? err.message };
}

export async function trackEvent(state: TrackEventState): Promise<void> {
  let lastError: string | null = null;
  let ticksThisRun = 0;
  setHandler(trackStatusQuery, () => ({ ticks: state.ticks, failures: state.failures, lastError, intervalMs: state.intervalMs }));

  const { trackTick } = proxyActivities<TrackingActivities>({
    // A scrape (bounded by its own fetch timeout, 20 s by default) and one transaction.
    startToCloseTimeout: '45 seconds',
    // The activity heartbeats every second: a tick lost with a killed worker is retried after this.
    heartbeatTimeout: '5 seconds',
    // A few quick retries for a blip; beyond that the failure is recorded and the next tick,
    // later, is the retry. An unknown event is final at once.
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumAttempts: 3, nonRetryableErrorTypes: ['not_found'] },
  });
  const { recordTrackingFailure } = proxyActivities<TrackingActivities>({
    startToCloseTimeout: '10 seconds',
    // The record must land: database blips are retried without limit.
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
  });
  const target = { marketplace: state.marketplace, externalId: state.externalId };
  const epoch = workflowInfo().firstExecutionRunId;

  for (;;) {
    try {
      const result = await trackTick({ ...target, epoch, tick: state.ticks + 1 });
      state.ticks++;
      state.failures = 0;
      state.intervalMs = result.intervalMs;
      lastError = null;
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      const { type, message } = describe(err);
      if (type === 'not_found') {
        await recordTrackingFailure({ ...target, message, final: true });
        throw ApplicationFailure.create({ type: 'not_found', message, nonRetryable: true });
      }
      state.failures++;
      lastError = type ? `${type}: ${message}` : message;
      await recordTrackingFailure({ ...target, message: lastError, final: false });
    }
    ticksThisRun++;
    await sleep(state.intervalMs * Math.min(MAX_BACKOFF, 2 ** state.failures));
    if (ticksThisRun >= (state.ticksPerRun ?? TICKS_PER_RUN) || workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof trackEvent>(state);
    }
  }
}
