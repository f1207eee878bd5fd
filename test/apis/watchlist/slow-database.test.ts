// Watchlist writes with PostgreSQL 300 ms away (issue 39: the rehearsal's pg-slow fault, where
// writes timed out for 4 to 6 s of the minute). Every round trip then costs 300 ms, and a lock
// held across round trips makes its waiters pay them too. Writes of different accounts share no
// lock but the notifications log's, which is held for the server's time only (the last statement
// is sent with its commit, db/last-statement.ts), so two groups of creates out at once run side
// by side, and the creates that come meanwhile go together in the next group: many accounts'
// creates at once take about as long as two. Before, the writers' lock was held through every
// round trip of a write (about 7: 2 s here), and N accounts' creates took N times as long.
// The store runs as the gateway runs it, on a pool whose every connection goes through a
// Toxiproxy latency toxic on the loopback; the rows are read back directly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../../db/connection.ts';
import type { Toxiproxy } from '../../../rehearsal/toxiproxy.ts';
import { WatchlistStore } from '../../../src/apis/watchlist/store.ts';
import { ITEM_DEFAULTS, type CreateItem } from '../../../src/apis/watchlist/schema.ts';
import { databaseUrl, newAccount } from '../../support/harness.ts';
import { proxiedDatabaseUrl, testToxiproxy } from '../../support/toxiproxy.ts';
import { pf03Event } from './helpers.ts';

const LATENCY_MS = 300;
const ACCOUNTS = 8;

let toxi: Toxiproxy;
let direct: Db;
let slow: Db;

function item(slug: string): CreateItem {
  return { ...ITEM_DEFAULTS, website: 'pf_03', event: pf03Event(slug), region: 'us' } as CreateItem;
}

beforeAll(async () => {
  toxi = await testToxiproxy();
  const slowUrl = await proxiedDatabaseUrl(toxi, 'slow-pg');
  // Every answer from the server 300 ms late: each round trip costs 300 ms.
  await toxi.addToxic('slow-pg', { name: 'slow', type: 'latency', attributes: { latency: LATENCY_MS, jitter: 0 } });
  direct = createDb({ connectionString: databaseUrl(), poolMax: 2 });
  slow = createDb({ connectionString: slowUrl, poolMax: ACCOUNTS * 2, applicationName: 'slow-watchlist' });
}, 120_000);

afterAll(async () => {
  await slow?.destroy();
  await direct?.destroy();
  await toxi?.stop();
});

describe('watchlist writes with PostgreSQL 300 ms away', () => {
  it("runs different accounts' creates side by side: two at once take less than 1.5 times as long as one, eight less than 2.5 times", async () => {
    const store = new WatchlistStore(slow);
    const accounts = await Promise.all(Array.from({ length: ACCOUNTS }, () => newAccount(direct)));
    // Warm the pool: every connection opened before anything is timed.
    await Promise.all(Array.from({ length: ACCOUNTS }, () => slow.raw('SELECT 1')));

    let t0 = performance.now();
    await store.create(accounts[0]!.accountId, item('slow-one'), 100);
    const one = performance.now() - t0;
    // At least a few round trips of 300 ms: the toxic is on.
    expect(one).toBeGreaterThan(3 * LATENCY_MS);

    // Two accounts' creates: two groups out at once (CREATE_GROUPS_IN_FLIGHT).
    t0 = performance.now();
    await Promise.all(accounts.slice(0, 2).map((a, i) => store.create(a.accountId, item(`slow-two-${i}`), 100)));
    const two = performance.now() - t0;
    expect(two, `one create ${Math.round(one)} ms, two at once ${Math.round(two)} ms`).toBeLessThan(1.5 * one);

    // Eight: two groups of one go at once, the six that come meanwhile together in the next.
    t0 = performance.now();
    const created = await Promise.all(accounts.map((a, i) => store.create(a.accountId, item(`slow-many-${i}`), 100)));
    const many = performance.now() - t0;
    expect(many, `one create ${Math.round(one)} ms, ${ACCOUNTS} at once ${Math.round(many)} ms`).toBeLessThan(2.5 * one);

    // All written, each with its change row and its stream message, in order.
    const ids = created.map((c) => c.id);
    const changes = await direct('watchlist_changes').whereIn('item_id', ids).orderBy('id').select('id', 'item_id');
    expect(changes.map((c) => Number(c.item_id)).sort()).toEqual([...ids].sort());
    const messages = await direct('notifications').whereIn('dedupe_key', changes.map((c) => `watchlist:${c.id}`)).orderBy('id').select('dedupe_key');
    // The log's order follows the changes' order: one lock for both.
    expect(messages.map((m) => m.dedupe_key)).toEqual(changes.map((c) => `watchlist:${c.id}`));
  });

  it("keeps one account's writes in order: its creates wait for each other, and its item cap holds", async () => {
    const store = new WatchlistStore(slow);
    const account = await newAccount(direct);
    const results = await Promise.allSettled(Array.from({ length: 4 }, (_, i) => store.create(account.accountId, item(`cap-${i}`), 2)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(2);
    expect(results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason))).toEqual([
      expect.stringContaining('at most 2 watchlist items'),
      expect.stringContaining('at most 2 watchlist items'),
    ]);
    const rows = await direct('watchlist_items').where({ client_id: account.accountId }).orderBy('id').select('id', 'created_at');
    expect(rows).toHaveLength(2);
    expect(rows[0].created_at.getTime()).toBeLessThanOrEqual(rows[1].created_at.getTime());
  });
});
