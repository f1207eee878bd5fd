// The whole watchlist monitoring path for a test file, all real (worker-stack.ts sets up the
// scratch database, simulator, worker and gateway): a worker on unique scrapes and monitors
// queues, and the monitor relay, in-process or inside the child-process worker, so its stream
// sees only this file's items. MONITOR_INTERVAL_MS is short so changes show in a second.
import type { Pool } from '../../db/pool.ts';
import { startMonitorRelay } from '../../src/monitors/relay.ts';
import { readLog, type LogRow } from '../../src/notifications/log.ts';
import { createRequestPool } from '../../src/runtime/services.ts';
import { newAccount, type TestAccount } from './harness.ts';

// Moved to harness.ts; re-exported for the monitor tests that import it from here.
export { eventually } from './harness.ts';
import { uniqueTaskQueue } from './temporal.ts';
import { useWorkerStack, type WorkerStack } from './worker-stack.ts';

export interface MonitorStack extends WorkerStack {
  pool: Pool;
  account(): Promise<TestAccount>;
}

export function useMonitorStack(
  opts: { intervalMs?: number; worker?: 'in-process' | 'child-process'; pollsPerRun?: number; evaluationsPerRun?: number } = {},
): MonitorStack {
  return useWorkerStack<MonitorStack>({
    database: 'tm_monitors',
    env: {
      MONITOR_INTERVAL_MS: String(opts.intervalMs ?? 300),
      MONITOR_JITTER_RATIO: '0.1',
      SCRAPE_TASK_QUEUE: uniqueTaskQueue('scrapes'),
      MONITOR_TASK_QUEUE: uniqueTaskQueue('monitors'),
      BROWSER_PAGES: '2',
    },
    worker: opts.worker,
    queues: (config) => [config.SCRAPE_TASK_QUEUE, config.MONITOR_TASK_QUEUE],
    activities: () => ({ pollsPerRun: opts.pollsPerRun }),
    childEnv: ({ config }) => ({
      MONITOR_INTERVAL_MS: String(config.MONITOR_INTERVAL_MS),
      MONITOR_JITTER_RATIO: String(config.MONITOR_JITTER_RATIO),
    }),
    build: async (stack, { log, onClose }) => {
      const { db, databaseUrl, config, client } = stack;
      // Workflow ids name items (`watchlist-item:{id}`) and every file shares the run's Temporal
      // namespace: each scratch database numbers its items from its own random offset, or two
      // files' item 1 would be one workflow (on whichever file's task queue started it first).
      await db.raw(`ALTER SEQUENCE watchlist_items_id_seq RESTART WITH ${1 + Math.floor(Math.random() * 2 ** 40)}`);
      const pool = createRequestPool(config, databaseUrl);
      onClose(() => pool.end());
      // A child-process worker runs the relay itself (worker-main.ts), as production does.
      if (opts.worker !== 'child-process') {
        const relay = startMonitorRelay({ db, connectionString: databaseUrl, client, taskQueue: config.MONITOR_TASK_QUEUE, log, evaluationsPerRun: opts.evaluationsPerRun });
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
