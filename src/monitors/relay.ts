// The monitor relay: applies watchlist changes to Temporal. Every watchlist write leaves a row
// in watchlist_changes in the same transaction (src/apis/watchlist/store.ts); the relay reads
// them in id order from a cursor it keeps in relay_cursors and, per item, signal-with-starts the
// item's watchlistMonitor with the item's config versioned by change id (a delete sends the
// final `deleted` config). Because the cursor only moves after Temporal accepted the batch, a
// crash or a Temporal outage delays monitors but never loses a change; and since monitors
// ignore versions they have seen, applying a batch twice is harmless.
//
// Woken by NOTIFY on watchlist_changes (so changes reach monitors in milliseconds) and by a
// slow safety poll. Any number of relays may run: the cursor row is locked with SKIP LOCKED,
// so one drains at a time and the others skip.
import type { Client } from '@temporalio/client';
import { listen, type Listener } from '../../db/listener.ts';
import type { Db } from '../../db/connection.ts';
import type { Logger } from '../logger.ts';
import { CHANGES_CHANNEL } from '../apis/watchlist/store.ts';
import type { WatchlistItem } from '../apis/watchlist/schema.ts';
import { parseEventRef } from '../platform/event-ref.ts';
import { monitorConfig } from './changes.ts';
import { configureSignal, type ConfigureUpdate } from '../../workflows/monitor-messages.ts';
import { monitorWorkflowId, type MonitorState, type watchlistMonitor } from '../../workflows/watchlist-monitor.ts';

const CURSOR = 'watchlist-monitors';
const BATCH = 500;
/** Temporal calls in flight at once while applying a batch. */
const PARALLEL = 16;
const SAFETY_POLL_MS = 2_000;

interface ChangeRow {
  id: number;
  item_id: number;
  op: 'create' | 'update' | 'delete';
  item: WatchlistItem;
}

export interface RelayOptions {
  db: Db;
  connectionString: string;
  client: Client;
  taskQueue: string;
  log: Logger;
  /** Monitors' evaluations per run before continue-as-new (tests shorten it). */
  evaluationsPerRun?: number;
}

export interface Relay {
  /** Applies everything pending now (tests and shutdown use it). */
  drain(): Promise<void>;
  stop(): Promise<void>;
}

async function inParallel<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

export function startMonitorRelay(opts: RelayOptions): Relay {
  const { db, client, log } = opts;
  const rlog = log.child({ component: 'monitor-relay' });

  const apply = async (change: ChangeRow) => {
    const item = change.item;
    const update: ConfigureUpdate = { config: monitorConfig(item), version: change.id, deleted: change.op === 'delete' || item.deleted };
    const workflowId = monitorWorkflowId(item.id);
    if (update.deleted) {
      try {
        await client.workflow.getHandle(workflowId).signal(configureSignal, update);
      } catch (err) {
        // Never started, or already ended: nothing to stop.
        if ((err as Error).name !== 'WorkflowNotFoundError') throw err;
      }
      return;
    }
    const ref = parseEventRef(item.website, item.event, item.region);
    if (!ref.ok) {
      // The API validates targets on create, so only rows from before that check can land here.
      rlog.warn({ item_id: item.id, reason: ref.message }, 'item has no scrapeable target; not monitored');
      return;
    }
    const initial: MonitorState = {
      itemId: item.id,
      accountId: item.client_id,
      item: { website: item.website, event: item.event, region: item.region },
      target: ref.ref,
      config: update.config,
      version: 0,
      deleted: false,
      baseline: null,
      joined: false,
      evaluationsPerRun: opts.evaluationsPerRun,
    };
    await client.workflow.signalWithStart<typeof watchlistMonitor, [ConfigureUpdate]>('watchlistMonitor', {
      workflowId,
      taskQueue: opts.taskQueue,
      args: [initial],
      signal: configureSignal,
      signalArgs: [update],
    });
  };

  /** One batch under the cursor's row lock; returns how many changes it read (0: nothing or locked). */
  const drainBatch = () =>
    db.transaction(async (trx) => {
      await trx('relay_cursors').insert({ name: CURSOR, last_id: 0 }).onConflict('name').ignore();
      const cursor = await trx('relay_cursors').where({ name: CURSOR }).forUpdate().skipLocked().first('last_id');
      if (!cursor) return 0;
      const rows: ChangeRow[] = await trx('watchlist_changes').where('id', '>', cursor.last_id).orderBy('id').limit(BATCH).select('id', 'item_id', 'op', 'item');
      if (rows.length === 0) return 0;
      // Only each item's newest change matters: it carries the whole item.
      const newest = new Map<number, ChangeRow>();
      for (const r of rows) newest.set(Number(r.item_id), { ...r, id: Number(r.id), item_id: Number(r.item_id) });
      const started = performance.now();
      await inParallel([...newest.values()], PARALLEL, apply);
      const last = Number(rows[rows.length - 1]!.id);
      await trx('relay_cursors').where({ name: CURSOR }).update({ last_id: last, updated_at: trx.fn.now() });
      rlog.debug({ changes: rows.length, items: newest.size, last_id: last, ms: Math.round(performance.now() - started) }, 'applied watchlist changes');
      return rows.length;
    });

  let running: Promise<void> | null = null;
  let again = false;
  let stopped = false;
  let failures = 0;
  let retryTimer: NodeJS.Timeout | null = null;

  const drain = (): Promise<void> => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        while (!stopped && (await drainBatch()) === BATCH);
      } while (again && !stopped);
    })()
      .then(
        () => {
          failures = 0;
        },
        (err: unknown) => {
          failures++;
          const wait = Math.min(30_000, 500 * 2 ** failures);
          rlog.warn({ err, retry_ms: wait }, 'could not apply watchlist changes to Temporal; will retry');
          if (!stopped && !retryTimer) {
            retryTimer = setTimeout(() => {
              retryTimer = null;
              void drain();
            }, wait);
          }
        },
      )
      .finally(() => {
        running = null;
      });
    return running;
  };

  const listener: Listener = listen({
    connectionString: opts.connectionString,
    channels: [CHANGES_CHANNEL],
    onWake: () => void drain(),
    log: rlog,
    applicationName: 'monitor-relay',
  });
  const poll = setInterval(() => void drain(), SAFETY_POLL_MS);
  poll.unref();

  return {
    drain,
    stop: async () => {
      stopped = true;
      clearInterval(poll);
      if (retryTimer) clearTimeout(retryTimer);
      await listener.close();
      await running;
    },
  };
}
