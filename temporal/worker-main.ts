// `npm run worker`: the production worker process, apart from the gateway. WORKER_ROLE says
// which (temporal/worker-roles.ts): docker-compose's `scrape-worker` (scrapes, monitors and their
// relays, the browser; no secret) and `delivery-worker` (webhooks and Stripe billing; never the
// browser), or `all` of it in one process. Connects to TEMPORAL_ADDRESS and runs until SIGINT or
// SIGTERM, then lets activities in flight finish (bounded) and releases their resources. The
// shard pollers' metrics are on METRICS_PORT at /metrics.
import type http from 'node:http';
import { loadConfigOrExit } from '../src/config.ts';
import { Metrics } from '../src/gateway/metrics.ts';
import { createLogger } from '../src/logger.ts';
import { startLocalWorkers } from './runtime.ts';
import { refusal, roleQueues, roleSides } from './worker-roles.ts';
import { installSdkLogging } from './sdk-logging.ts';
import { ensureWebhookKey } from '../src/webhooks/secret-box.ts';

const STOP_DEADLINE_MS = 30_000;

const loaded = loadConfigOrExit();
const role = loaded.WORKER_ROLE;
const refused = refusal(role, process.env);
if (refused) {
  console.error(refused);
  process.exit(2);
}
// The delivery side needs the gateway's key: from the environment, else the one `npm start` keeps
// in DATA_DIR. A scrape worker never reads it, nor has it.
const config = roleSides(role).deliver ? { ...loaded, WEBHOOK_SECRET_KEY: (await ensureWebhookKey(loaded.WEBHOOK_SECRET_KEY, loaded.dataDir)).key } : loaded;
const log = createLogger(config.LOG_LEVEL).child({ process: 'worker' });
installSdkLogging(log);
// Without TEMPORAL_ADDRESS, join the dev server a local `npm start` (RUN_WORKER=false) runs.
const address = config.TEMPORAL_ADDRESS ?? `127.0.0.1:${config.TEMPORAL_PORT}`;

const metrics = new Metrics();
let workers: { stop(): Promise<void> };
let metricsServer: http.Server;
try {
  if (!config.DATABASE_URL) throw new Error('DATABASE_URL is required: the monitors read and write the service database');
  workers = await startLocalWorkers(config, log, address, { connectionString: config.DATABASE_URL, registry: metrics.registry, role });
  metricsServer = await metrics.listen(config.METRICS_PORT, config.HOST);
  // The last start-up step: a supervisor (or a test) waiting for this line knows nothing after it
  // can still fail the start (the metrics port in use did, after the workers were already polling).
  log.info({ role, task_queues: roleQueues(role, config), metrics: `${config.HOST}:${config.METRICS_PORT}` }, 'worker ready');
} catch (err) {
  console.error('worker failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
}

let stopping = false;
const stop = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, 'stopping');
  setTimeout(() => {
    log.error({ ms: STOP_DEADLINE_MS }, 'could not stop in time; exiting');
    process.exit(1);
  }, STOP_DEADLINE_MS).unref();
  try {
    await workers.stop();
    await new Promise((r) => metricsServer.close(r));
    log.info('stopped');
    process.exit(0);
  } catch (err) {
    log.error({ err }, 'error while stopping');
    process.exit(1);
  }
};
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));
