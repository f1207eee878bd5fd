// The real path under a Temporal-driven end-to-end test file, set up one way for the monitors
// (monitor-stack.ts) and the event tracker (test/tracking/tracking-stack.ts) so both exercise the
// same wiring: the file's own scratch database (its workflows and streams see only its rows), the
// platform simulator (empty), a Temporal client, a worker with the real activities on the file's
// unique queues, and a real gateway over the scratch database. The worker runs in the test
// process, or as the production entry point `temporal/worker-main.ts` in a child process that
// fault tests can SIGKILL (restartWorker) or pause (worker().signal), beside more such workers
// (addWorker). Each stack adds only what its own path needs on top.
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import type { Client } from '@temporalio/client';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { Registry } from 'prom-client';
import { createActivities, type ActivityDeps } from '../../activities/index.ts';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase } from '../../db/scratch.ts';
import type { Config } from '../../src/config.ts';
import type { Services } from '../../src/gateway/request-state.ts';
import { createLogger, type Logger } from '../../src/logger.ts';
import { reservePort } from '../../src/runtime/ports.ts';
import { createRequestPool } from '../../src/runtime/services.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import { connectTemporal } from '../../temporal/client.ts';
import { WORKFLOWS_PATH } from '../../temporal/runtime.ts';
import { startWorkers } from '../../temporal/worker.ts';
import { databaseUrl, PROJECT_ROOT, startTestGateway, testConfig, type TestGateway } from './harness.ts';
import { cachedBundle, temporalAddress, TEST_NAMESPACE, uniqueTaskQueue } from './temporal.ts';

/** What a stack has before its worker and gateway start. */
export interface StackBase {
  sim: Simulator;
  db: Db;
  /** The scratch database's. */
  databaseUrl: string;
  config: Config;
  client: Client;
}

/** A child-process worker (`temporal/worker-main.ts`) of the stack. */
export interface ChildWorker {
  pid: number;
  /** Its Temporal worker identity (the SDK's default, `pid@host`): pending activities name it. */
  identity: string;
  /** Its /metrics (the shard pollers' counters are per process). */
  metricsUrl: string;
  /** What it has printed so far, stdout and stderr. */
  output(): string;
  /** Sends it a signal (SIGSTOP and SIGCONT for a paused process). */
  signal(sig: NodeJS.Signals): void;
}

export interface WorkerStack extends StackBase {
  gateway: TestGateway;
  /**
   * Stops the worker and starts it again: in-process a graceful stop, a child process SIGKILLed
   * as a crash would be. `whileDown` runs while no worker serves the queues.
   */
  restartWorker(opts?: { downMs?: number; whileDown?: () => Promise<void> }): Promise<void>;
  /** What the child-process worker has printed so far, stdout and stderr (empty in-process). */
  workerOutput(): string;
  /** The child-process worker's /metrics (null in-process). */
  metricsUrl: string | null;
  /** The child-process worker now running (null in-process). */
  worker(): ChildWorker | null;
  /**
   * Starts one more child-process worker on the same queues, settings and database (stopped with
   * the stack): two workers sharing the shard polls. Child-process stacks only.
   */
  addWorker(): Promise<ChildWorker>;
}

export interface WorkerStackSpec<S> {
  /** The scratch database's name prefix. */
  database: string;
  /** Settings on top of testConfig's (the scratch DATABASE_URL is added). */
  env: Record<string, string>;
  worker?: 'in-process' | 'child-process';
  /** How long an in-process worker's stop lets activities finish (default 500 ms). */
  shutdownGraceMs?: number;
  /** The queues an in-process worker serves (a child process serves the production ones). */
  queues(config: Config): string[];
  /** The activities' test settings for an in-process worker. */
  activities?(base: StackBase): Pick<ActivityDeps, 'marketplaceBaseUrls'>;
  /**
   * What a child-process worker needs besides its database, Temporal, queues and platform URLs
   * (and may replace: a DATABASE_URL of another role, test/temporal/scrape-worker-role.test.ts).
   */
  childEnv(base: StackBase): Record<string, string> | Promise<Record<string, string>>;
  /** Settings the gateway gets on top of testConfig's (the scratch DATABASE_URL is added). */
  gatewayEnv?: Record<string, string>;
  /**
   * The server the scratch database is made on (a superuser's URL); default the run's. A fault
   * test that stops its database passes a server of its own (private-postgres.ts).
   */
  serverUrl?: () => string;
  /** Services the gateway is given in place of its own. */
  services?(base: StackBase): Partial<Services>;
  /** The file's stack from the common one; `onClose` adds a stop to run after the file's tests. */
  build(stack: WorkerStack, setup: { log: Logger; onClose(stop: () => Promise<unknown>): void }): Promise<S>;
}

/** The production worker entry (`npm run worker`) as a child process; resolves once it serves its queues. */
async function spawnWorker(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; output: () => string; handle: ChildWorker }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'temporal/worker-main.ts'], { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker not ready within 90 s:\n${output}`)), 90_000);
    const onData = (b: Buffer) => {
      output += b.toString();
      // The worker's last start-up line (temporal/worker-main.ts): the workers already poll at
      // "Temporal workers running", and the metrics server may still fail the start after it.
      if (output.includes('"msg":"worker ready"')) {
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
  // onData keeps reading its output (a full pipe would block it) for tests that look at it.
  const handle: ChildWorker = {
    pid: child.pid!,
    identity: `${child.pid}@${os.hostname()}`,
    metricsUrl: `http://127.0.0.1:${env.METRICS_PORT}/metrics`,
    output: () => output,
    signal: (sig) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(sig);
    },
  };
  return { child, output: () => output, handle };
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  // A stopped process (SIGSTOP) dies of SIGKILL too; SIGCONT only spares its exit a wait.
  child.kill('SIGCONT');
  await exited;
}

/** Starts the stack before the file's tests and stops it, in reverse order, after them. */
export function useWorkerStack<S extends object>(spec: WorkerStackSpec<S>): S {
  const stack = {} as S;
  const cleanups: (() => Promise<unknown>)[] = [];
  const onClose = (stop: () => Promise<unknown>) => {
    cleanups.push(stop);
  };
  beforeAll(async () => {
    const log = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
    const scratch = await createScratchDatabase(spec.database, spec.serverUrl?.() ?? databaseUrl());
    onClose(() => scratch.drop());
    const sim = await startSimulator({ empty: true });
    onClose(() => sim.close());
    // Every queue of the file's own, named or not: a child-process worker serves the webhook and
    // billing queues too, and on the default names it would take other files' tasks (and they its).
    const config = testConfig({ WEBHOOK_TASK_QUEUE: uniqueTaskQueue('webhooks'), BILLING_TASK_QUEUE: uniqueTaskQueue('billing'), ...spec.env, DATABASE_URL: scratch.url });
    const db = createDb({ connectionString: scratch.url, poolMax: 10 });
    onClose(() => db.destroy());
    const address = temporalAddress();
    const temporal = await connectTemporal({ address, namespace: TEST_NAMESPACE });
    onClose(() => temporal.close());
    const base: StackBase = { sim, db, databaseUrl: scratch.url, config, client: temporal.client };

    let restartWorker: WorkerStack['restartWorker'];
    let workerOutput: WorkerStack['workerOutput'] = () => '';
    let metricsUrl: string | null = null;
    let currentWorker: () => ChildWorker | null = () => null;
    let addWorker: WorkerStack['addWorker'] = () => Promise.reject(new Error('addWorker: only a child-process stack runs more workers'));
    if (spec.worker === 'child-process') {
      const metricsPort = await reservePort();
      metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        DATABASE_URL: scratch.url,
        TEMPORAL_ADDRESS: address,
        TEMPORAL_NAMESPACE: TEST_NAMESPACE,
        SCRAPE_TASK_QUEUE: config.SCRAPE_TASK_QUEUE,
        MONITOR_TASK_QUEUE: config.MONITOR_TASK_QUEUE,
        WEBHOOK_TASK_QUEUE: config.WEBHOOK_TASK_QUEUE,
        BILLING_TASK_QUEUE: config.BILLING_TASK_QUEUE,
        // The gateway's key, so the worker opens what it sealed; without it the worker would make
        // one of its own in DATA_DIR, the checkout's ./data.
        ...(config.WEBHOOK_SECRET_KEY ? { WEBHOOK_SECRET_KEY: config.WEBHOOK_SECRET_KEY } : {}),
        ...(await spec.childEnv(base)),
        BROWSER_PAGES: '1',
        LOG_LEVEL: 'info',
        // Its own metrics port, on loopback: the default 9464 is taken by any other file's worker
        // running at the same time, and a worker that cannot listen exits.
        HOST: '127.0.0.1',
        METRICS_PORT: String(metricsPort),
        ...Object.fromEntries(Object.entries(sim.baseUrls).map(([k, url]) => [`${k.toUpperCase()}_BASE_URL`, url])),
      };
      let worker = await spawnWorker(env);
      onClose(() => kill(worker.child));
      restartWorker = async ({ downMs = 0, whileDown } = {}) => {
        await kill(worker.child);
        await whileDown?.();
        if (downMs) await new Promise((r) => setTimeout(r, downMs));
        worker = await spawnWorker(env);
      };
      workerOutput = () => worker.output();
      currentWorker = () => worker.handle;
      addWorker = async () => {
        const extra = await spawnWorker({ ...env, METRICS_PORT: String(await reservePort()) });
        onClose(() => kill(extra.child));
        return extra.handle;
      };
    } else {
      const { activities, handBack, close } = await createActivities({ config, log, db, connectionString: scratch.url, registry: new Registry(), baseUrls: sim.baseUrls, ...spec.activities?.(base) });
      onClose(close);
      const workflowBundle = await cachedBundle(WORKFLOWS_PATH);
      const startWorker = () =>
        startWorkers({
          connection: { address },
          namespace: TEST_NAMESPACE,
          queues: spec.queues(config).map((taskQueue) => ({ taskQueue, workflowsPath: WORKFLOWS_PATH, activities, workflowBundle })),
          log,
          shutdownGraceMs: spec.shutdownGraceMs ?? 500,
          onShutdown: handBack,
        });
      let workers = await startWorker();
      onClose(() => workers.stop());
      restartWorker = async ({ downMs = 0, whileDown } = {}) => {
        await workers.stop();
        await whileDown?.();
        if (downMs) await new Promise((r) => setTimeout(r, downMs));
        workers = await startWorker();
      };
    }

    const gateway = await startTestGateway({
      db,
      pool: createRequestPool(config, scratch.url),
      env: { ...spec.gatewayEnv, DATABASE_URL: scratch.url },
      services: spec.services?.(base),
    });
    onClose(() => gateway.close());
    Object.assign(
      stack,
      await spec.build({ ...base, gateway, restartWorker, workerOutput: () => workerOutput(), metricsUrl, worker: () => currentWorker(), addWorker: () => addWorker() }, { log, onClose }),
    );
  }, 180_000);
  // A failed test in a child-process file shows what the worker said, which the test cannot:
  // a worker that took no task for a minute is otherwise a bare time-out.
  afterEach((ctx) => {
    const output = (stack as Partial<WorkerStack>).workerOutput?.() ?? '';
    if (ctx.task.result?.state !== 'fail' || !output) return;
    process.stderr.write(`\n--- "${ctx.task.name}" failed; the worker process's last output ---\n${output.slice(-8_000)}\n--- end of the worker's output ---\n`);
  });
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => {});
  }, 60_000);
  return stack;
}
