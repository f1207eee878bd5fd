// bench:stream's "ours": the real stream node (uWebSockets.js, key checks at upgrade, its log
// follower LISTENing on the bench database), with the bench source publishing through the same
// StreamHub.publish its follower calls. Controlled by its parent over IPC.
import { Registry } from 'prom-client';
import type { WebSocket } from 'uWebSockets.js';
import type { Connection } from '../../src/stream/connection.ts';
import { createDb } from '../../db/connection.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { startStreamNode } from '../../src/stream/start.ts';
import { serveCommands } from './server-ipc.ts';
import { Source } from './source.ts';

const config = loadConfig({ ...process.env, HOST: '127.0.0.1', STREAM_PORT: '0', LOG_LEVEL: process.env.LOG_LEVEL ?? 'error' });
const db = createDb({ connectionString: config.DATABASE_URL!, poolMax: 4 });
const registry = new Registry();
const node = await startStreamNode({ config, db, connectionString: config.DATABASE_URL!, log: createLogger(config.LOG_LEVEL), registry });
const accounts = (process.env.BENCH_ACCOUNTS ?? '').split(',').map(Number);
// A sample of the open connections, refreshed every second, for the source's flow control.
let sample: WebSocket<Connection>[] = [];
setInterval(() => (sample = [...node.server.hub.open].filter((_, i) => i % 97 === 0).slice(0, 128)), 1_000).unref();
const source = new Source(
  (rows, start) => node.server.hub.publish(rows, start),
  () => sample.reduce((max, ws) => (ws.getUserData().closed ? max : Math.max(max, ws.getBufferedAmount())), 0),
  accounts,
  Number(process.env.BENCH_PAD ?? 0),
);

serveCommands(source, node.server.port, async () => {
  const metric = registry.getSingleMetric('stream_slow_consumer_closes_total');
  const slow = metric ? (await metric.get()).values[0]?.value ?? 0 : 0;
  return { slowCloses: slow, connections: node.server.hub.open.size };
}, async () => {
  await node.close();
  await db.destroy();
});
