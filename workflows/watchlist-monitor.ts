// watchlistMonitor: one long-running workflow per watchlist item. It holds the item's monitor
// config and its baseline (the last target snapshot it has seen), joins the target's shared
// poller while the item is active, and on each new snapshot has the evaluateChange activity diff
// baseline → snapshot with the item's rules (src/monitors/changes.ts) and append the resulting
// notifications to the durable log. Config arrives from the monitor relay as `configure`
// signals versioned by watchlist change id, so a replayed or out-of-order signal cannot roll
// a newer config back. Pausing leaves the poller and forgets the baseline: a resumed item
// starts from what is on sale then, not from what it saw before the pause.
import { condition, continueAsNew, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { MonitorActivities } from '../activities/monitors.ts';
import type { MonitorConfig } from '../src/monitors/changes.ts';
import type { EventRef } from '../src/platform/event-ref.ts';
import { configureSignal, monitorStatusQuery, snapshotSignal } from './monitor-messages.ts';

export interface MonitorState {
  itemId: number;
  accountId: number;
  /** The item's website, event and region as the client wrote them (echoed in notifications). */
  item: { website: string; event: string; region: string };
  target: EventRef;
  config: MonitorConfig;
  version: number;
  deleted: boolean;
  /** Snapshot id the next change is measured from; null until the poller sends one. */
  baseline: number | null;
  joined: boolean;
  /** Evaluations per run before continuing as new (default EVALUATIONS_PER_RUN; tests make it small). */
  evaluationsPerRun?: number;
}

/** Evaluations per run before continuing as new (each is a few history events). */
const EVALUATIONS_PER_RUN = 300;

export function monitorWorkflowId(itemId: number): string {
  return `watchlist-item:${itemId}`;
}

export async function watchlistMonitor(state: MonitorState): Promise<void> {
  const pending: number[] = [];
  let evaluations = 0;
  setHandler(configureSignal, (u) => {
    if (u.version <= state.version) return;
    state.version = u.version;
    state.config = u.config;
    if (u.deleted) state.deleted = true;
  });
  setHandler(snapshotSignal, ({ snapshotId }) => {
    pending.push(snapshotId);
  });
  setHandler(monitorStatusQuery, () => ({
    version: state.version,
    active: state.config.task_active,
    joined: state.joined,
    baseline: state.baseline,
    evaluations,
  }));

  const { evaluateChange, joinTarget, leaveTarget } = proxyActivities<MonitorActivities>({
    // Short statements and Temporal calls; the bound is also how long an activity lost with a
    // killed worker waits before it is retried.
    startToCloseTimeout: '10 seconds',
    // Database and Temporal blips: retried without limit (with a capped backoff), because a
    // monitor that gave up would silently stop notifying.
    retry: { initialInterval: 1_000, backoffCoefficient: 2, maximumInterval: 30_000 },
  });
  const self = workflowInfo().workflowId;

  for (;;) {
    if (state.deleted) {
      if (state.joined) await leaveTarget({ target: state.target, itemId: state.itemId });
      return;
    }
    const active = state.config.task_active;
    if (active && !state.joined) {
      await joinTarget({ target: state.target, itemId: state.itemId, workflowId: self });
      state.joined = true;
    } else if (!active && state.joined) {
      await leaveTarget({ target: state.target, itemId: state.itemId });
      state.joined = false;
      state.baseline = null;
    }
    if (!active) pending.length = 0;

    // Snapshot ids from one poller only grow; each one is diffed against the one before.
    const next = [...new Set(pending.splice(0))].sort((a, b) => a - b);
    for (const snapshotId of next) {
      if (state.baseline !== null && snapshotId > state.baseline) {
        await evaluateChange({
          itemId: state.itemId,
          accountId: state.accountId,
          item: state.item,
          config: state.config,
          fromSnapshotId: state.baseline,
          toSnapshotId: snapshotId,
        });
        evaluations++;
      }
      if (state.baseline === null || snapshotId > state.baseline) state.baseline = snapshotId;
    }

    if (pending.length === 0 && (evaluations >= (state.evaluationsPerRun ?? EVALUATIONS_PER_RUN) || workflowInfo().continueAsNewSuggested)) {
      await continueAsNew<typeof watchlistMonitor>(state);
    }
    await condition(() => state.deleted || pending.length > 0 || state.config.task_active !== state.joined);
  }
}
