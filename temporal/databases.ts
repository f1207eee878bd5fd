// Temporal's two databases (persistence and visibility) for a run that brings its own PostgreSQL
// server (the rehearsal on DATABASE_URL, BENCH_TEMPORAL=server, the production-server test):
// created empty beside the run's own database, its schema left to setUpTemporalSchema (the
// server's own tool), and dropped with whatever connections are still open when the run ends.
import pg from 'pg';

export interface TemporalDatabaseNames {
  database: string;
  visibilityDatabase: string;
}

export interface TemporalDatabases {
  names: TemporalDatabaseNames;
  drop(): Promise<void>;
}

async function onServer(serverUrl: string, statements: readonly string[]): Promise<void> {
  const c = new pg.Client({ connectionString: serverUrl });
  await c.connect();
  try {
    for (const sql of statements) await c.query(sql);
  } finally {
    await c.end();
  }
}

/**
 * Creates `${prefix}_temporal` and `${prefix}_temporal_visibility` on `serverUrl`'s server
 * (`prefix` must be an SQL identifier's worth of [a-z0-9_]); `onCreated` hears each name as it is
 * made, so a caller that records what it started can drop them even if the second fails.
 */
export async function createTemporalDatabases(serverUrl: string, prefix: string, onCreated: (name: string) => void = () => {}): Promise<TemporalDatabases> {
  if (!/^[a-z_][a-z0-9_]*$/.test(prefix)) throw new Error(`"${prefix}" is not a database name prefix`);
  const names: TemporalDatabaseNames = { database: `${prefix}_temporal`, visibilityDatabase: `${prefix}_temporal_visibility` };
  for (const name of Object.values(names)) {
    await onServer(serverUrl, [`CREATE DATABASE ${name}`]);
    onCreated(name);
  }
  return { names, drop: () => onServer(serverUrl, Object.values(names).map((name) => `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)) };
}
