// watchlistMonitor: one long-running workflow per watchlist item, for its lifecycle and for
// operators to inspect it in the Temporal UI (search attributes AccountId, ItemId, Platform,
// EventKey). It holds the item's config, versioned by watchlist change id (from the monitor
// relay's `configure` signals, so a replayed or out-of-order signal cannot roll a newer config
// back), and ends when the item is deleted.
//
// It is deliberately off the hot path: changes are found, filtered and notified by the shard
// pollers' activity (activities/poll-shard.ts), which evaluates every item on a changed target
// in one transaction. Waking a workflow per item per change cost a workflow task each (~45 ms
// of CPU per notification, measured). So its `status` query reports the last notification and
// baseline as of the last `inspect` signal, which reads them from the database on demand
// (`npm run ops -- monitors:show <item>` sends it, then queries).
import { condition, continueAsNew, log, proxyLocalActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { MonitorActivities } from '../activities/monitors.ts';
import type { MonitorConfig } from '../src/monitors/changes.ts';
import { configureSignal, inspectSignal, monitorStatusQuery, type Inspection, type MonitorStatus } from './monitor-messages.ts';

export interface MonitorState {
  itemId: number;
  accountId: number;
  /** The target key (platform:region:event) and the shard poller's workflow id. */
  target: string;
  poller: string;
  config: MonitorConfig;
  version: number;
  deleted: boolean;
  inspection: Inspection | null;
}

/** Config changes per run before continuing as new (each is a signal and a workflow task). */
const SIGNALS_PER_RUN = 500;

export function monitorWorkflowId(itemId: number): string {
  return `watchlist-monitor:${itemId}`;
}

function stateOf(s: MonitorState): MonitorStatus['state'] {
  if (s.deleted) return 'deleted';
  if (!s.config.task_active) return 'paused';
  if (s.config.muted_until !== null && Date.parse(s.config.muted_until) > Date.now()) return 'muted';
  return 'active';
}

export async function watchlistMonitor(state: MonitorState): Promise<void> {
  let inspect = false;
  let signals = 0;
  setHandler(configureSignal, (u) => {
    signals++;
    if (u.version <= state.version) return;
    state.version = u.version;
    state.config = u.config;
    if (u.deleted) state.deleted = true;
  });
  setHandler(inspectSignal, () => {
    inspect = true;
  });
  setHandler(monitorStatusQuery, () => ({
    version: state.version,
    state: stateOf(state),
    target: state.target,
    poller: state.poller,
    inspection: state.inspection,
  }));

  const { inspectMonitor } = proxyLocalActivities<MonitorActivities>({
    startToCloseTimeout: '10 seconds',
    retry: { initialInterval: 500, maximumAttempts: 3 },
  });

  for (;;) {
    await condition(() => state.deleted || inspect || signals >= SIGNALS_PER_RUN || workflowInfo().continueAsNewSuggested);
    if (state.deleted) return;
    if (inspect) {
      inspect = false;
      try {
        state.inspection = await inspectMonitor({ itemId: state.itemId, accountId: state.accountId });
      } catch (err) {
        // An inspection is a convenience: a database blip must not fail the monitor.
        log.warn('inspection failed', { itemId: state.itemId, error: String(err) });
      }
    }
    if (signals >= SIGNALS_PER_RUN || workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof watchlistMonitor>(state);
    }
  }
}
