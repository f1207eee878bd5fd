// The knex connection factory: one pool per process, configured for API latency
// (statement timeout so no request hangs, integers returned as numbers where safe).
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';

// COUNT(*) and bigint identity columns arrive as strings by default; ours stay far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export type Db = Knex;

export interface DbOptions {
  connectionString: string;
  poolMax?: number;
  statementTimeoutMs?: number;
  applicationName?: string;
}

export function createDb(opts: DbOptions): Db {
  return knexFactory({
    client: 'pg',
    connection: {
      connectionString: opts.connectionString,
      application_name: opts.applicationName ?? 'ticket-market',
      statement_timeout: opts.statementTimeoutMs ?? 5_000,
      connectionTimeoutMillis: 3_000,
    },
    pool: { min: 0, max: opts.poolMax ?? 20, acquireTimeoutMillis: 5_000 },
    acquireConnectionTimeout: 5_000,
  });
}
