// Builds a stream node from the service's configuration and database: inside `npm start` it
// shares the gateway's key cache, rate limiter and metrics registry; `npm run stream` builds its
// own (src/stream/main.ts). The node gets its own small pool so replays after a restart (every
// client reconnecting at once) never take the gateway's connections.
import type { SlotTimings } from './connection-slots.ts';
import type { Registry } from 'prom-client';
import type { Db } from '../../db/connection.ts';
import { createPool, warmPool } from '../../db/pool.ts';
import type { Config } from '../config.ts';
import { AdmissionGroups } from '../gateway/admissions.ts';
import { KeyVerifier } from '../gateway/key-verifier.ts';
import { RateLimiter } from '../gateway/rate-limit.ts';
import type { Logger } from '../logger.ts';
import type { AdmissionDeps } from './admission.ts';
import { StreamMetrics } from './metrics.ts';
import { startStreamServer, type StreamServer } from './server.ts';

/** Connections of the node's own pool: replays, log reads, and its rate limiter when standalone. */
const STREAM_POOL_MAX = 8;
/**
 * Connections opened before the node listens: a node that starts (or restarts) meets its clients
 * all at once, and the first batches of upgrades would otherwise wait for connections to be made
 * (the two admission lanes, the rate limiter's reads and a replay).
 */
const WARM_CONNECTIONS = 4;

export interface StreamNode {
  server: StreamServer;
  close(): Promise<void>;
}

export async function startStreamNode(opts: {
  config: Config;
  db: Db;
  connectionString: string;
  log: Logger;
  registry: Registry;
  /** The gateway's, when running in its process; else the node makes its own. */
  keys?: AdmissionDeps['keys'];
  limiter?: AdmissionDeps['limiter'];
  keyRecheckMs?: number;
  slotTimings?: SlotTimings;
}): Promise<StreamNode> {
  const { config } = opts;
  const pool = createPool({
    connectionString: opts.connectionString,
    max: STREAM_POOL_MAX,
    statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
    applicationName: 'stream',
  });
  try {
    await warmPool(pool, WARM_CONNECTIONS);
    const server = await startStreamServer({
      config,
      connectionString: opts.connectionString,
      pool,
      log: opts.log,
      metrics: new StreamMetrics(opts.registry),
      keys: opts.keys ?? new KeyVerifier(opts.db, config.KEY_CACHE_TTL_MS),
      limiter: opts.limiter ?? new RateLimiter(new AdmissionGroups(pool), pool),
      keyRecheckMs: opts.keyRecheckMs,
      slotTimings: opts.slotTimings,
    });
    return {
      server,
      close: async () => {
        await server.close();
        await pool.end();
      },
    };
  } catch (err) {
    await pool.end();
    throw err;
  }
}
