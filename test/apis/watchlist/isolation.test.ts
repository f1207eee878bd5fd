// Tenant isolation (spec 5.4), access (5.3, 7.1) and credits (section 8) of the Watchlist API.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, setUsage } from '../../../src/accounts/operations.ts';
import { call, newAccount, startTestGateway, type TestAccount, type TestGateway } from '../../support/harness.ts';
import {
  changesOf,
  createItem,
  dbRow,
  expectGatewayError,
  expectItem,
  expectWatchlistError,
  getItem,
  pf03Event,
  rowCount,
  SAMPLE_VALUES,
  target,
} from './helpers.ts';

let gw: TestGateway;
let alice: TestAccount;
let bob: TestAccount;

beforeAll(async () => {
  gw = await startTestGateway();
  alice = await newAccount(gw.db);
  bob = await newAccount(gw.db);
});

afterAll(async () => {
  await gw?.close();
});

describe('tenant isolation', () => {
  it('answers 404 {error} to another account on GET, PATCH and DELETE, and changes nothing', async () => {
    const item = await createItem(gw.url, alice.key, { notes: 'alice’s' });
    const rowBefore = await dbRow(gw.db, item.id);
    const changesBefore = await changesOf(gw.db, { item_id: item.id });

    expectWatchlistError(await call(gw.url, 'GET', `/watchlist/${item.id}`, { key: bob.key }), 404);
    expectWatchlistError(await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: bob.key, body: { notes: 'bob was here', task_active: false } }), 404);
    expectWatchlistError(await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: bob.key, body: {} }), 404);
    expectWatchlistError(await call(gw.url, 'DELETE', `/watchlist/${item.id}`, { key: bob.key }), 404);

    expect(await dbRow(gw.db, item.id)).toEqual(rowBefore);
    expect(await changesOf(gw.db, { item_id: item.id })).toEqual(changesBefore);
    expect(await getItem(gw.url, alice.key, item.id)).toEqual(item);
  });

  it('answers the same 404 for another account’s item as for an id that does not exist', async () => {
    const item = await createItem(gw.url, alice.key);
    const foreign = await call(gw.url, 'GET', `/watchlist/${item.id}`, { key: bob.key });
    const max = await gw.db('watchlist_items').max('id as m').first();
    const missing = await call(gw.url, 'GET', `/watchlist/${Number(max?.m) + 1_000_000}`, { key: bob.key });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual(missing.body);
  });

  it('never lists another account’s items', async () => {
    const a = await newAccount(gw.db);
    const b = await newAccount(gw.db);
    const mine = [await createItem(gw.url, a.key, { event: pf03Event('a-1') }), await createItem(gw.url, a.key, { event: pf03Event('a-2') })];
    const theirs = await createItem(gw.url, b.key, { event: pf03Event('b-1') });
    const listA = await call(gw.url, 'GET', '/watchlist', { key: a.key });
    const listB = await call(gw.url, 'GET', '/watchlist', { key: b.key });
    expect(listA.body.map((i: { id: number }) => i.id)).toEqual(mine.map((i) => i.id));
    expect(listB.body.map((i: { id: number }) => i.id)).toEqual([theirs.id]);
    for (const i of listA.body) expect(i.client_id).toBe(a.accountId);
    for (const i of listB.body) expect(i.client_id).toBe(b.accountId);
  });

  it('assigns the caller’s account as client_id, whoever else exists', async () => {
    const i1 = await createItem(gw.url, alice.key);
    const i2 = await createItem(gw.url, bob.key);
    expect(i1.client_id).toBe(alice.accountId);
    expect(i2.client_id).toBe(bob.accountId);
    expect((await dbRow(gw.db, i2.id))!.client_id).toBe(bob.accountId);
  });

  it('scopes items to the account, not the key: a second key of the account sees them', async () => {
    const { key } = await createKey(gw.db, { accountId: alice.accountId, apis: ['watchlist'], rateLimitPerMinute: 1_000 });
    const item = await createItem(gw.url, alice.key);
    expect(await getItem(gw.url, key, item.id)).toEqual(item);
  });

  it('keeps another account’s deleted item a 404 for everyone else', async () => {
    const item = await createItem(gw.url, alice.key);
    expect((await call(gw.url, 'DELETE', `/watchlist/${item.id}`, { key: alice.key })).status).toBe(204);
    expectWatchlistError(await call(gw.url, 'DELETE', `/watchlist/${item.id}`, { key: bob.key }), 404);
    expect((await dbRow(gw.db, item.id))!.client_id).toBe(alice.accountId);
  });
});

describe('access', () => {
  it('answers 403 forbidden in the gateway envelope to a key not granted the watchlist, on every route', async () => {
    const owner = await newAccount(gw.db);
    const item = await createItem(gw.url, owner.key);
    const narrow = await newAccount(gw.db, { apis: ['account'] });
    const before = await rowCount(gw.db, narrow.accountId);
    const routes: [string, string, unknown?][] = [
      ['GET', '/watchlist'],
      ['POST', '/watchlist', target()],
      ['GET', '/watchlist/health'],
      ['GET', `/watchlist/${item.id}`],
      ['PATCH', `/watchlist/${item.id}`, { priority: 1 }],
      ['DELETE', `/watchlist/${item.id}`],
    ];
    for (const [method, path, body] of routes) {
      expectGatewayError(await call(gw.url, method, path, { key: narrow.key, body }), 403, 'forbidden');
    }
    expect(await rowCount(gw.db, narrow.accountId)).toBe(before);
    // The narrow key can still use the account API, so the 403 is about the watchlist grant.
    expect((await call(gw.url, 'GET', '/usage', { key: narrow.key })).status).toBe(200);
  });

  it('answers 401 without a key on every route, and stores nothing', async () => {
    const item = await createItem(gw.url, alice.key);
    const before = await dbRow(gw.db, item.id);
    const event = pf03Event(`anonymous-${Date.now()}-${Math.random().toString(36).slice(2)}`);
    const routes: [string, string, unknown?][] = [
      ['GET', '/watchlist'],
      ['POST', '/watchlist', target({ event })],
      ['GET', `/watchlist/${item.id}`],
      ['PATCH', `/watchlist/${item.id}`, { priority: 1 }],
      ['DELETE', `/watchlist/${item.id}`],
    ];
    for (const [method, path, body] of routes) expectGatewayError(await call(gw.url, method, path, { body }), 401, 'unauthenticated');
    expect(await gw.db('watchlist_items').where({ event })).toEqual([]);
    expect(await dbRow(gw.db, item.id)).toEqual(before);
  });

  it('is open to a key granted only the watchlist', async () => {
    const only = await newAccount(gw.db, { apis: ['watchlist'] });
    const item = await createItem(gw.url, only.key);
    expect((await call(gw.url, 'GET', '/watchlist', { key: only.key })).body).toHaveLength(1);
    expect((await call(gw.url, 'DELETE', `/watchlist/${item.id}`, { key: only.key })).status).toBe(204);
  });

  it('answers the gateway 404 for a method the watchlist does not have', async () => {
    for (const [method, path] of [
      ['PUT', '/watchlist/1'],
      ['DELETE', '/watchlist'],
      ['PATCH', '/watchlist'],
      ['POST', '/watchlist/1'],
    ] as const) {
      expectGatewayError(await call(gw.url, method, path, { key: alice.key, body: {} }), 404, 'not_found');
    }
  });
});

describe('credits', () => {
  it('charges nothing for any watchlist call, successful or refused', async () => {
    const a = await newAccount(gw.db, { plan: 'free' });
    await setUsage(gw.db, a.accountId, 7);
    const usageBefore = await call(gw.url, 'GET', '/usage', { key: a.key });
    expect(usageBefore.status).toBe(200);
    expect(usageBefore.body.credits.used).toBe(7);

    const item = await createItem(gw.url, a.key, SAMPLE_VALUES);
    await call(gw.url, 'GET', '/watchlist', { key: a.key });
    await call(gw.url, 'GET', `/watchlist/${item.id}`, { key: a.key });
    expectItem((await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: a.key, body: { priority: 3 } })).body);
    await call(gw.url, 'GET', '/watchlist/health', { key: a.key });
    expectWatchlistError(await call(gw.url, 'POST', '/watchlist', { key: a.key, body: { website: 'nope' } }), 400);
    expectWatchlistError(await call(gw.url, 'GET', '/watchlist/999999999999', { key: a.key }), 404);
    expect((await call(gw.url, 'DELETE', `/watchlist/${item.id}`, { key: a.key })).status).toBe(204);

    const counters = await gw.db('usage_counters').where({ account_id: a.accountId }).select('used');
    expect(counters.map((c) => Number(c.used))).toEqual([7]);
    expect(await gw.db('credit_ledger').where({ account_id: a.accountId })).toEqual([]);
    const usageAfter = await call(gw.url, 'GET', '/usage', { key: a.key });
    expect(usageAfter.body.credits.used).toBe(7);
  });

  it('keeps working at the hard cap, where paid requests are refused', async () => {
    const a = await newAccount(gw.db, { plan: 'free' });
    const plan = await gw.db('plans').where({ id: 'free' }).first();
    await setUsage(gw.db, a.accountId, Number(plan.hard_cap));
    const item = await createItem(gw.url, a.key);
    expect((await call(gw.url, 'GET', `/watchlist/${item.id}`, { key: a.key })).status).toBe(200);
    expect(Number((await gw.db('usage_counters').where({ account_id: a.accountId }).first()).used)).toBe(Number(plan.hard_cap));
  });
});
