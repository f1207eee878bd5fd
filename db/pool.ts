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
  // A checked-out client has no pool listener, and a promise from pool.connect() hands it over a
  // microtask late: a server shutting down (57P01) whose goodbye came in the same packet as the
  // connection's ReadyForQuery reached the client before any caller could listen, and crashed the
  // process (CI, Ctrl-C during start-up). Every client listens from its first moment; a failed one
  // is not queryable, so its next query fails and pg-pool drops it when it is released.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/**
 * Opens `n` connections at once and puts them back idle, so the first burst of work does not
 * wait for connections to be made. A client's errors while it is held go to the listener every
 * client of createPool has from its 'connect' event (a server shutting down meanwhile: a
 * terminal's Ctrl-C reaches the embedded PostgreSQL too), and pg-pool drops a client that failed
 * when it is released. Every client obtained is released before a failure is thrown: one left
 * checked out would hold `pool.end()` for ever.
 */
export async function warmPool(pool: Pool, n: number): Promise<void> {
  const held = await Promise.allSettled(Array.from({ length: n }, () => pool.connect()));
  for (const h of held) if (h.status === 'fulfilled') h.value.release();
  const failed = held.find((h) => h.status === 'rejected');
  if (failed) throw failed.reason;
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
