// The monitor relay: keeps one watchlistMonitor workflow per item (lifecycle and inspection;
// workflows/watchlist-monitor.ts) in step with the watchlist. For each item's newest change it
// signal-with-starts the item's monitor with the item's config versioned by change id (a delete
// sends the final `deleted` config). It reads watchlist_changes through its own cursor
// (change-feed.ts), apart from the membership relay: a slow Temporal delays what the monitors
// show, never what the pollers poll. It yields to bulk imports (YIELD_TO_IMPORTS): their
// monitors start behind them, so the creates and the pollers keep the machine.
import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import type { Db } from '../../db/connection.ts';
import type { Logger } from '../logger.ts';
import { parseEventRef, targetKey } from '../platform/event-ref.ts';
import { callTemporal } from '../../temporal/client.ts';
import { monitorSearchAttributes } from '../../temporal/search-attributes.ts';
import { configureSignal, type ConfigureUpdate } from '../../workflows/monitor-messages.ts';
import { monitorWorkflowId, type MonitorState, type watchlistMonitor } from '../../workflows/watchlist-monitor.ts';
import { inParallel, startChangeFeed, type ChangeFeed, type ChangeRow } from './change-feed.ts';
import { monitorConfig } from './changes.ts';
import { shardOf, shardPollerId } from './shards.ts';

const CURSOR = 'watchlist-monitors-v2';
/**
 * A monitor's start costs ~20 ms of CPU between Temporal and the worker, against ~5 ms for the
 * item's whole create (docs/performance.md): while at least `burst` changes were written in the
 * last second (a bulk import), the relay starts `perSecond` monitors a second, and catches up
 * once the import stops. A single create's monitor never waits.
 */
const YIELD_TO_IMPORTS = { burst: 20, perSecond: 5 };
/** Temporal calls in flight at once while applying a batch. */
const PARALLEL = 16;

export interface RelayOptions {
  db: Db;
  connectionString: string;
  client: Client;
  /** The monitors task queue: the monitors, the shard pollers and their poll activities run there. */
  taskQueue: string;
  /** MONITOR_SHARDS_PER_PLATFORM: names a target's shard poller. */
  shardsPerPlatform: number;
  log: Logger;
}

export type Relay = ChangeFeed;

export function startMonitorRelay(opts: RelayOptions): Relay {
  const { client } = opts;
  const log = opts.log.child({ component: 'monitor-relay' });

  const apply = async (change: ChangeRow) => {
    const item = change.item;
    const update: ConfigureUpdate = { config: monitorConfig(item), version: change.id, deleted: change.op === 'delete' || item.deleted };
    const workflowId = monitorWorkflowId(item.id);
    if (update.deleted) {
      try {
        await callTemporal(client, () => client.workflow.getHandle(workflowId).signal(configureSignal, update));
      } catch (err) {
        // Never started, or already ended: nothing to stop.
        if ((err as Error).name !== 'WorkflowNotFoundError') throw err;
      }
      return;
    }
    const ref = parseEventRef(item.website, item.event, item.region);
    // The API validates targets on create, so only rows from before that check can land here
    // (the membership relay logs them).
    if (!ref.ok) return;
    const target = targetKey(ref.ref);
    const initial: MonitorState = {
      itemId: item.id,
      accountId: item.client_id,
      target,
      poller: shardPollerId(opts.taskQueue, ref.ref.platform, shardOf(target, opts.shardsPerPlatform)),
      config: update.config,
      version: 0,
      deleted: false,
      inspection: null,
    };
    await callTemporal(client, () =>
      client.workflow.signalWithStart<typeof watchlistMonitor, [ConfigureUpdate]>('watchlistMonitor', {
        workflowId,
        taskQueue: opts.taskQueue,
        args: [initial],
        signal: configureSignal,
        signalArgs: [update],
        typedSearchAttributes: monitorSearchAttributes({ accountId: item.client_id, itemId: item.id, platform: ref.ref.platform, eventKey: target }),
      }),
    );
  };

  return startChangeFeed({
    db: opts.db,
    connectionString: opts.connectionString,
    cursor: CURSOR,
    log,
    yieldToImports: YIELD_TO_IMPORTS,
    apply: (changes: ChangeRow[], _trx: Knex.Transaction) => inParallel(changes, PARALLEL, apply),
  });
}
