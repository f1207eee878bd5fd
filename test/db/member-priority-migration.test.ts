// Migration 038 (issue 40): members written before the shard poller read priorities have none
// in their config; they take their item's, so an upgrade does not rank every existing target 0
// until its item next changes. A member that has one keeps it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import * as m038 from '../../db/migrations/038_member_priority.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { createAccount } from '../../src/accounts/operations.ts';
import { ITEM_DEFAULTS } from '../../src/apis/watchlist/schema.ts';
import { WatchlistStore } from '../../src/apis/watchlist/store.ts';
import { databaseUrl } from '../support/harness.ts';

let scratch: ScratchDatabase;
let db: Db;

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_member_priority', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 2 });
});

afterAll(async () => {
  await db?.destroy();
  await scratch?.drop();
});

describe('038_member_priority', () => {
  it("gives each member without a priority its item's, and leaves one with a priority as it is", async () => {
    const { account_id } = await createAccount(db, { plan: 'pro', name: 'priority-migration' });
    const store = new WatchlistStore(db);
    const item = (event: string, priority: number) => store.create(Number(account_id), { ...ITEM_DEFAULTS, website: 'pf_03', event, region: 'us', priority } as never, 100);
    const [old, kept] = [await item('EVT00001', 700), await item('EVT00002', 300)];
    const member = (id: number, target: string, config: Record<string, unknown>) => ({
      item_id: id,
      account_id,
      target,
      platform: 'pf_03',
      shard: 0,
      ref: '{}',
      item: '{}',
      config: JSON.stringify(config),
      version: 1,
    });
    // Rows as the relay wrote them before: no priority; and one written since.
    await db('monitor_members').insert([member(old.id, 'pf_03:us:EVT00001', { section: null }), member(kept.id, 'pf_03:us:EVT00002', { section: null, priority: 5 })]);
    await m038.up(db);
    const rows: { item_id: string; config: Record<string, unknown> }[] = await db('monitor_members').orderBy('item_id').select('item_id', 'config');
    expect(rows.map((r) => r.config)).toEqual([
      { section: null, priority: 700 },
      { section: null, priority: 5 },
    ]);
  });
});
