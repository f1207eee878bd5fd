// Metering (spec 8, 7.7; brief "Metering" and "Hard cap"): each paid request reserves its
// credits atomically before the API runs and becomes one ledger row keyed by its request id;
// 5xx answers of the API are released (never billed), the API's own 4xx are billed once;
// quantity-billed parameters are checked before anything is charged; concurrent requests
// debit exactly N x cost and never pass the hard cap.
import { describe, expect, it } from 'vitest';
import { setUsage } from '../../src/accounts/operations.ts';
import { newAccount, type TestAccount } from '../support/harness.ts';
import { gatewayCode, ledgerRows, totalUsed, usedCredits, useFixtureGateway } from '../support/gateway-helpers.ts';

// The real gateway plus the fixture API (gateway-helpers.ts), started for this file.
const t = useFixtureGateway();

const SALES = '/svc/data/sales/marketplace_a/E-42';

async function createItem(key: string): Promise<number> {
  const r = await t.api('POST', '/watchlist', { key, body: { website: 'pf_01', event: 'G5vYZ9fT1aB2cD3e', region: 'us' } });
  expect(r.status, r.text).toBe(201);
  return r.body.id;
}

describe('credits per request (spec 8)', () => {
  // Costs as the spec's table gives them.
  it.each([
    ['GET', '/svc/data/ping', 1, 'pingMarketData'],
    ['GET', '/events/platforms', 5, 'listPlatforms'],
  ] as const)('%s %s costs %i credit(s), one charged ledger row keyed by X-Request-Id', async (method, path, cost, operationId) => {
    const a = await newAccount(t.gw.db);
    const ids: string[] = [];
    for (let i = 1; i <= 3; i++) {
      const r = await t.api(method, path, { key: a.key });
      expect(r.status).toBe(200);
      ids.push(r.headers.get('x-request-id')!);
      expect(await usedCredits(t.gw.db, a.accountId)).toBe(cost * i);
    }
    const rows = await ledgerRows(t.gw.db, a.accountId);
    expect(rows.map((r) => r.request_id).sort()).toEqual([...ids].sort());
    for (const row of rows) {
      expect(row).toMatchObject({ state: 'charged', credits: cost, status_code: 200, operation: operationId, key_id: a.keyId });
      expect(row.settled_at).toBeInstanceOf(Date);
    }
  });

  it.each(['/events/platforms', '/svc/data/ping', `${SALES}?sales_limit=200`])(
    'HEAD %s (a paid GET route) answers 404 not_found: no credit, no ledger row, the API never runs',
    async (path) => {
      const a = await newAccount(t.gw.db);
      const seen = t.fixture.seen.size;
      for (const key of [a.key, undefined]) {
        const r = await t.api('HEAD', path, { key });
        expect(r.status).toBe(404);
        expect(r.text).toBe('');
        expect(r.headers.get('ratelimit')).toBeNull();
      }
      expect(t.fixture.seen.size).toBe(seen);
      expect(await usedCredits(t.gw.db, a.accountId)).toBe(0);
      expect(await totalUsed(t.gw.db, a.accountId)).toBe(0);
      expect(await ledgerRows(t.gw.db, a.accountId)).toEqual([]);
      // The same key is served and billed by a GET (the fixture route: it answers 200 whatever
      // the backends do), so the 404 above is about the method.
      expect((await t.api('GET', SALES, { key: a.key })).status).toBe(200);
      expect((await ledgerRows(t.gw.db, a.accountId)).map((row) => row.state)).toEqual(['charged']);
    },
  );

  it('every watchlist call and GET /usage cost 0 and leave no ledger row', async () => {
    const a = await newAccount(t.gw.db);
    const id = await createItem(a.key);
    const replies = [
      await t.api('GET', '/watchlist', { key: a.key }),
      await t.api('GET', `/watchlist/${id}`, { key: a.key }),
      await t.api('PATCH', `/watchlist/${id}`, { key: a.key, body: { task_active: false } }),
      await t.api('GET', '/watchlist/health', { key: a.key }),
      await t.api('DELETE', `/watchlist/${id}`, { key: a.key }),
      await t.api('GET', '/usage', { key: a.key }),
    ];
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200, 204, 200]);
    expect(await totalUsed(t.gw.db, a.accountId)).toBe(0);
    expect(await ledgerRows(t.gw.db, a.accountId)).toEqual([]);
  });

  it('GET /usage reads what the gateway charged, live', async () => {
    const a = await newAccount(t.gw.db);
    await t.api('GET', '/svc/data/ping', { key: a.key });
    await t.api('GET', '/events/platforms', { key: a.key });
    const r = await t.api('GET', '/usage', { key: a.key });
    expect(r.body.credits.used).toBe(6);
  });
});

describe('sales_limit: ceil(sales_limit / 20), validated before anything is charged', () => {
  it.each([
    ['', 1],
    ['?sales_limit=1', 1],
    ['?sales_limit=20', 1],
    ['?sales_limit=21', 2],
    ['?sales_limit=100', 5],
    ['?sales_limit=199', 10],
    ['?sales_limit=200', 10],
    ['?sales_limit=020', 1],
    ['?sales_limit=0200', 10],
    ['?sales_limit=00000000000000000000005', 1],
    ['?other=1&sales_limit=40', 2],
  ])('%s costs %i', async (query, cost) => {
    const a = await newAccount(t.gw.db);
    const r = await t.api('GET', SALES + query, { key: a.key });
    expect(r.status).toBe(200);
    expect(r.body.fixture).toBe(true);
    expect(await usedCredits(t.gw.db, a.accountId)).toBe(cost);
    const rows = await ledgerRows(t.gw.db, a.accountId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ request_id: r.headers.get('x-request-id'), credits: cost, state: 'charged' });
  });

  it.each(['0', '201', 'abc', '1.5', '-1', '', '+5', '1e2', '%205', '20%00', '0x10', '999999999999', '0000201', '٣'])(
    'sales_limit=%j answers 400 invalid_parameter, charges nothing, never reaches the API',
    async (value) => {
      const a = await newAccount(t.gw.db);
      const r = await t.api('GET', `${SALES}?sales_limit=${value}`, { key: a.key });
      expect(r.status).toBe(400);
      expect(gatewayCode(r)).toBe('invalid_parameter');
      expect(t.fixture.seen.has(r.headers.get('x-request-id')!)).toBe(false);
      expect(await totalUsed(t.gw.db, a.accountId)).toBe(0);
      expect(await ledgerRows(t.gw.db, a.accountId)).toEqual([]);
    },
  );

  it('a repeated sales_limit is malformed, even when both values are valid', async () => {
    const a = await newAccount(t.gw.db);
    for (const q of ['?sales_limit=5&sales_limit=5', '?sales_limit=5&sales_limit=300', '?sales_limit=5&sales_limit=']) {
      const r = await t.api('GET', SALES + q, { key: a.key });
      expect(r.status, q).toBe(400);
      expect(gatewayCode(r)).toBe('invalid_parameter');
    }
    expect(await totalUsed(t.gw.db, a.accountId)).toBe(0);
    expect(await ledgerRows(t.gw.db, a.accountId)).toEqual([]);
  });
});

describe('answers of the API itself', () => {
  it.each([
    ['throw', 500, 'INTERNAL_ERROR'],
    ['status503', 503, 'EDGE_UNAVAILABLE'],
    ['edge_unavailable', 503, 'EDGE_UNAVAILABLE'],
    ['edge_timeout', 504, 'EDGE_TIMEOUT'],
  ])('a 5xx (%s) is never billed: the reservation is released and used is unchanged', async (outcome, status, code) => {
    const a = await newAccount(t.gw.db);
    await setUsage(t.gw.db, a.accountId, 7);
    const r = await t.api('POST', `/svc/data/search?outcome=${outcome}`, { key: a.key, body: { query: 'x' } });
    expect(r.status).toBe(status);
    expect(r.body).toMatchObject({ status: 'error', code });
    expect(r.text).not.toContain('fixture handler failed'); // the underlying error is not forwarded
    const requestId = r.headers.get('x-request-id')!;
    expect(t.fixture.seen.has(requestId)).toBe(true);
    expect(await usedCredits(t.gw.db, a.accountId)).toBe(7);
    const rows = await ledgerRows(t.gw.db, a.accountId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ request_id: requestId, state: 'released', status_code: status, credits: 1 });
  });

  it.each([
    ['not_found', 404, 'EVENT_NOT_FOUND'],
    ['status400', 400, 'INVALID_REQUEST'],
  ])('a 4xx from the API itself (%s) is billed once', async (outcome, status, code) => {
    const a = await newAccount(t.gw.db);
    const r = await t.api('POST', `/svc/data/search?outcome=${outcome}`, { key: a.key, body: { query: 'x' } });
    expect(r.status).toBe(status);
    expect(r.body).toMatchObject({ status: 'error', code });
    expect(await usedCredits(t.gw.db, a.accountId)).toBe(1);
    const rows = await ledgerRows(t.gw.db, a.accountId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ request_id: r.headers.get('x-request-id'), state: 'charged', status_code: status, credits: 1 });
  });

  it('refunds never touch other charges: mixed outcomes add up exactly', async () => {
    const a = await newAccount(t.gw.db);
    const outcomes = ['ok', 'throw', 'not_found', 'edge_timeout', 'ok', 'status400', 'status503'];
    for (const o of outcomes) await t.api('POST', `/svc/data/search?outcome=${o}`, { key: a.key, body: {} });
    expect(await usedCredits(t.gw.db, a.accountId)).toBe(4);
    const rows = await ledgerRows(t.gw.db, a.accountId);
    expect(rows.filter((r) => r.state === 'charged')).toHaveLength(4);
    expect(rows.filter((r) => r.state === 'released')).toHaveLength(3);
    expect(rows.filter((r) => r.state === 'reserved')).toHaveLength(0);
  });
});

describe('included quota and hard cap (brief "Hard cap")', () => {
  it('passing included bills overage and does not block (pro, no hard cap)', async () => {
    const a = await newAccount(t.gw.db, { plan: 'pro' });
    const included = (await t.gw.db('plans').where({ id: 'pro' }).first('included')).included as number;
    await setUsage(t.gw.db, a.accountId, included);
    expect((await t.api('GET', '/events/platforms', { key: a.key })).status).toBe(200);
    expect(await usedCredits(t.gw.db, a.accountId)).toBe(included + 5);
  });

  it('a request that would take used past hard_cap is refused even if a cheaper one still fits', async () => {
    const a = await newAccount(t.gw.db, { plan: 'free' });
    const cap = (await t.gw.db('plans').where({ id: 'free' }).first('hard_cap')).hard_cap as number;
    await setUsage(t.gw.db, a.accountId, cap - 4);
    const expensive = await t.api('GET', '/events/platforms', { key: a.key }); // would be cap + 1
    expect(expensive.status).toBe(402);
    expect(gatewayCode(expensive)).toBe('limit_reached');
    for (let i = 0; i < 4; i++) expect((await t.api('GET', '/svc/data/ping', { key: a.key })).status).toBe(200);
    expect(await usedCredits(t.gw.db, a.accountId)).toBe(cap);
    const over = await t.api('GET', '/svc/data/ping', { key: a.key });
    expect(over.status).toBe(402);
    expect(gatewayCode(over)).toBe('limit_reached');
    expect(await usedCredits(t.gw.db, a.accountId)).toBe(cap);
    expect((await ledgerRows(t.gw.db, a.accountId)).map((r) => r.state)).toEqual(['charged', 'charged', 'charged', 'charged']);
  });

  it('a 5xx at the hard cap gives the credits back, so the next request still fits', async () => {
    const a = await newAccount(t.gw.db, { plan: 'free' });
    await setUsage(t.gw.db, a.accountId, 999);
    expect((await t.api('POST', '/svc/data/search?outcome=throw', { key: a.key })).status).toBe(500);
    expect((await t.api('POST', '/svc/data/search?outcome=ok', { key: a.key })).status).toBe(200);
    expect(await usedCredits(t.gw.db, a.accountId)).toBe(1000);
  });
});

describe('concurrency', () => {
  it('60 parallel paid requests debit exactly 60 x cost and create 60 charged ledger rows', async () => {
    const a = await newAccount(t.gw.db);
    const replies = await Promise.all(Array.from({ length: 60 }, () => t.api('GET', '/events/platforms', { key: a.key })));
    expect(replies.every((r) => r.status === 200)).toBe(true);
    expect(await usedCredits(t.gw.db, a.accountId)).toBe(300);
    const rows = await ledgerRows(t.gw.db, a.accountId);
    expect(rows).toHaveLength(60);
    expect(rows.every((r) => r.state === 'charged' && r.credits === 5)).toBe(true);
    expect(new Set(rows.map((r) => r.request_id))).toEqual(new Set(replies.map((r) => r.headers.get('x-request-id'))));
  });

  it('parallel requests of mixed cost and outcome add up exactly', async () => {
    const a = await newAccount(t.gw.db);
    const plan = [
      ...Array.from({ length: 20 }, () => ['GET', '/svc/data/ping'] as const),
      ...Array.from({ length: 10 }, () => ['GET', '/events/platforms'] as const),
      ...Array.from({ length: 10 }, () => ['GET', `${SALES}?sales_limit=100`] as const),
      ...Array.from({ length: 10 }, () => ['POST', '/svc/data/search?outcome=throw'] as const),
    ];
    const replies = await Promise.all(plan.map(([m, p]) => t.api(m, p, { key: a.key })));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(40);
    expect(await usedCredits(t.gw.db, a.accountId)).toBe(20 + 50 + 50);
    const rows = await ledgerRows(t.gw.db, a.accountId);
    expect(rows.filter((r) => r.state === 'charged')).toHaveLength(40);
    expect(rows.filter((r) => r.state === 'released')).toHaveLength(10);
  });

  it.each([
    [5, '/events/platforms'],
    [1, '/svc/data/ping'],
  ])('near the hard cap (cost %i), 20 parallel requests admit exactly as many as fit', async (cost, path) => {
    const a = await newAccount(t.gw.db, { plan: 'free' });
    const cap = (await t.gw.db('plans').where({ id: 'free' }).first('hard_cap')).hard_cap as number;
    const fit = 3;
    const start = cap - fit * cost - (cost - 1); // room for 3 requests and a remainder too small for a 4th
    await setUsage(t.gw.db, a.accountId, start);
    const replies = await Promise.all(Array.from({ length: 20 }, () => t.api('GET', path, { key: a.key })));
    const ok = replies.filter((r) => r.status === 200);
    const refused = replies.filter((r) => r.status !== 200);
    expect(ok).toHaveLength(fit);
    expect(refused.every((r) => r.status === 402 && gatewayCode(r) === 'limit_reached')).toBe(true);
    const used = await usedCredits(t.gw.db, a.accountId);
    expect(used).toBe(start + fit * cost);
    expect(used).toBeLessThanOrEqual(cap);
    const rows = await ledgerRows(t.gw.db, a.accountId);
    expect(rows).toHaveLength(fit);
    expect(new Set(rows.map((r) => r.request_id))).toEqual(new Set(ok.map((r) => r.headers.get('x-request-id'))));
  });

  it('many accounts in parallel do not interfere', async () => {
    const accounts: TestAccount[] = await Promise.all(Array.from({ length: 8 }, () => newAccount(t.gw.db)));
    await Promise.all(accounts.flatMap((a, i) => Array.from({ length: i + 1 }, () => t.api('GET', '/svc/data/ping', { key: a.key }))));
    for (const [i, a] of accounts.entries()) expect(await usedCredits(t.gw.db, a.accountId)).toBe(i + 1);
  });
});
