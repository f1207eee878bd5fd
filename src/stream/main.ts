// `npm run stream`: a stream node on its own (production: behind the reverse proxy, scaled by
// replicas). The same node `npm start` runs inside the gateway's process, here with its own key
// cache, rate limiter and /metrics on METRICS_PORT. SIGINT/SIGTERM close every connection with
// 1001 (clients resume from the log on another node) and end the LISTEN connection.
import { loadConfigOrExit } from '../config.ts';
import { Metrics } from '../gateway/metrics.ts';
import { createLogger } from '../logger.ts';
import { openDatabase } from '../runtime/database.ts';
import { assertNativeUws } from './native-uws.ts';
import { STREAM_PATH } from './protocol.ts';
import { startStreamNode } from './start.ts';

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const log = createLogger(config.LOG_LEVEL);
  // Before anything else: a node on the fallback would serve, slowly and without its bounds.
  assertNativeUws();
  const database = await openDatabase(config, (msg) => log.info(msg), {
    applicationName: 'stream',
    poolMax: 4,
    log: (level, msg) => log.warn({ source: 'knex', level }, msg),
  });
  const metrics = new Metrics();
  let node;
  let metricsServer;
  try {
    node = await startStreamNode({ config, db: database.db, connectionString: database.connectionString, log, registry: metrics.registry });
    metricsServer = await metrics.listen(config.METRICS_PORT, config.HOST);
  } catch (err) {
    await node?.close();
    await database.close();
    throw err;
  }
  log.info({ port: node.server.port, metrics_port: config.METRICS_PORT }, `stream listening on ws://localhost:${node.server.port}${STREAM_PATH}`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stream: stopping');
    const deadline = setTimeout(() => process.exit(1), 10_000);
    deadline.unref();
    try {
      await node.close();
      await new Promise((r) => metricsServer.close(r));
      await database.close();
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'stream: error while stopping');
      process.exit(1);
    }
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err: unknown) => {
  process.stderr.write(`failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
