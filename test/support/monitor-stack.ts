// The whole watchlist monitoring path for a test file, all real: its own scratch database (so
// its relay and stream see only this file's items), the platform simulator, a Temporal worker on
// unique scrapes and monitors queues with the real activities, the monitor relay, and a real
// gateway serving the Watchlist API. MONITOR_INTERVAL_MS is short so changes show in a second.
// The worker (with the relay) runs in the test process, or as the production entry point
// `temporal/worker-main.ts` in a child process that fault tests can SIGKILL.
import { spawn, type ChildProcess } from 'node:child_process';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll } from 'vitest';
import { createActivities } from '../../activities/index.ts';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase } from '../../db/scratch.ts';
import { createLogger } from '../../src/logger.ts';
import { startMonitorRelay } from '../../src/monitors/relay.ts';
import { readLog, type LogRow } from '../../src/notifications/log.ts';
import { createRequestPool } from '../../src/runtime/services.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import type { Config } from '../../src/config.ts';
import type { Pool } from '../../db/pool.ts';
import { connectTemporal } from '../../temporal/client.ts';
import { WORKFLOWS_PATH } from '../../temporal/runtime.ts';
import { startWorkers } from '../../temporal/worker.ts';
import { databaseUrl, newAccount, PROJECT_ROOT, startTestGateway, testConfig, type TestAccount, type TestGateway } from './harness.ts';
import { cachedBundle, temporalAddress, TEST_NAMESPACE, uniqueTaskQueue } from './temporal.ts';

export interface MonitorStack {
  sim: Simulator;
  db: Db;
  pool: Pool;
  databaseUrl: string;
  config: Config;
  client: Client;
  gateway: TestGateway;
  /**
   * Stops the worker (both queues and, for a child process, its relay) and starts it again.
   * In-process: a graceful stop. Child process: SIGKILL, as a crash would.
   */
  restartWorker(opts?: { downMs?: number }): Promise<void>;
  account(): Promise<TestAccount>;
}

/** The production worker entry (`npm run worker`) as a child process; resolves once it serves both queues. */
async function spawnWorker(env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'temporal/worker-main.ts'], { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker not ready within 60 s:\n${output}`)), 60_000);
    const onData = (b: Buffer) => {
      output += b.toString();
      if (output.includes('Temporal workers running')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`worker exited (${code}) before it was ready:\n${output}`));
    });
  });
  // Keep draining its output so a full pipe never blocks it.
  child.stdout!.resume();
  child.stderr!.resume();
  return child;
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}

export function useMonitorStack(
  opts: { intervalMs?: number; worker?: 'in-process' | 'child-process'; pollsPerRun?: number; evaluationsPerRun?: number } = {},
): MonitorStack {
  const stack = {} as MonitorStack;
  const cleanups: (() => Promise<unknown>)[] = [];
  beforeAll(async () => {
    const log = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
    const scratch = await createScratchDatabase('tm_monitors', databaseUrl());
    cleanups.push(() => scratch.drop());
    const sim = await startSimulator({ empty: true });
    cleanups.push(() => sim.close());
    const config = testConfig({
      DATABASE_URL: scratch.url,
      MONITOR_INTERVAL_MS: String(opts.intervalMs ?? 300),
      MONITOR_JITTER_RATIO: '0.1',
      SCRAPE_TASK_QUEUE: uniqueTaskQueue('scrapes'),
      MONITOR_TASK_QUEUE: uniqueTaskQueue('monitors'),
      BROWSER_PAGES: '2',
    });
    const db = createDb({ connectionString: scratch.url, poolMax: 10 });
    cleanups.push(() => db.destroy());
    // Workflow ids name items (`watchlist-item:{id}`) and every file shares the run's Temporal
    // namespace: each scratch database numbers its items from its own random offset, or two
    // files' item 1 would be one workflow (on whichever file's task queue started it first).
    await db.raw(`ALTER SEQUENCE watchlist_items_id_seq RESTART WITH ${1 + Math.floor(Math.random() * 2 ** 40)}`);
    const pool = createRequestPool(config, scratch.url);
    cleanups.push(() => pool.end());
    const address = temporalAddress();
    const temporal = await connectTemporal({ address, namespace: TEST_NAMESPACE });
    cleanups.push(() => temporal.close());
    let restartWorker: MonitorStack['restartWorker'];
    if (opts.worker === 'child-process') {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        DATABASE_URL: scratch.url,
        TEMPORAL_ADDRESS: address,
        TEMPORAL_NAMESPACE: TEST_NAMESPACE,
        SCRAPE_TASK_QUEUE: config.SCRAPE_TASK_QUEUE,
        MONITOR_TASK_QUEUE: config.MONITOR_TASK_QUEUE,
        MONITOR_INTERVAL_MS: String(config.MONITOR_INTERVAL_MS),
        MONITOR_JITTER_RATIO: String(config.MONITOR_JITTER_RATIO),
        BROWSER_PAGES: '1',
        LOG_LEVEL: 'info',
        ...Object.fromEntries(Object.entries(sim.baseUrls).map(([k, url]) => [`${k.toUpperCase()}_BASE_URL`, url])),
      };
      let child = await spawnWorker(env);
      cleanups.push(() => kill(child));
      restartWorker = async ({ downMs = 0 } = {}) => {
        await kill(child);
        if (downMs) await new Promise((r) => setTimeout(r, downMs));
        child = await spawnWorker(env);
      };
    } else {
      const { activities, close } = await createActivities({ config, log, db, client: temporal.client, baseUrls: sim.baseUrls, pollsPerRun: opts.pollsPerRun });
      cleanups.push(close);
      const workflowBundle = await cachedBundle(WORKFLOWS_PATH);
      const startWorker = () =>
        startWorkers({
          connection: { address },
          namespace: TEST_NAMESPACE,
          queues: [
            { taskQueue: config.SCRAPE_TASK_QUEUE, workflowsPath: WORKFLOWS_PATH, activities, workflowBundle },
            { taskQueue: config.MONITOR_TASK_QUEUE, workflowsPath: WORKFLOWS_PATH, activities, workflowBundle },
          ],
          log,
          shutdownGraceMs: 500,
        });
      let workers = await startWorker();
      cleanups.push(() => workers.stop());
      const relay = startMonitorRelay({
        db,
        connectionString: scratch.url,
        client: temporal.client,
        taskQueue: config.MONITOR_TASK_QUEUE,
        log,
        evaluationsPerRun: opts.evaluationsPerRun,
      });
      cleanups.push(() => relay.stop());
      restartWorker = async ({ downMs = 0 } = {}) => {
        await workers.stop();
        if (downMs) await new Promise((r) => setTimeout(r, downMs));
        workers = await startWorker();
      };
    }
    const gateway = await startTestGateway({ db, pool: createRequestPool(config, scratch.url), env: { DATABASE_URL: scratch.url } });
    cleanups.push(() => gateway.close());
    Object.assign(stack, {
      sim,
      db,
      pool,
      databaseUrl: scratch.url,
      config,
      client: temporal.client,
      gateway,
      restartWorker,
      account: () => newAccount(db),
    });
  }, 180_000);
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => {});
  }, 60_000);
  return stack;
}

/** The account's `notification` rows in the log, oldest first. */
export async function notificationsOf(stack: MonitorStack, accountId: number): Promise<LogRow[]> {
  const rows = await readLog(stack.pool, { after: 0, accountId, limit: 10_000 });
  return rows.filter((r) => r.kind === 'notification');
}

/** Polls until `check` returns a value (not undefined) or the time is up. */
// Generous: under a full parallel test run on two cores a poll, a workflow task and an
// activity can each wait seconds; a passing run returns as soon as the condition holds.
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 45_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
