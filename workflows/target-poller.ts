// targetPoller: one long-running workflow per watched target (platform, region, event), shared
// by every watchlist item on it, so scraping grows with targets, not items. Each interval (with
// jitter, so pollers started together spread out) it runs the pollTarget activity on the scrapes
// queue, which stores a snapshot row only when the content changed; only then are the
// subscribed item monitors signalled. A new subscriber is sent the current snapshot at once (its
// baseline). With no subscribers left for a whole interval it ends; the next subscriber's
// signal-with-start begins a new run. Continue-as-new keeps each run's history bounded.
import {
  ActivityFailure,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { MonitorActivities } from '../activities/monitors.ts';
import type { EventRef } from '../src/platform/event-ref.ts';
import { backoffWait, describeActivityFailure, failureText } from './loop-pacing.ts';
import { pollerStatusQuery, snapshotSignal, subscribeSignal, unsubscribeSignal } from './monitor-messages.ts';

export interface PollerState {
  target: EventRef;
  /** Activities' task queue for the scrape (SCRAPE_TASK_QUEUE). */
  scrapeQueue: string;
  intervalMs: number;
  /** Each wait is intervalMs × (1 ± jitterRatio). */
  jitterRatio: number;
  /** Item id → its monitor's workflow id. */
  subscribers: Record<string, string>;
  lastSnapshotId: number | null;
  /** Polls since the last success, which stretch the wait (a failing platform is not hammered). */
  failures: number;
  /** Polls per run before continuing as new (default POLLS_PER_RUN; tests make it small). */
  pollsPerRun?: number;
}

/** A run continues as new after this many polls (each poll is a handful of history events). */
const POLLS_PER_RUN = 200;

export async function targetPoller(state: PollerState): Promise<void> {
  // Subscribers that still need the current snapshot as their baseline.
  const newcomers = new Set<number>();
  let polls = 0;
  let lastError: string | null = null;
  setHandler(subscribeSignal, ({ itemId, workflowId }) => {
    state.subscribers[String(itemId)] = workflowId;
    newcomers.add(itemId);
  });
  setHandler(unsubscribeSignal, ({ itemId }) => {
    delete state.subscribers[String(itemId)];
    newcomers.delete(itemId);
  });
  setHandler(pollerStatusQuery, () => ({
    subscribers: Object.keys(state.subscribers).map(Number),
    lastSnapshotId: state.lastSnapshotId,
    polls,
    lastError,
  }));

  const { pollTarget } = proxyActivities<MonitorActivities>({
    taskQueue: state.scrapeQueue,
    // One scrape attempt's bound (a third of the 60 s request limit); also how long a poll lost
    // with a killed worker waits before it is retried elsewhere.
    startToCloseTimeout: '20 seconds',
    // A few quick retries for a blip; beyond that the next interval is the retry.
    retry: { initialInterval: 500, backoffCoefficient: 2, maximumAttempts: 3 },
  });

  const signal = async (itemIds: number[], snapshotId: number) => {
    await Promise.all(
      itemIds.map(async (itemId) => {
        const workflowId = state.subscribers[String(itemId)];
        if (!workflowId) return;
        try {
          await getExternalWorkflowHandle(workflowId).signal(snapshotSignal, { snapshotId });
        } catch (err) {
          // The monitor is gone (its item was deleted and the unsubscribe was lost): forget it.
          log.warn('dropping a subscriber that cannot be signalled', { itemId, workflowId, error: String(err) });
          delete state.subscribers[String(itemId)];
        }
      }),
    );
  };

  const hasSubscribers = () => Object.keys(state.subscribers).length > 0;
  const greetNewcomers = async () => {
    if (newcomers.size === 0 || state.lastSnapshotId === null) return;
    const ids = [...newcomers];
    newcomers.clear();
    await signal(ids, state.lastSnapshotId);
  };

  for (;;) {
    if (!hasSubscribers()) {
      // Linger one interval for a subscriber (a pause followed by a resume, say); then end.
      if (!(await condition(hasSubscribers, state.intervalMs))) return;
    }
    try {
      const result = await pollTarget({ target: state.target });
      state.failures = 0;
      lastError = null;
      if (result.snapshotId !== state.lastSnapshotId) {
        state.lastSnapshotId = result.snapshotId;
        // Everyone, newcomers included: the newest snapshot is their baseline or their change.
        newcomers.clear();
        await signal(Object.keys(state.subscribers).map(Number), result.snapshotId);
      }
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      state.failures++;
      lastError = failureText(describeActivityFailure(err));
      log.warn('poll failed', { target: state.target.key, platform: state.target.platform, failures: state.failures, error: lastError });
    }
    await greetNewcomers();
    polls++;

    const until = Date.now() + backoffWait(state.intervalMs, state.failures, state.jitterRatio);
    // Wake early only to greet a newcomer; the interval itself is kept.
    while (Date.now() < until) {
      const woke = await condition(() => newcomers.size > 0 && state.lastSnapshotId !== null, until - Date.now());
      if (!woke) break;
      await greetNewcomers();
    }
    if (polls >= (state.pollsPerRun ?? POLLS_PER_RUN) || workflowInfo().continueAsNewSuggested) {
      await greetNewcomers();
      await continueAsNew<typeof targetPoller>(state);
    }
  }
}
