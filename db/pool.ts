// A plain node-postgres pool for the gateway's per-request statements (admission, rate limit,
// captures). On this hardware a round trip through knex's builder costs ~1.5x one through pg
// directly (bench/ figures, docs/performance.md), and the gateway makes one such trip per request.
import pg from 'pg';
import { IDLE_IN_TRANSACTION_MS } from './connection.ts';

export type Pool = pg.Pool;

export function createPool(opts: { connectionString: string; max?: number; statementTimeoutMs?: number; applicationName?: string }): Pool {
  const pool = new pg.Pool({
    connectionString: opts.connectionString,
    max: opts.max ?? 20,
    statement_timeout: opts.statementTimeoutMs ?? 5_000,
    // As the knex pool's (db/connection.ts): a frozen process must not keep its locks.
    idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
    application_name: opts.applicationName ?? 'ticket-market-gateway',
    connectionTimeoutMillis: 3_000,
    idleTimeoutMillis: 30_000,
    // A statement the server has not answered well past its own timeout was lost on the way (a
    // partition): the query fails and pool.query discards its client, rather than the client
    // staying checked out until TCP gives up, minutes later, with the pool's few slots.
    query_timeout: (opts.statementTimeoutMs ?? 5_000) + 2_000,
    keepAlive: true,
  });
  // An idle client whose server went away emits 'error' on the pool; without a listener Node
  // would crash the process. The next query reports the failure to its caller instead.
  pool.on('error', () => {});
  return pool;
}

const DEADLOCK = '40P01';

/**
 * `pool.query`, sent again (up to 3 times in all) when PostgreSQL aborts it as one side of a
 * deadlock: for single-statement transactions whose rows other writers lock in another order
 * (grouped admissions of two processes). Anything else is thrown at once.
 */
export async function queryRetryingDeadlocks<R extends pg.QueryResultRow>(pool: Pool, sql: string, params: unknown[]): Promise<pg.QueryResult<R>> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await pool.query<R>(sql, params);
    } catch (err) {
      if ((err as { code?: string }).code !== DEADLOCK || attempt >= 3) throw err;
    }
  }
}
