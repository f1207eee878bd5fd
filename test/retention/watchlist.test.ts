// Watchlist retention: a change goes once every consumer's cursor has passed it and it is past
// the retention (never one a cursor has not reached; nothing at all without a cursor); a deleted
// item goes past its retention once no member and no pending webhook delivery refers to it.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { pruneTable } from '../../src/retention/rule.ts';
import { watchlistChangesRule } from '../../src/retention/watchlist-changes.ts';
import { watchlistItemsRule } from '../../src/retention/watchlist-items.ts';
import { databaseUrl } from '../support/harness.ts';
import { insertWatchlistItem } from '../support/watchlist-rows.ts';

let scratch: ScratchDatabase;
let db: Db;
let accountId: number;

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_retention_watchlist', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 2 });
  const [account] = await db('accounts').insert({ name: 'retention' }).returning('id');
  accountId = Number(account.id);
});

afterAll(async () => {
  await db?.destroy();
  await scratch?.drop();
});

const HOUR = 3_600_000;
const ago = (hours: number) => new Date(Date.now() - hours * HOUR);

async function addChanges(agesHours: readonly number[]): Promise<number[]> {
  if (agesHours.length === 0) return [];
  const rows = agesHours.map((age, i) => ({ account_id: accountId, item_id: i + 1, op: 'update', item: JSON.stringify({ id: i + 1 }), created_at: ago(age) }));
  return (await db('watchlist_changes').insert(rows).returning('id')).map((r) => Number(r.id));
}

async function changeIds(): Promise<number[]> {
  return (await db('watchlist_changes').orderBy('id').select('id')).map((r) => Number(r.id));
}

describe('watchlist_changes retention', () => {
  const RETENTION_DAYS = 7;
  const RETENTION_HOURS = RETENTION_DAYS * 24;

  it('removes the changes every cursor has passed that are past the retention, never one a cursor has not reached', async () => {
    // Ages in whole hours; a row aged exactly the retention is past it (the prune runs later).
    const rowsArb = fc.array(fc.integer({ min: 0, max: RETENTION_HOURS * 3 }), { maxLength: 40 });
    const cursorsArb = fc.array(fc.nat(), { maxLength: 3 });
    await fc.assert(
      fc.asyncProperty(rowsArb, cursorsArb, fc.integer({ min: 1, max: 10 }), async (ages, cursorPicks, batchSize) => {
        await db('watchlist_changes').delete();
        await db('relay_cursors').delete();
        const ids = await addChanges(ages);
        // Each cursor stands at one of the rows (or before the first: 0).
        const cursors = cursorPicks.map((pick) => (pick % (ids.length + 1) === 0 ? 0 : ids[(pick % (ids.length + 1)) - 1]!));
        if (cursors.length) await db('relay_cursors').insert(cursors.map((last_id, i) => ({ name: `consumer-${i}`, last_id })));

        const passedByAll = cursors.length ? Math.min(...cursors) : -1;
        const expected = ids.filter((id, i) => !(id <= passedByAll && ages[i]! >= RETENTION_HOURS));

        const result = await pruneTable(db, watchlistChangesRule({ retentionDays: RETENTION_DAYS }), { batchSize });
        expect(result.done).toBe(true);
        expect(result.deleted).toBe(ids.length - expected.length);
        expect(await changeIds()).toEqual(expected);
      }),
      { numRuns: 60 },
    );
  });

  it('keeps every change while no consumer has a cursor, and old changes a lagging consumer has not read', async () => {
    await db('watchlist_changes').delete();
    await db('relay_cursors').delete();
    const ids = await addChanges([500, 400, 300, 200, 100, 1]);
    const rule = watchlistChangesRule({ retentionDays: RETENTION_DAYS });
    expect((await pruneTable(db, rule)).deleted).toBe(0);
    await db('relay_cursors').insert([
      { name: 'monitor-members', last_id: ids[5] },
      { name: 'watchlist-monitors-v2', last_id: ids[1] },
    ]);
    expect((await pruneTable(db, rule)).deleted).toBe(2);
    expect(await changeIds()).toEqual(ids.slice(2));
  });
});

/** A watchlist item row with the columns the API always writes; `deletedHoursAgo` null: live. */
async function addItem(deletedHoursAgo: number | null): Promise<number> {
  const deletedAt = deletedHoursAgo === null ? null : ago(deletedHoursAgo);
  return (await insertWatchlistItem(db, { accountId, website: 'pf_03', event: 'summer-open-air-4411', region: 'us', deletedAt })).id;
}

describe('deleted watchlist items', () => {
  it('removes an item deleted longer ago than the retention unless its member is still there', async () => {
    const DAYS = 30;
    const gone = await addItem(DAYS * 24 + 1);
    const live = await addItem(null);
    const recentlyDeleted = await addItem(DAYS * 24 - 1);
    // The membership relay has not applied the delete yet.
    const stillMember = await addItem(DAYS * 24 + 5);
    await db('monitor_members').insert({
      item_id: stillMember,
      account_id: accountId,
      target: 'pf_03:us:summer-open-air-4411',
      platform: 'pf_03',
      shard: 0,
      ref: JSON.stringify({}),
      item: JSON.stringify({}),
      config: JSON.stringify({}),
      version: 1,
    });

    const result = await pruneTable(db, watchlistItemsRule({ retentionDays: DAYS, notificationsRetentionHours: 168 }), { batchSize: 1 });
    expect(result).toMatchObject({ deleted: 1, done: true });
    const left = (await db('watchlist_items').orderBy('id').select('id')).map((r) => Number(r.id));
    expect(left).toEqual([live, recentlyDeleted, stillMember]);
    expect(left).not.toContain(gone);
    await db('watchlist_items').delete();
    await db('monitor_members').delete();
  });

  it('keeps a deleted item while the log may still hold its notifications (a pending Discord delivery reads its roles through them)', async () => {
    // The log kept longer than the items: 40 days.
    const rule = watchlistItemsRule({ retentionDays: 30, notificationsRetentionHours: 40 * 24 });
    const inLog = await addItem(35 * 24);
    const outOfLog = await addItem(41 * 24);
    expect((await pruneTable(db, rule)).deleted).toBe(1);
    const left = (await db('watchlist_items').orderBy('id').select('id')).map((r) => Number(r.id));
    expect(left).toEqual([inLog]);
    expect(left).not.toContain(outOfLog);
  });
});
