// `cooldown_seconds` on a watchlist item (issue 24), the API side: an integer 0..86400, 0 when
// omitted (every change notifies, as before), settable at POST and PATCH, returned by GET and
// in the change log the monitors read; anything else is a 400 in the watchlist envelope that
// stores nothing. What the monitors do with it is theirs (src/monitors).
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, newAccount, startTestGateway, type TestAccount, type TestGateway } from '../../support/harness.ts';
import { changesOf, createItem, dbRow, expectWatchlistError, getItem, rowCount, target } from './helpers.ts';

let gw: TestGateway;
let acct: TestAccount;

beforeAll(async () => {
  gw = await startTestGateway();
  acct = await newAccount(gw.db);
});

afterAll(async () => {
  await gw?.close();
});

describe('cooldown_seconds', () => {
  it('is 0 on an item created without it', async () => {
    const item = await createItem(gw.url, acct.key);
    expect(item.cooldown_seconds).toBe(0);
    expect((await dbRow(gw.db, item.id))!.cooldown_seconds).toBe(0);
  });

  it('round-trips through POST, GET, the list, PATCH and the change log, bounds included', async () => {
    const item = await createItem(gw.url, acct.key, { cooldown_seconds: 86_400 });
    expect(item.cooldown_seconds).toBe(86_400);
    expect((await getItem(gw.url, acct.key, item.id)).cooldown_seconds).toBe(86_400);
    const list = await call(gw.url, 'GET', '/watchlist', { key: acct.key });
    expect(list.body.find((i: { id: number }) => i.id === item.id).cooldown_seconds).toBe(86_400);
    const r = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { cooldown_seconds: 0 } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.cooldown_seconds).toBe(0);
    expect(r.body.notes).toBeNull();
    const changes = await changesOf(gw.db, { item_id: item.id });
    expect(changes.map((c) => c.item.cooldown_seconds)).toEqual([86_400, 0]);
    // A PATCH of another field keeps it.
    await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { cooldown_seconds: 90 } });
    const other = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { priority: 4 } });
    expect(other.body.cooldown_seconds).toBe(90);
  });

  it('refuses anything but an integer 0..86400 with 400 {error} naming it, on POST and PATCH, storing nothing', async () => {
    const item = await createItem(gw.url, acct.key, { cooldown_seconds: 30 });
    const before = await dbRow(gw.db, item.id);
    const rows = await rowCount(gw.db, acct.accountId);
    for (const v of [-1, 86_401, 1e9, 0.5, 59.999, '60', '', null, true, [], {}, [60]]) {
      expect(expectWatchlistError(await call(gw.url, 'POST', '/watchlist', { key: acct.key, body: target({ cooldown_seconds: v }) }), 400), JSON.stringify(v)).toMatch(/^cooldown_seconds: /);
      expect(expectWatchlistError(await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { cooldown_seconds: v } }), 400)).toMatch(/^cooldown_seconds: /);
    }
    expect(await rowCount(gw.db, acct.accountId)).toBe(rows);
    expect(await dbRow(gw.db, item.id)).toEqual(before);
  });

  it('accepts every integer 0..86400 and refuses every other number (property)', async () => {
    const item = await createItem(gw.url, acct.key);
    const valid = fc.integer({ min: 0, max: 86_400 });
    const invalid = fc.oneof(
      fc.integer({ max: -1 }),
      fc.integer({ min: 86_401 }),
      fc.double({ min: -1e6, max: 1e6, noNaN: true }).filter((n) => !Number.isInteger(n)),
    );
    await fc.assert(
      fc.asyncProperty(fc.oneof(valid.map((v) => ({ v, ok: true })), invalid.map((v) => ({ v, ok: false }))), fc.boolean(), async ({ v, ok }, viaPatch) => {
        const r = viaPatch
          ? await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { cooldown_seconds: v } })
          : await call(gw.url, 'POST', '/watchlist', { key: acct.key, body: target({ cooldown_seconds: v }) });
        if (ok) {
          expect(r.status, r.text).toBe(viaPatch ? 200 : 201);
          expect(r.body.cooldown_seconds).toBe(v);
          if (!viaPatch) await call(gw.url, 'DELETE', `/watchlist/${r.body.id}`, { key: acct.key });
        } else {
          expect(expectWatchlistError(r, 400)).toMatch(/^cooldown_seconds: /);
        }
      }),
      { numRuns: 80 },
    );
  }, 60_000);
});
