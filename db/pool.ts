// A plain node-postgres pool for the gateway's per-request statements (admission, rate limit,
// captures). On this hardware a round trip through knex's builder costs ~1.5x one through pg
// directly (bench/ figures, docs/performance.md), and the gateway makes one such trip per request.
import pg from 'pg';

export type Pool = pg.Pool;

export function createPool(opts: { connectionString: string; max?: number; statementTimeoutMs?: number; applicationName?: string }): Pool {
  const pool = new pg.Pool({
    connectionString: opts.connectionString,
    max: opts.max ?? 20,
    statement_timeout: opts.statementTimeoutMs ?? 5_000,
    application_name: opts.applicationName ?? 'ticket-market-gateway',
    connectionTimeoutMillis: 3_000,
    idleTimeoutMillis: 30_000,
  });
  // An idle client whose server went away emits 'error' on the pool; without a listener Node
  // would crash the process. The next query reports the failure to its caller instead.
  pool.on('error', () => {});
  return pool;
}
