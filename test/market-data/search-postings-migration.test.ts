// Migration 039 on a catalog that already has events: the service migrates with its own
// connections, whose statement timeout is a request's (DB_STATEMENT_TIMEOUT_MS, 5 s), and the
// backfill of a million events' postings takes a minute. Here a catalog of 2,000 events is taken
// back to before 039 and migrated again through connections with a 20 ms statement timeout,
// far under what its backfill takes: the migration completes, and the postings are the vectors'.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../../db/connection.ts';
import { migrateLatest } from '../../db/migrations/index.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { seedCatalog } from '../../src/market-data/seed/seed.ts';
import { databaseUrl } from '../support/harness.ts';

let scratch: ScratchDatabase;

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_postings_migration', databaseUrl());
}, 60_000);
afterAll(async () => {
  await scratch?.drop();
});

describe('migration 039 over an existing catalog', () => {
  it('completes through connections whose statement timeout its backfill outlasts, and backfills every posting', async () => {
    const db = createDb({ connectionString: scratch.url, poolMax: 2 });
    await seedCatalog(db, { events: 2_000, detail: 'light', seed: 5, now: new Date('2026-01-15T12:00:00Z') });
    // Back to before 039: its table, triggers and functions gone, its row in knex's ledger too.
    await db.raw('DROP TABLE search_postings');
    for (const op of ['insert', 'update', 'delete', 'truncate']) await db.raw(`DROP TRIGGER event_search_postings_${op} ON event_search`);
    await db.raw('DROP FUNCTION search_postings_insert(), search_postings_update(), search_postings_delete()');
    await db.raw("DELETE FROM knex_migrations WHERE name = '039_search_postings'");
    await db.destroy();

    const tight = createDb({ connectionString: scratch.url, poolMax: 1, statementTimeoutMs: 20 });
    try {
      // What the backfill alone takes, on a connection without the migration's own setting.
      await expect(tight.raw('SELECT count(*) FROM (SELECT pg_sleep(0.05)) x')).rejects.toThrow(/statement timeout/);
      expect(await migrateLatest(tight)).toEqual(['039_search_postings']);
    } finally {
      await tight.destroy();
    }
    const check = createDb({ connectionString: scratch.url, poolMax: 1 });
    try {
      const { rows } = await check.raw(`
        SELECT (SELECT count(*) FROM event_search s, unnest(tsvector_to_array(s.search_vector)) w)::int AS words,
               (SELECT count(*) FROM search_postings)::int AS postings`);
      expect(rows[0].postings).toBe(rows[0].words);
      expect(rows[0].postings).toBeGreaterThan(10_000);
    } finally {
      await check.destroy();
    }
  }, 120_000);
});
