// The real gateway in the bench's own process, over a scratch database, on a loopback port,
// stopped by the bench's lifecycle: what bench:monitors and bench:webhooks create their accounts,
// items and webhooks through.
import type { Server } from 'node:http';
import { APIS } from '../../src/apis/index.ts';
import type { Config } from '../../src/config.ts';
import { createGateway } from '../../src/gateway/app.ts';
import { Metrics } from '../../src/gateway/metrics.ts';
import type { Logger } from '../../src/logger.ts';
import { closeServices, createRequestPool, createServices } from '../../src/runtime/services.ts';
import { createDb, type Db } from '../../db/connection.ts';
import type { Lifecycle } from '../monitors/lifecycle.ts';

export async function startBenchGateway(config: Config, databaseUrl: string, log: Logger, life: Lifecycle): Promise<{ url: string; db: Db }> {
  const db = createDb({ connectionString: databaseUrl, poolMax: config.DB_POOL_MAX, applicationName: 'gateway', statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS });
  const services = createServices(config, db, createRequestPool(config, databaseUrl), log, new Metrics(false));
  const server: Server = createGateway(services, APIS).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  life.onCleanup('gateway', async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await closeServices(services);
    await db.destroy();
  });
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, db };
}
