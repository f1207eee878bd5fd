// The change log the real-time monitors consume (spec 3.1, 6): every create, update and delete
// writes a row in watchlist_changes and a pg_notify on `watchlist_changes` whose payload is the
// change id, in commit order; refused requests write nothing.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { call, newAccount, startTestGateway, type TestAccount, type TestGateway } from '../../support/harness.ts';
import {
  changeCount,
  changesOf,
  createItem,
  expectItem,
  expectSpecItem,
  expectWatchlistError,
  Listener,
  pf03Event,
  SAMPLE_VALUES,
  sleep,
  specPart,
  target,
} from './helpers.ts';

const CHANNEL = 'watchlist_changes';

let gw: TestGateway;
let acct: TestAccount;
let listener: Listener;

beforeAll(async () => {
  gw = await startTestGateway();
  acct = await newAccount(gw.db);
  listener = await Listener.start(CHANNEL);
});

afterAll(async () => {
  await listener?.close();
  await gw?.close();
});

describe('change rows', () => {
  it('records create, update and delete with the item as rendered, and notifies each change id', async () => {
    const created = await createItem(gw.url, acct.key, { notes: 'v1' });
    const upd = await call(gw.url, 'PATCH', `/watchlist/${created.id}`, { key: acct.key, body: { notes: 'v2', task_active: false } });
    const updated = expectItem(upd.body);
    const del = await call(gw.url, 'DELETE', `/watchlist/${created.id}`, { key: acct.key });
    expect(del.status).toBe(204);

    const rows = await changesOf(gw.db, { item_id: created.id });
    expect(rows.map((r) => r.op)).toEqual(['create', 'update', 'delete']);
    for (const r of rows) {
      expect(r.account_id).toBe(acct.accountId);
      expect(r.item_id).toBe(created.id);
      expect(r.created_at).toBeInstanceOf(Date);
    }
    expect(rows[0]!.id).toBeLessThan(rows[1]!.id);
    expect(rows[1]!.id).toBeLessThan(rows[2]!.id);
    // The change rows carry the spec's fields, not the health the answers add.
    expect(rows[0]!.item).toEqual(specPart(created));
    expect(rows[1]!.item).toEqual(specPart(updated));
    // The delete snapshot is the item with deleted = true, as it now stands in the database.
    const deleted = expectSpecItem(rows[2]!.item);
    expect(deleted.deleted).toBe(true);
    expect({ ...deleted, deleted: false, updated_at: updated.updated_at }).toEqual(specPart(updated));
    expect(deleted.updated_at >= updated.updated_at).toBe(true);

    await listener.waitFor(rows.map((r) => String(r.id)));
    // Payloads are exactly the change ids, nothing else.
    for (const p of listener.payloads) expect(p).toMatch(/^[1-9][0-9]*$/);
  });

  it('records every update of a sequence, each snapshot equal to that PATCH response', async () => {
    const item = await createItem(gw.url, acct.key);
    const responses = [];
    for (const [k, v] of Object.entries(SAMPLE_VALUES).slice(0, 6)) {
      const r = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { [k]: v } });
      expect(r.status, r.text).toBe(200);
      responses.push(r.body);
    }
    const rows = await changesOf(gw.db, { item_id: item.id });
    expect(rows.map((r) => r.op)).toEqual(['create', ...responses.map(() => 'update')]);
    expect(rows.slice(1).map((r) => r.item)).toEqual(responses.map(specPart));
    await listener.waitFor(rows.map((r) => String(r.id)));
  });

  it('writes no change for refused or unmatched requests', async () => {
    const a = await newAccount(gw.db);
    const other = await newAccount(gw.db);
    const item = await createItem(gw.url, a.key, { max_price_filter: 10 });
    const before = await changeCount(gw.db, a.accountId);
    const lastId = Number((await gw.db('watchlist_changes').max('id as m').first())?.m);

    expectWatchlistError(await call(gw.url, 'POST', '/watchlist', { key: a.key, body: { ...target(), priority: -1 } }), 400);
    expectWatchlistError(await call(gw.url, 'POST', '/watchlist', { key: a.key, body: { ...target(), min_price_filter: 5, max_price_filter: 4 } }), 400);
    expectWatchlistError(await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: a.key, body: { min_price_filter: 11 } }), 400);
    expectWatchlistError(await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: a.key, body: { region: 'uk' } }), 400);
    expectWatchlistError(await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: other.key, body: { notes: 'x' } }), 404);
    expectWatchlistError(await call(gw.url, 'DELETE', `/watchlist/${item.id}`, { key: other.key }), 404);
    expect((await call(gw.url, 'DELETE', `/watchlist/${item.id}`, { key: a.key })).status).toBe(204);
    expectWatchlistError(await call(gw.url, 'DELETE', `/watchlist/${item.id}`, { key: a.key }), 404);
    expectWatchlistError(await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: a.key, body: { notes: 'x' } }), 404);

    // Exactly one new change (the delete), and none at all for the other account.
    expect(await changeCount(gw.db, a.accountId)).toBe(before + 1);
    expect(await changeCount(gw.db, other.accountId)).toBe(0);
    const mine = await gw.db('watchlist_changes').where('id', '>', lastId).where({ item_id: item.id });
    expect(mine.map((r) => r.op)).toEqual(['delete']);
  });

  it('writes no change, and does not move updated_at, for an empty PATCH', async () => {
    const item = await createItem(gw.url, acct.key);
    const before = await changesOf(gw.db, { item_id: item.id });
    const r = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: {} });
    expect(r.status).toBe(200);
    expect(r.body.updated_at).toBe(item.updated_at);
    expect(await changesOf(gw.db, { item_id: item.id })).toEqual(before);
  });
});

describe('ordering', () => {
  it('notifies change ids in commit order, and a reader polling id > last never skips one', async () => {
    const a = await newAccount(gw.db);
    const start = listener.payloads.length;
    const startId = Number((await gw.db('watchlist_changes').max('id as m').first())?.m ?? 0);

    // A reader that only ever asks for ids above the last one it saw, as the monitors do.
    let last = startId;
    const seen: number[] = [];
    let done = false;
    const reader = (async () => {
      while (!done) {
        const rows = await gw.db('watchlist_changes').where('id', '>', last).orderBy('id').select('id');
        for (const r of rows) seen.push(Number(r.id));
        if (rows.length) last = Number(rows[rows.length - 1]!.id);
        await sleep(1);
      }
    })();

    const N = 30;
    const items = await Promise.all(Array.from({ length: N }, (_, i) => createItem(gw.url, a.key, { event: pf03Event(`race-${i}`) })));
    await Promise.all(
      items.map((it, i) => call(gw.url, 'PATCH', `/watchlist/${it.id}`, { key: a.key, body: { priority: i % 1000 } })),
    );
    await Promise.all(items.slice(0, 10).map((it) => call(gw.url, 'DELETE', `/watchlist/${it.id}`, { key: a.key })));
    done = true;
    await reader;
    // One last read after everything committed: the reader's cursor must not have passed any.
    const tail = await gw.db('watchlist_changes').where('id', '>', last).orderBy('id').select('id');
    const mine = (await changesOf(gw.db, { account_id: a.accountId })).map((r) => r.id);
    expect(mine).toHaveLength(N * 2 + 10);
    const seenByCursor = new Set([...seen, ...tail.map((r) => Number(r.id))]);
    expect(mine.filter((id) => !seenByCursor.has(id))).toEqual([]);

    // Notifications arrive in commit order; with ids allocated in commit order they ascend.
    await listener.waitFor(mine.map(String));
    const received = listener.payloads.slice(start).map(Number);
    for (let i = 1; i < received.length; i++) expect(received[i]!, `notification ${i}`).toBeGreaterThan(received[i - 1]!);
  });

  it('keeps updated_at non-decreasing in change order for one item under concurrent PATCHes', async () => {
    const item = await createItem(gw.url, acct.key);
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { priority: i } })),
    );
    const rows = await changesOf(gw.db, { item_id: item.id });
    expect(rows).toHaveLength(21);
    const stamps = rows.map((r) => r.item.updated_at as string);
    expect([...stamps].sort()).toEqual(stamps);
    const final = await call(gw.url, 'GET', `/watchlist/${item.id}`, { key: acct.key });
    expect(specPart(final.body)).toEqual(rows[rows.length - 1]!.item);
  });

  it('gives a PATCH that waited for a concurrent writer an updated_at after that writer’s', async () => {
    const item = await createItem(gw.url, acct.key);
    const trx = await gw.db.transaction();
    let patch: Promise<Awaited<ReturnType<typeof call>>> | undefined;
    let otherStamp: Date;
    try {
      // Another writer holds the row, changes it, and commits once the PATCH waits for it.
      await trx('watchlist_items').where({ id: item.id }).forUpdate().first();
      const { rows } = await trx.raw('SELECT pg_current_xact_id()::xid::text AS xid');
      patch = call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { priority: 42 } });
      // The PATCH waits on this transaction's row lock (not a guess at how long it takes to get there).
      await vi.waitFor(
        async () => {
          const waiting = await gw.db('pg_locks').where({ locktype: 'transactionid', granted: false }).whereRaw('transactionid::text = ?', [rows[0].xid]).count('* as n').first();
          expect(Number(waiting?.n)).toBeGreaterThan(0);
        },
        { timeout: 20_000, interval: 20 },
      );
      const [row] = await trx('watchlist_items')
        .where({ id: item.id })
        .update({ notes: 'other writer', updated_at: trx.raw('clock_timestamp()') })
        .returning('updated_at');
      otherStamp = row.updated_at as Date;
      await trx.commit();
    } catch (err) {
      await trx.rollback();
      throw err;
    }
    const r = await patch;
    expect(r.status, r.text).toBe(200);
    expect(r.body.priority).toBe(42);
    expect(r.body.notes).toBe('other writer');
    // updated_at never moves backwards: the PATCH was applied after the other writer's commit.
    expect(Date.parse(r.body.updated_at)).toBeGreaterThanOrEqual(otherStamp.getTime());
  });
});
