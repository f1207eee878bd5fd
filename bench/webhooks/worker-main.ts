// The webhook worker of `npm run bench:webhooks`, in a process of its own: the worker on the
// webhook task queue with the real activity and workflow, and the real dispatcher, built as
// temporal/runtime.ts builds them. Apart from the bench's process so the load (notification
// writes) and the receivers never wait on the worker's event loop, and its CPU is its own.
// Settings come from the environment (loadConfig), as for `npm run worker`. It tells the bench
// over IPC when it is ready and, every 250 ms, when each delivery's first attempt began (the
// dispatcher's), how many attempts ran (the report's stage split) and how its event loop fared;
// it stops on a message or SIGTERM.
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { createWebhookActivities } from '../../activities/webhooks.ts';
import { createDeliveryAttempts, type DeliveryAttempts } from '../../src/webhooks/attempt.ts';
import { createDb } from '../../db/connection.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { startDispatcher } from '../../src/webhooks/dispatcher.ts';
import { DEFAULT_SCHEDULE_MS } from '../../src/webhooks/retry-schedule.ts';
import { SecretBox } from '../../src/webhooks/secret-box.ts';
import { connectTemporal } from '../../temporal/client.ts';
import { WORKFLOWS_PATH } from '../../temporal/runtime.ts';
import { startWorkers } from '../../temporal/worker.ts';

/** The worker's event loop over the last report's window: the longest and the p99 delay (ms), and its utilisation (0-1). */
export interface LoopWindow {
  maxMs: number;
  p99Ms: number;
  utilisation: number;
}

export type WorkerMessage = { ready: true } | { starts: [number, number][]; executions: number; loop: LoopWindow };

const config = loadConfig(process.env);
// stdout is the bench's report: the worker's warnings go to stderr.
const log = createLogger(config.LOG_LEVEL, { write: (s: string) => process.stderr.write(s) });
const send = (m: WorkerMessage) => process.send?.(m);

const db = createDb({ connectionString: config.DATABASE_URL!, poolMax: 10, applicationName: 'worker', statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS });
const real = createDeliveryAttempts({
  db,
  box: new SecretBox(config.WEBHOOK_SECRET_KEY!),
  log,
  allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
  scheduleMs: config.WEBHOOK_RETRY_SCHEDULE_MS ?? DEFAULT_SCHEDULE_MS,
  perEndpointConcurrency: config.WEBHOOK_PER_ENDPOINT_CONCURRENCY,
});
let starts: [number, number][] = [];
const seen = new Set<number>();
let executions = 0;
// Only timed and counted, then the real attempt: the dispatcher's first ones and the activity's retries.
const attempts: DeliveryAttempts = {
  perEndpointConcurrency: real.perEndpointConcurrency,
  slotFreeInMs: real.slotFreeInMs,
  attempt(deliveryId) {
    executions++;
    if (!seen.has(deliveryId)) {
      seen.add(deliveryId);
      starts.push([deliveryId, Date.now()]);
    }
    return real.attempt(deliveryId);
  },
};
const activities = createWebhookActivities(db, attempts);
// The dispatcher's first attempts for every endpoint and the retries' activities share this one
// event loop: how long it kept a ready callback waiting says what the others' messages queued behind.
const delay = monitorEventLoopDelay({ resolution: 5 });
delay.enable();
let elu = performance.eventLoopUtilization();
const report = setInterval(() => {
  const now = performance.eventLoopUtilization();
  const loop = { maxMs: delay.max / 1e6, p99Ms: delay.percentile(99) / 1e6, utilisation: performance.eventLoopUtilization(now, elu).utilization };
  elu = now;
  delay.reset();
  send({ starts, executions, loop });
  starts = [];
}, 250);

const temporal = await connectTemporal({ address: config.TEMPORAL_ADDRESS!, namespace: config.TEMPORAL_NAMESPACE });
const workers = await startWorkers({
  connection: { address: config.TEMPORAL_ADDRESS! },
  namespace: config.TEMPORAL_NAMESPACE,
  queues: [{ taskQueue: config.WEBHOOK_TASK_QUEUE, workflowsPath: WORKFLOWS_PATH, activities, maxConcurrentActivityTaskExecutions: config.WEBHOOK_CONCURRENCY }],
  log,
  // Attempts still held by hanging endpoints at the end need not be waited for.
  shutdownGraceMs: 1_000,
});
const dispatcher = startDispatcher({
  db,
  connectionString: config.DATABASE_URL!,
  client: temporal.client,
  attempts,
  taskQueue: config.WEBHOOK_TASK_QUEUE,
  log,
});
send({ ready: true });

let stopping: Promise<void> | null = null;
const stop = () =>
  (stopping ??= (async () => {
    clearInterval(report);
    await dispatcher.stop().catch(() => {});
    await workers.stop().catch(() => {});
    await temporal.close().catch(() => {});
    await db.destroy().catch(() => {});
    process.exit(0);
  })());
process.on('message', () => void stop());
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
process.on('disconnect', () => void stop());
