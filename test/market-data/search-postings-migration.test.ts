// Migrations 039 and 041 on a catalog that already has events: the service migrates with its
// own connections, whose statement timeout is a request's (DB_STATEMENT_TIMEOUT_MS, 5 s), and
// building a million events' postings takes a minute. Here a catalog of 10,000 events (40,000 for 041) is taken
// back to before each and migrated again through connections with a 100 ms statement timeout,
// under what the build takes: the migration completes, and the postings are the rows'. (At 20 ms
// knex's own bookkeeping, a query of information_schema, timed out once in a loaded full run.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../../db/connection.ts';
import { migrateLatest } from '../../db/migrations/index.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { seedCatalog } from '../../src/market-data/seed/seed.ts';
import { databaseUrl } from '../support/harness.ts';

let scratch: ScratchDatabase;
let scratch041: ScratchDatabase;

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_postings_migration', databaseUrl());
  scratch041 = await createScratchDatabase('tm_postings_migration_041', databaseUrl());
}, 60_000);
afterAll(async () => {
  await scratch?.drop();
  await scratch041?.drop();
});

/** Events in each catalog: enough that each migration's build outlasts TIGHT_MS (shown by the mutants in docs/testing.md). */
const EVENTS_039 = 10_000;
/** 041 copies postings already built: cheaper per event than 039's build. */
const EVENTS_041 = 40_000;
/** The migrating connections' statement timeout: above what knex's bookkeeping takes on a loaded machine. */
const TIGHT_MS = 100;

/** The carried attributes of migration 041. */
const CARRIED = ['venue_country_code', 'category_name', 'event_date', 'average_ticket_price_sold', 'available_tickets', 'capacity'];

describe('migrations 039 and 041 over an existing catalog', () => {
  it('completes through connections whose statement timeout its backfill outlasts, and backfills every posting', async () => {
    const db = createDb({ connectionString: scratch.url, poolMax: 2 });
    await seedCatalog(db, { events: EVENTS_039, detail: 'light', seed: 5, now: new Date('2026-01-15T12:00:00Z') });
    // Back to before 039: its table, triggers and functions gone, its row in knex's ledger too.
    await db.raw('DROP TABLE search_postings');
    for (const op of ['insert', 'update', 'delete', 'truncate']) await db.raw(`DROP TRIGGER event_search_postings_${op} ON event_search`);
    await db.raw('DROP FUNCTION search_postings_insert(), search_postings_update(), search_postings_delete()');
    await db.raw("DELETE FROM knex_migrations WHERE name = '039_search_postings'");
    await db.destroy();

    const tight = createDb({ connectionString: scratch.url, poolMax: 1, statementTimeoutMs: TIGHT_MS });
    try {
      // What the backfill alone takes, on a connection without the migration's own setting.
      await expect(tight.raw(`SELECT count(*) FROM (SELECT pg_sleep(${(TIGHT_MS * 1.5) / 1000})) x`)).rejects.toThrow(/statement timeout/);
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

  it('041: rebuilds the postings with their events’ carried attributes through the same connections', async () => {
    const db = createDb({ connectionString: scratch041.url, poolMax: 2 });
    await seedCatalog(db, { events: EVENTS_041, detail: 'light', seed: 6, now: new Date('2026-01-15T12:00:00Z') });
    // Back to before 041: the postings without the carried attributes (their index goes with them).
    await db.raw(`ALTER TABLE search_postings ${CARRIED.map((c) => `DROP COLUMN ${c}`).join(', ')}`);
    await db.raw("DELETE FROM knex_migrations WHERE name = '041_search_postings_filters'");
    await db.destroy();

    const tight = createDb({ connectionString: scratch041.url, poolMax: 1, statementTimeoutMs: TIGHT_MS });
    try {
      expect(await migrateLatest(tight)).toEqual(['041_search_postings_filters']);
    } finally {
      await tight.destroy();
    }
    const check = createDb({ connectionString: scratch041.url, poolMax: 1 });
    try {
      const truth = `SELECT w AS word, s.event_id, ${CARRIED.map((c) => `s.${c}`).join(', ')} FROM event_search s, unnest(tsvector_to_array(s.search_vector)) w`;
      const held = `SELECT word, event_id, ${CARRIED.join(', ')} FROM search_postings`;
      const { rows } = await check.raw(`
        SELECT (SELECT count(*) FROM (${truth} EXCEPT ${held}) x)::int AS missing, (SELECT count(*) FROM (${held} EXCEPT ${truth}) x)::int AS extra,
               (SELECT count(*) FROM search_postings)::int AS postings`);
      expect(rows[0]).toMatchObject({ missing: 0, extra: 0 });
      expect(rows[0].postings).toBeGreaterThan(10_000);
      // The triggers write the new columns: an event's country changed reaches its postings.
      const { rows: one } = await check.raw('SELECT event_id FROM event_search ORDER BY event_id LIMIT 1');
      await check.raw("UPDATE event_search SET venue_country_code = 'ZZ' WHERE event_id = ?", [one[0].event_id]);
      const { rows: after } = await check.raw('SELECT DISTINCT venue_country_code FROM search_postings WHERE event_id = ?', [one[0].event_id]);
      expect(after).toEqual([{ venue_country_code: 'ZZ' }]);
    } finally {
      await check.destroy();
    }
  }, 120_000);
});
