// `npm run worker`: the production worker process (docker-compose's `worker` service), apart
// from the gateway. Connects to TEMPORAL_ADDRESS, runs both task queues' workers and the monitor
// and membership relays until SIGINT or SIGTERM, then lets activities in flight finish (bounded)
// and releases their resources. The shard pollers' metrics are on METRICS_PORT at /metrics.
import type http from 'node:http';
import { loadConfigOrExit } from '../src/config.ts';
import { Metrics } from '../src/gateway/metrics.ts';
import { createLogger } from '../src/logger.ts';
import { startLocalWorkers } from './runtime.ts';
import { installSdkLogging } from './sdk-logging.ts';
import { ensureWebhookKey } from '../src/webhooks/secret-box.ts';

const STOP_DEADLINE_MS = 30_000;

const loaded = loadConfigOrExit();
// The same key as the gateway's: from the environment, else the one `npm start` keeps in DATA_DIR.
const config = { ...loaded, WEBHOOK_SECRET_KEY: (await ensureWebhookKey(loaded.WEBHOOK_SECRET_KEY, loaded.dataDir)).key };
const log = createLogger(config.LOG_LEVEL).child({ process: 'worker' });
installSdkLogging(log);
// Without TEMPORAL_ADDRESS, join the dev server a local `npm start` (RUN_WORKER=false) runs.
const address = config.TEMPORAL_ADDRESS ?? `127.0.0.1:${config.TEMPORAL_PORT}`;

const metrics = new Metrics();
let workers: { stop(): Promise<void> };
let metricsServer: http.Server;
try {
  if (!config.DATABASE_URL) throw new Error('DATABASE_URL is required: the monitors read and write the service database');
  workers = await startLocalWorkers(config, log, address, { connectionString: config.DATABASE_URL, registry: metrics.registry });
  metricsServer = await metrics.listen(config.METRICS_PORT, config.HOST);
  // The last start-up step: a supervisor (or a test) waiting for this line knows nothing after it
  // can still fail the start (the metrics port in use did, after the workers were already polling).
  log.info({ metrics: `${config.HOST}:${config.METRICS_PORT}` }, 'worker ready');
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
