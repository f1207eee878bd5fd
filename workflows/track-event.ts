// trackEvent: one long-running workflow per tracked marketplace event (POST
// /svc/data/events/add; workflow id `track:{marketplace}:{event id}`, so adding an event twice
// meets the running tracking). Each tick the trackTick activity, on the scrapes queue (whose
// worker bounds page fetches by SCRAPE_CONCURRENCY), scrapes the event's page and writes the
// catalog row, the statistics and the search row in one transaction, at most once per tick
// (tick numbers are carried across continue-as-new). A transient failure is retried by the
// activity's policy, then recorded (`failing`) and the next tick waits longer (up to
// MAX_BACKOFF_FACTOR × the interval; every wait is jittered ±10%). An event the
// marketplace does not know ends the tracking: the record says `failed` and the workflow fails
// with type `not_found`. Each tick first asks the database whether the tracking goes on
// (src/market-data/tracking-lifecycle.ts): when it has ended (a set time after its event's date,
// too long without a date, no account tracking it) the activity records it and the workflow
// completes at once, with no timer left; while no account tracking it is served the tick scrapes
// nothing and the workflow waits for the resumeTracking signal (the service signal relay sends it
// once the sweep has recorded that one of its accounts is served again), with a check every
// PAUSED_CHECK_MS as a backstop. No clock is read here: the database decides, by its own. A
// killed worker loses nothing: the workflow resumes from its history on the next worker, and a
// tick it had applied but not
// reported is recognised and not written
// twice.
import { ActivityFailure, ApplicationFailure, condition, continueAsNew, proxyActivities, setHandler, sleep, workflowInfo } from '@temporalio/workflow';
import type { TrackingActivities } from '../activities/tracking.ts';
import type { TrackableMarketplace } from '../src/market-data/tracking-ref.ts';
import { backoffWait, describeActivityFailure, failureText, pausedWait } from './loop-pacing.ts';
import { resumeTrackingSignal, trackStatusQuery } from './track-event-messages.ts';

export interface TrackEventState {
  marketplace: TrackableMarketplace;
  externalId: string;
  /**
   * The trackTick activity's task queue (SCRAPE_TASK_QUEUE), like the pollers' scrapes. Absent in
   * states written before it existed: the workflow's own queue, as then.
   */
  scrapeQueue?: string;
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
/** Each wait is the interval (stretched by failures) × (1 ± JITTER_RATIO): trackings added together spread out. */
const JITTER_RATIO = 0.1;

export async function trackEvent(state: TrackEventState): Promise<void> {
  let lastError: string | null = null;
  let ticksThisRun = 0;
  let paused = false;
  let resumed = false;
  setHandler(trackStatusQuery, () => ({ ticks: state.ticks, failures: state.failures, lastError, intervalMs: state.intervalMs, paused }));
  setHandler(resumeTrackingSignal, () => {
    resumed = true;
  });

  const { trackTick } = proxyActivities<TrackingActivities>({
    taskQueue: state.scrapeQueue ?? workflowInfo().taskQueue,
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
      // Ended: recorded by the activity; the workflow completes with no timer pending.
      if (result.state === 'ended') return;
      state.intervalMs = result.intervalMs;
      paused = result.state === 'paused';
      // A paused tick wrote nothing: its number is used by the next tick that scrapes.
      if (!paused) {
        state.ticks++;
        state.failures = 0;
        lastError = null;
      }
    } catch (err) {
      paused = false;
      if (!(err instanceof ActivityFailure)) throw err;
      const failure = describeActivityFailure(err);
      if (failure.type === 'not_found') {
        await recordTrackingFailure({ ...target, message: failure.message, final: true });
        throw ApplicationFailure.create({ type: 'not_found', message: failure.message, nonRetryable: true });
      }
      state.failures++;
      lastError = failureText(failure);
      await recordTrackingFailure({ ...target, message: lastError, final: false });
    }
    ticksThisRun++;
    if (paused) {
      // Until an account is served again (the sweep signals), or the backstop check.
      resumed = false;
      await condition(() => resumed, pausedWait(state.intervalMs, JITTER_RATIO));
    } else {
      await sleep(backoffWait(state.intervalMs, state.failures, JITTER_RATIO));
    }
    if (ticksThisRun >= (state.ticksPerRun ?? TICKS_PER_RUN) || workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof trackEvent>(state);
    }
  }
}
