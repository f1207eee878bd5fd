// The knex connection factory: one pool per process, configured for API latency
// (statement timeout so no request hangs, integers returned as numbers where safe).
import { inspect } from 'node:util';
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';

// COUNT(*) and bigint identity columns arrive as strings by default; ours stay far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export type Db = Knex;

/**
 * Far above any gap between two statements of one of our transactions (milliseconds; a second
 * or two of a stalled event loop on a loaded machine), and below the monitors' takeover of a
 * frozen worker's shard (its heartbeat timeout), so the new owner finds the locks free.
 */
export const IDLE_IN_TRANSACTION_MS = 10_000;

export interface DbOptions {
  connectionString: string;
  poolMax?: number;
  statementTimeoutMs?: number;
  /**
   * How long a session may sit idle inside a transaction before the server ends it, rolling back
   * and releasing its locks (default IDLE_IN_TRANSACTION_MS; 0 turns it off). A process frozen mid-transaction (SIGSTOP,
   * a VM paused, a debugger) otherwise holds its row and advisory locks until it wakes: a shard
   * poller frozen inside a poll's transaction kept that target's lock, and the worker that took
   * its shard over could record nothing of the target, timing out on the lock at every poll,
   * until the frozen one resumed (test/faults/paused-worker.test.ts, a full run on 7c095e5).
   */
  idleInTransactionTimeoutMs?: number;
  applicationName?: string;
  /**
   * Where knex's own warnings go (for example "Acquire connection error"). knex prints them
   * with console.log by default, which would corrupt the admin CLI's JSON on stdout and the
   * service's JSON log lines; the default here is stderr.
   */
  log?: (level: 'warn' | 'error' | 'deprecate' | 'debug', message: string) => void;
}

function stderrLog(level: string, message: string): void {
  process.stderr.write(`knex ${level}: ${message}\n`);
}

export function createDb(opts: DbOptions): Db {
  const log = opts.log ?? stderrLog;
  const text = (m: unknown) => (typeof m === 'string' ? m : inspect(m, { depth: 5 }));
  return knexFactory({
    client: 'pg',
    log: {
      warn: (m: unknown) => log('warn', text(m)),
      error: (m: unknown) => log('error', text(m)),
      deprecate: (m: unknown) => log('deprecate', text(m)),
      debug: (m: unknown) => log('debug', text(m)),
    },
    connection: {
      connectionString: opts.connectionString,
      application_name: opts.applicationName ?? 'ticket-market',
      statement_timeout: opts.statementTimeoutMs ?? 5_000,
      idle_in_transaction_session_timeout: opts.idleInTransactionTimeoutMs ?? IDLE_IN_TRANSACTION_MS,
      connectionTimeoutMillis: 3_000,
    },
    pool: { min: 0, max: opts.poolMax ?? 20, acquireTimeoutMillis: 5_000 },
    // A failed query's error carries its SQL with placeholders, never the values bound to it (a
    // key's hash, a webhook URL, a customer's data): errors are logged (issue 25).
    compileSqlOnError: false,
    acquireConnectionTimeout: 5_000,
  });
}
