// The per-account item limit (WATCHLIST_MAX_ITEMS, here 3): counted over live items, enforced
// under concurrency, and per account.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, newAccount, startTestGateway, type TestGateway } from '../../support/harness.ts';
import { changeCount, createItem, expectItem, expectWatchlistError, pf03Event, rowCount, target } from './helpers.ts';

const LIMIT = 3;
let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({ env: { WATCHLIST_MAX_ITEMS: String(LIMIT) } });
});

afterAll(async () => {
  await gw?.close();
});

describe('maximum items per account', () => {
  it('refuses the item past the limit with 400 {error}, storing nothing', async () => {
    const a = await newAccount(gw.db);
    for (let i = 0; i < LIMIT; i++) await createItem(gw.url, a.key, { event: pf03Event(`e-${i}`) });
    const changes = await changeCount(gw.db, a.accountId);
    const r = await call(gw.url, 'POST', '/watchlist', { key: a.key, body: target({ event: pf03Event('one-too-many') }) });
    expectWatchlistError(r, 400);
    expect(await rowCount(gw.db, a.accountId)).toBe(LIMIT);
    expect(await changeCount(gw.db, a.accountId)).toBe(changes);
    expect((await call(gw.url, 'GET', '/watchlist', { key: a.key })).body).toHaveLength(LIMIT);
  });

  it('lets exactly the limit through when 10 creates race', async () => {
    const a = await newAccount(gw.db);
    const replies = await Promise.all(
      Array.from({ length: 10 }, (_, i) => call(gw.url, 'POST', '/watchlist', { key: a.key, body: target({ event: pf03Event(`race-${i}`) }) })),
    );
    const ok = replies.filter((r) => r.status === 201);
    const refused = replies.filter((r) => r.status !== 201);
    expect(ok).toHaveLength(LIMIT);
    ok.forEach((r) => expectItem(r.body));
    refused.forEach((r) => expectWatchlistError(r, 400));
    expect(await rowCount(gw.db, a.accountId)).toBe(LIMIT);
    expect(await changeCount(gw.db, a.accountId)).toBe(LIMIT);
  });

  it('counts live items only: deleting one makes room for one', async () => {
    const a = await newAccount(gw.db);
    const items = [];
    for (let i = 0; i < LIMIT; i++) items.push(await createItem(gw.url, a.key, { event: pf03Event(`d-${i}`) }));
    expectWatchlistError(await call(gw.url, 'POST', '/watchlist', { key: a.key, body: target() }), 400);
    expect((await call(gw.url, 'DELETE', `/watchlist/${items[0]!.id}`, { key: a.key })).status).toBe(204);
    await createItem(gw.url, a.key, { event: pf03Event('replacement') });
    expectWatchlistError(await call(gw.url, 'POST', '/watchlist', { key: a.key, body: target() }), 400);
    expect((await call(gw.url, 'GET', '/watchlist', { key: a.key })).body).toHaveLength(LIMIT);
  });

  it('is per account: a full account does not block another', async () => {
    const a = await newAccount(gw.db);
    const b = await newAccount(gw.db);
    for (let i = 0; i < LIMIT; i++) await createItem(gw.url, a.key);
    const r = await call(gw.url, 'POST', '/watchlist', { key: b.key, body: target() });
    expect(r.status, r.text).toBe(201);
  });

  it('still allows PATCH on a full account', async () => {
    const a = await newAccount(gw.db);
    const items = [];
    for (let i = 0; i < LIMIT; i++) items.push(await createItem(gw.url, a.key));
    const r = await call(gw.url, 'PATCH', `/watchlist/${items[2]!.id}`, { key: a.key, body: { priority: 9 } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.priority).toBe(9);
  });
});
