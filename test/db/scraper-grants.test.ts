// db/scraper-grants.ts decides, table by table, what the scrape worker's role may do (issue 25).
// A table that a migration adds is in neither list until someone decides: this fails until then.
// What the rights let the scrape worker do end to end: test/temporal/scrape-worker-role.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { applyScraperGrants, NOT_FOR_THE_SCRAPER, SCRAPER_RIGHTS } from '../../db/scraper-grants.ts';
import { databaseUrl } from '../support/harness.ts';

describe('the scrape worker’s database rights', () => {
  let scratch: ScratchDatabase;
  let db: Db;
  beforeAll(async () => {
    scratch = await createScratchDatabase('tm_grants', databaseUrl());
    db = createDb({ connectionString: scratch.url, poolMax: 2 });
  });
  afterAll(async () => {
    await db?.destroy();
    await scratch?.drop();
  });

  it('every table of the migrated schema is listed once: granted to the scraper, or kept from it with a reason', async () => {
    const { rows } = (await db.raw(
      `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY 1`,
    )) as { rows: { relname: string }[] };
    const tables = rows.map((r) => r.relname);
    const granted = Object.keys(SCRAPER_RIGHTS);
    const kept = Object.keys(NOT_FOR_THE_SCRAPER);
    expect(granted.filter((t) => kept.includes(t)), 'listed in both').toEqual([]);
    expect(tables.filter((t) => !granted.includes(t) && !kept.includes(t)), 'new tables: add each to SCRAPER_RIGHTS or NOT_FOR_THE_SCRAPER').toEqual([]);
    expect([...granted, ...kept].filter((t) => !tables.includes(t)).sort(), 'listed but no such table').toEqual([]);
    // The secrets stay out of reach whatever else changes.
    // Nor can it write anything that is signed or sent (issue 38): only the functions of
    // db/migrations/036 append notifications and write deliveries.
    for (const t of ['api_keys', 'stripe_events', 'stripe_subscriptions', 'webhook_attempts', 'webhooks', 'webhook_deliveries']) expect(kept).toContain(t);
    expect(SCRAPER_RIGHTS.notifications).toEqual(expect.objectContaining({ table: ['SELECT'] }));
  });

  it('a role that does not exist is named with the fix', async () => {
    await expect(applyScraperGrants(db, 'tm_no_such_role')).rejects.toThrow(/SCRAPER_DB_ROLE=tm_no_such_role: no such role; create it first with npm run db:roles/);
  });
});
