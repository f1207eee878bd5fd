// The whole watchlist monitoring path for a test file, all real (worker-stack.ts sets up the
// scratch database, simulator, worker and gateway): a worker on unique scrapes and monitors
// queues, and the membership and monitor relays, in-process or inside the child-process worker,
// so its stream sees only this file's items. MONITOR_INTERVAL_MS is short so changes show in a second.
import type { Pool } from '../../db/pool.ts';
import { startMembershipRelay } from '../../src/monitors/membership.ts';
import { startMonitorRelay } from '../../src/monitors/relay.ts';
import { readLog, type LogRow } from '../../src/notifications/log.ts';
import { createRequestPool } from '../../src/runtime/services.ts';
import { eventually, newAccount, type TestAccount } from './harness.ts';
import { hits } from './simulator.ts';
import { uniqueTaskQueue } from './temporal.ts';
import { useWorkerStack, type WorkerStack } from './worker-stack.ts';

// Moved to harness.ts; re-exported for the monitor tests that import it from here.
export { eventually } from './harness.ts';

export interface MonitorStack extends WorkerStack {
  pool: Pool;
  account(): Promise<TestAccount>;
}

export function useMonitorStack(
  opts: {
    intervalMs?: number;
    worker?: 'in-process' | 'child-process';
    pollRunMs?: number;
    shutdownGraceMs?: number;
    /** Settings of the worker; a function is read when the stack starts (after earlier beforeAll hooks, e.g. proxies on ports of their own). */
    env?: Record<string, string> | (() => Record<string, string>);
    /** Settings of the gateway on top of the test config's (e.g. WEBHOOK_ALLOW_PRIVATE_NETWORKS). */
    gatewayEnv?: Record<string, string>;
    /** The server the scratch database is made on; default the run's (worker-stack.ts). */
    serverUrl?: () => string;
  } = {},
): MonitorStack {
  const queues = { SCRAPE_TASK_QUEUE: uniqueTaskQueue('scrapes'), MONITOR_TASK_QUEUE: uniqueTaskQueue('monitors') };
  const extraEnv = () => (typeof opts.env === 'function' ? opts.env() : opts.env);
  return useWorkerStack<MonitorStack>({
    database: 'tm_monitors',
    get env() {
      return {
        MONITOR_INTERVAL_MS: String(opts.intervalMs ?? 300),
        MONITOR_JITTER_RATIO: '0.1',
        MONITOR_POLL_RUN_MS: String(opts.pollRunMs ?? 10 * 60_000),
        ...queues,
        BROWSER_PAGES: '2',
        ...extraEnv(),
      };
    },
    worker: opts.worker,
    shutdownGraceMs: opts.shutdownGraceMs,
    gatewayEnv: opts.gatewayEnv,
    serverUrl: opts.serverUrl,
    queues: (config) => [config.SCRAPE_TASK_QUEUE, config.MONITOR_TASK_QUEUE],
    childEnv: ({ config }) => ({
      MONITOR_INTERVAL_MS: String(config.MONITOR_INTERVAL_MS),
      MONITOR_JITTER_RATIO: String(config.MONITOR_JITTER_RATIO),
      MONITOR_POLL_RUN_MS: String(config.MONITOR_POLL_RUN_MS),
      ...extraEnv(),
    }),
    build: async (stack, { log, onClose }) => {
      const { db, databaseUrl, config, client } = stack;
      // Monitor workflow ids name items (`watchlist-monitor:{id}`) and every file shares the
      // run's Temporal namespace: each scratch database numbers its items from its own random
      // offset, or two files' item 1 would be one workflow.
      await db.raw(`ALTER SEQUENCE watchlist_items_id_seq RESTART WITH ${1 + Math.floor(Math.random() * 2 ** 40)}`);
      const pool = createRequestPool(config, databaseUrl);
      onClose(() => pool.end());
      // A child-process worker runs the relays itself (worker-main.ts), as production does.
      if (opts.worker !== 'child-process') {
        const relays = { db, connectionString: databaseUrl, client, taskQueue: config.MONITOR_TASK_QUEUE, shardsPerPlatform: config.MONITOR_SHARDS_PER_PLATFORM, log };
        const membership = startMembershipRelay(relays);
        onClose(() => membership.stop());
        const relay = startMonitorRelay(relays);
        onClose(() => relay.stop());
      }
      return { ...stack, pool, account: () => newAccount(db) };
    },
  });
}

/** The account's `notification` rows in the log, oldest first. */
export async function notificationsOf(stack: MonitorStack, accountId: number): Promise<LogRow[]> {
  const rows = await readLog(stack.pool, { after: 0, accountId, limit: 10_000 });
  return rows.filter((r) => r.kind === 'notification');
}

/** Until the item is a poller member with a baseline (its first poll is done), within `ms`. */
export async function baselined(stack: MonitorStack, itemId: number, ms?: number): Promise<number> {
  return eventually(async () => {
    const row = await stack.db('monitor_members').where({ item_id: itemId }).first('baseline_snapshot_id');
    return row?.baseline_snapshot_id != null ? Number(row.baseline_snapshot_id) : undefined;
  }, ms);
}

/**
 * Until the simulator has served the event `polls` more times than now. A target's polls run one
 * at a time, so once the second of them has arrived, a poll that began after this call (and saw
 * whatever was set up before it) has been recorded, notifications included: the positive marker
 * a test waits for before asserting that something was not notified, instead of a fixed sleep
 * that a loaded machine can outlast.
 */
export async function polledAgain(stack: MonitorStack, platform: string, event: string, polls = 2): Promise<void> {
  const from = await hits(stack.sim, platform, event);
  await eventually(async () => ((await hits(stack.sim, platform, event)) >= from + polls ? true : undefined));
}

/** Until the item has no member row (paused or deleted), within `ms`. */
export async function notPolled(stack: MonitorStack, itemId: number, ms?: number): Promise<void> {
  await eventually(async () => ((await stack.db('monitor_members').where({ item_id: itemId }).first('item_id')) ? undefined : true), ms);
}
