// `npm start`: the whole service on embedded defaults. PostgreSQL (DATABASE_URL or embedded),
// migrations, the demo account on first start, the gateway on PORT and metrics on
// METRICS_PORT. Ctrl-C stops everything cleanly; data persists under DATA_DIR.
import type { Server } from 'node:http';
import { APIS } from './apis/index.ts';
import { ensureDemoAccount } from './accounts/demo.ts';
import { ConfigError, loadConfig } from './config.ts';
import { createGateway } from './gateway/app.ts';
import { createLogger } from './logger.ts';
import { openDatabase } from './runtime/database.ts';
import { createServices, startHousekeeping } from './runtime/services.ts';

function listen(app: ReturnType<typeof createGateway>, port: number, host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(port, host);
    server.once('listening', () => resolve(server));
    server.once('error', reject);
  });
}

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config.LOG_LEVEL);
  const started = performance.now();
  const database = await openDatabase(config, (msg) => log.info(msg), { applicationName: 'gateway' });
  log.info({ embedded: database.embedded }, 'database ready');

  if (config.DEMO_ACCOUNT) {
    const demo = await ensureDemoAccount(database.db, config.dataDir);
    if (demo.created) {
      console.log(`\n  Demo account created. Its API key (shown once, also saved in ${demo.keyFile}):\n\n    ${demo.key}\n`);
    } else {
      console.log(`\n  Demo account: its key was printed at first start and saved in ${demo.keyFile}\n`);
    }
  }

  const services = createServices(config, database.db, log);
  const app = createGateway(services, APIS);
  const server = await listen(app, config.PORT, config.HOST);
  const metricsServer = await services.metrics.listen(config.METRICS_PORT, config.HOST);
  const stopHousekeeping = startHousekeeping(services);
  log.info(
    { port: config.PORT, metrics_port: config.METRICS_PORT, ms: Math.round(performance.now() - started) },
    `gateway listening on http://localhost:${config.PORT} (OpenAPI at /openapi.json)`,
  );

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping');
    stopHousekeeping();
    server.closeIdleConnections();
    await Promise.all([new Promise((r) => server.close(r)), new Promise((r) => metricsServer.close(r))]);
    await database.close();
    log.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err) => {
  console.error('failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});
