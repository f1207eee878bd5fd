// The whole on-demand scrape path for a test file, all real: a platform simulator on a free
// port, a Temporal worker (workflows/ + activities/ with the real scrapers) on its own task
// queue on the run's server, a client, and the runner the gateway uses, starting runs eagerly on
// that worker as `npm start` does.
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll } from 'vitest';
import { TemporalScrapeRunner } from '../../src/apis/live-availability/scrape-runs.ts';
import { createLogger, type Logger } from '../../src/logger.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import { Registry } from 'prom-client';
import { createActivities } from '../../activities/index.ts';
import { createDb } from '../../db/connection.ts';
import { connectTemporal } from '../../temporal/client.ts';
import { WORKFLOWS_PATH } from '../../temporal/runtime.ts';
import { clientOnWorkers, startWorkers } from '../../temporal/worker.ts';
import { testConfig } from './harness.ts';
import { cachedBundle, temporalAddress, TEST_NAMESPACE, uniqueTaskQueue } from './temporal.ts';

export interface ScrapeStack {
  sim: Simulator;
  client: Client;
  taskQueue: string;
  timeoutMs: number;
  runner: TemporalScrapeRunner;
  /** The worker's own client: the runner starts runs eagerly with it, as under `npm start`. */
  localWorkers: Client;
}

/**
 * Starts the stack before the file's tests and stops it after. `timeoutMs` stands in for the
 * 60 s limit so time-outs are testable in seconds (each attempt gets a third of it). `env`:
 * settings of the worker on top of the stack's (e.g. a CHROMIUM_PATH that does not exist), or a
 * function giving them when the stack starts (after the file's earlier beforeAll hooks, e.g. once
 * its proxies listen). `log`: the worker's logger (default: TEST_LOG_LEVEL, silent).
 */
export function useScrapeStack(opts: { timeoutMs?: number; env?: Record<string, string> | (() => Record<string, string>); log?: Logger } = {}): ScrapeStack {
  const stack = {} as ScrapeStack;
  const cleanups: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    const timeoutMs = opts.timeoutMs ?? 4_500;
    const log = opts.log ?? createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
    const sim = await startSimulator({ empty: true });
    cleanups.push(() => sim.close());
    const taskQueue = uniqueTaskQueue('scrapes');
    // The worker reports its browser for its own queue, which is the one the runner reads reports of.
    const config = testConfig({ SCRAPE_TIMEOUT_MS: String(timeoutMs), BROWSER_PAGES: '2', SCRAPE_CONCURRENCY: '10', SCRAPE_TASK_QUEUE: taskQueue, ...(typeof opts.env === 'function' ? opts.env() : opts.env) });
    const address = temporalAddress();
    const temporal = await connectTemporal({ address, namespace: TEST_NAMESPACE });
    cleanups.push(() => temporal.close());
    const db = createDb({ connectionString: config.DATABASE_URL!, poolMax: 5 });
    cleanups.push(() => db.destroy());
    const { activities, warmed, close } = await createActivities({ config, log, db, connectionString: config.DATABASE_URL!, registry: new Registry(), baseUrls: sim.baseUrls });
    cleanups.push(close);
    // The worker of `npm start` has long been up by its first client-rendered scrape: the tests'
    // first pf_01 scrape must not pay for the sandbox probe and the browser's launch inside its
    // few seconds (on a loaded two-core machine they took 4 s, past the 4.5 s limit).
    await warmed;
    const workers = await startWorkers({
      connection: { address },
      namespace: TEST_NAMESPACE,
      queues: [{ taskQueue, workflowsPath: WORKFLOWS_PATH, activities, workflowBundle: await cachedBundle(WORKFLOWS_PATH) }],
      log,
      shutdownGraceMs: 1_000,
    });
    const runner = new TemporalScrapeRunner(temporal.client, { taskQueue, timeoutMs, browserReports: db });
    const localWorkers = clientOnWorkers(workers, TEST_NAMESPACE);
    runner.startOnLocalWorkers(localWorkers);
    cleanups.push(() => {
      runner.startOnLocalWorkers(null);
      return workers.stop();
    });
    Object.assign(stack, { sim, client: temporal.client, taskQueue, timeoutMs, runner, localWorkers });
  }, 120_000);
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  }, 60_000);
  return stack;
}

/** A simulator inventory section with the flags defaulted. */
export function section(name: string, price: number, stock: number, extra: Record<string, unknown> = {}) {
  return { name, price, stock, ticket_type: 'standard' as const, restricted_view: false, accessible: false, presale: false, ...extra };
}

// The control API helpers live in simulator.ts; re-exported for the files that import them from here.
export { hits, putEvent } from './simulator.ts';
