// A throwaway, migrated database for test runs and benchmarks: created on DATABASE_URL's
// server when given, else on an embedded PostgreSQL in a temp directory; dropped afterwards.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createDb } from './connection.ts';
import { startEmbeddedPostgres } from './embedded.ts';
import { migrateLatest } from './migrations/index.ts';
import { reservePort } from '../src/runtime/ports.ts';

export interface ScratchDatabase {
  url: string;
  drop(): Promise<void>;
}

export async function createScratchDatabase(prefix: string, baseUrl = process.env.DATABASE_URL): Promise<ScratchDatabase> {
  let base = baseUrl;
  let stopEmbedded = async () => {};
  let tmp: string | undefined;
  if (!base) {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), `${prefix}-pg-`));
    // As root the server runs as `postgres`: a directory it can reach keeps the cluster in it (rather
    // than under SHARED_ROOT, db/cluster-location.ts), so removing the directory removes the cluster.
    await fs.chmod(tmp, 0o755);
    // Reserved, not drawn at random: a random port could be any other process's (issue 35).
    const port = await reservePort();
    const embedded = await startEmbeddedPostgres(tmp, port, (m) => process.stderr.write(`${m}\n`));
    // The superuser's: a scratch database is created and dropped, as on DATABASE_URL's server.
    base = embedded.superuserConnectionString;
    stopEmbedded = embedded.stop;
  }
  const name = `${prefix}_${Date.now().toString(36)}_${process.pid}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const u = new URL(base);
  u.pathname = `/${name}`;
  const url = u.toString();
  const db = createDb({ connectionString: url, poolMax: 2 });
  await migrateLatest(db);
  await db.destroy();
  return {
    url,
    drop: async () => {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
      await stopEmbedded();
      if (tmp) await fs.rm(tmp, { recursive: true, force: true });
    },
  };
}
