// Opens the service's database: DATABASE_URL when given, else the embedded PostgreSQL under
// DATA_DIR (as the role that owns the database, db/embedded.ts); applies pending migrations and,
// with SCRAPER_DB_ROLE, the scrape worker's rights. Shared by `npm start`, the admin CLI and
// `npm run migrate`.
import type { Config } from '../config.ts';
import { createDb, type Db, type DbOptions } from '../../db/connection.ts';
import { startEmbeddedPostgres } from '../../db/embedded.ts';
import { migrateLatest } from '../../db/migrations/index.ts';
import { applyScraperGrants } from '../../db/scraper-grants.ts';

export interface OpenDatabase {
  db: Db;
  /** Where `db` connects: DATABASE_URL, or the embedded server's address. */
  connectionString: string;
  embedded: boolean;
  /** The embedded server's cluster directory (null with DATABASE_URL): where the data is. */
  clusterDir: string | null;
  close(): Promise<void>;
}

export async function openDatabase(
  config: Config,
  progress: (msg: string) => void,
  opts: { applicationName?: string; poolMax?: number; log?: DbOptions['log'] } = {},
): Promise<OpenDatabase> {
  let connectionString = config.DATABASE_URL;
  let stopEmbedded = async () => {};
  let clusterDir: string | null = null;
  if (!connectionString) {
    const embedded = await startEmbeddedPostgres(config.dataDir, config.EMBEDDED_PG_PORT, progress);
    connectionString = embedded.connectionString;
    stopEmbedded = embedded.stop;
    clusterDir = embedded.clusterDir;
  }
  const db = createDb({
    connectionString,
    poolMax: opts.poolMax ?? config.DB_POOL_MAX,
    statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
    applicationName: opts.applicationName,
    log: opts.log,
  });
  try {
    const applied = await migrateLatest(db);
    if (applied.length) progress(`applied migrations: ${applied.join(', ')}`);
    if (config.SCRAPER_DB_ROLE) {
      await applyScraperGrants(db, config.SCRAPER_DB_ROLE);
      progress(`granted the scrape worker's rights to ${config.SCRAPER_DB_ROLE}`);
    }
  } catch (err) {
    await db.destroy();
    await stopEmbedded();
    throw err;
  }
  return {
    db,
    connectionString,
    embedded: !config.DATABASE_URL,
    clusterDir,
    close: async () => {
      await db.destroy();
      await stopEmbedded();
    },
  };
}
