// The gateway alone (every API, no Temporal, simulator or stream) on PORT against DATABASE_URL,
// in its own process, so bench:search can time searches through real HTTP, authentication and
// metering without the load generator sharing the server's event loop.
import { APIS } from '../../src/apis/index.ts';
import { loadConfig } from '../../src/config.ts';
import { createDb } from '../../db/connection.ts';
import { createGateway } from '../../src/gateway/app.ts';
import { createLogger } from '../../src/logger.ts';
import { createRequestPool, createServices } from '../../src/runtime/services.ts';

const config = loadConfig({ ...process.env, LOG_LEVEL: 'warn' });
const db = createDb({ connectionString: config.DATABASE_URL!, poolMax: 4 });
const services = createServices(config, db, createRequestPool(config, config.DATABASE_URL!), createLogger('warn'));
const server = createGateway(services, APIS).listen(config.PORT, '127.0.0.1');
process.on('SIGINT', () => server.close(() => process.exit(0)));
