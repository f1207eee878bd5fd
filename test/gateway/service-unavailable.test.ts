// Failing closed (spec 5.5, 7.1 service_unavailable; brief "PostgreSQL down means fail closed,
// not free usage"): an unreachable key store answers 502, an unreachable billing provider
// refuses paid requests with 502 while free requests are still served; the underlying error is
// never forwarded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../db/connection.ts';
import { LocalBillingProvider } from '../../src/billing/local-provider.ts';
import { generateApiKey } from '../../src/gateway/keys.ts';
import { AdmissionGroups } from '../../src/gateway/admissions.ts';
import { RateLimiter } from '../../src/gateway/rate-limit.ts';
import { newAccount, startTestGateway, type TestAccount, type TestGateway } from '../support/harness.ts';
import { clientFor, GATEWAY_ENV, gatewayCode, ledgerRows, totalUsed, unreachableDb,
  unreachablePool, type Client } from '../support/gateway-helpers.ts';

function expectNoLeak(text: string): void {
  for (const fragment of ['ECONNREFUSED', '127.0.0.1:1', 'postgres://', 'stack', 'knex', 'at ']) expect(text).not.toContain(fragment);
}

describe('the key store is unreachable', () => {
  let dead: Db;
  let gw: TestGateway;
  let live: TestGateway;
  let api: Client;
  let acct: TestAccount;

  beforeAll(async () => {
    dead = unreachableDb();
    gw = await startTestGateway({ env: GATEWAY_ENV, db: dead, pool: unreachablePool() });
    live = await startTestGateway({ env: GATEWAY_ENV });
    api = clientFor(gw.url);
    acct = await newAccount(live.db);
  });
  afterAll(async () => {
    await gw.close();
    await live.close();
    await dead.destroy();
  });

  it.each([
    ['GET', '/svc/data/ping'],
    ['GET', '/events/platforms'],
    ['GET', '/watchlist'],
    ['GET', '/usage'],
  ])('%s %s with a well-formed key fails closed with 502 service_unavailable', async (method, path) => {
    for (const key of [acct.key, generateApiKey().key]) {
      const r = await api(method, path, { key });
      expect(r.status).toBe(502);
      expect(gatewayCode(r)).toBe('service_unavailable');
      expect(r.headers.get('x-request-id')).toBeTruthy();
      expectNoLeak(r.text);
    }
  });

  it('answers without waiting for long timeouts', async () => {
    const t = Date.now();
    await api('GET', '/svc/data/ping', { key: acct.key });
    expect(Date.now() - t).toBeLessThan(6_000);
  });

  it('a missing key is still 401 unauthenticated and a garbage key 401 invalid_credentials (no store needed)', async () => {
    const none = await api('GET', '/usage');
    expect(none.status).toBe(401);
    expect(gatewayCode(none)).toBe('unauthenticated');
    const garbage = await api('GET', '/usage', { key: 'not-a-key' });
    expect(garbage.status).toBe(401);
    expect(gatewayCode(garbage)).toBe('invalid_credentials');
  });

  it('nothing was charged to the account on the live database', async () => {
    expect(await totalUsed(live.db, acct.accountId)).toBe(0);
  });

  it('routing and the OpenAPI document need no database', async () => {
    expect((await api('GET', '/nope')).status).toBe(404);
    expect((await api('GET', '/openapi.json')).status).toBe(200);
  });
});

describe('the billing provider is unreachable while authentication works', () => {
  let dead: Db;
  let gw: TestGateway;
  let api: Client;

  beforeAll(async () => {
    dead = unreachableDb();
    gw = await startTestGateway({ env: GATEWAY_ENV, services: { billing: new LocalBillingProvider(dead, unreachablePool()) } });
    api = clientFor(gw.url);
  });
  afterAll(async () => {
    await gw.close();
    await dead.destroy();
  });

  it('a paid request fails closed with 502 service_unavailable and is not served for free', async () => {
    const a = await newAccount(gw.db);
    for (const path of ['/svc/data/ping', '/events/platforms']) {
      const r = await api('GET', path, { key: a.key });
      expect(r.status, path).toBe(502);
      expect(gatewayCode(r)).toBe('service_unavailable');
      expectNoLeak(r.text);
    }
    expect(await totalUsed(gw.db, a.accountId)).toBe(0);
    expect(await ledgerRows(gw.db, a.accountId)).toEqual([]);
  });

  it('free requests are still served', async () => {
    const a = await newAccount(gw.db);
    expect((await api('GET', '/watchlist', { key: a.key })).status).toBe(200);
    expect((await api('GET', '/watchlist/health', { key: a.key })).status).toBe(200);
    const created = await api('POST', '/watchlist', { key: a.key, body: { website: 'pf_01', event: 'G5vYZ9fT1aB2cD3e', region: 'us' } });
    expect(created.status).toBe(201);
  });

  it('earlier checks still answer first: 401 and 403 are not turned into 502', async () => {
    const limited = await newAccount(gw.db, { apis: ['watchlist'], rateLimit: 1 });
    expect((await api('GET', '/svc/data/ping')).status).toBe(401);
    expect((await api('GET', '/svc/data/ping', { key: limited.key })).status).toBe(403);
  });

  it('a paid request is counted inside its admission: with billing down it cannot be counted, so every attempt is 502, never served', async () => {
    const a = await newAccount(gw.db, { rateLimit: 1 });
    for (let i = 0; i < 3; i++) expect((await api('GET', '/svc/data/ping', { key: a.key })).status).toBe(502);
    // Free routes are counted by the limiter, which still works: the same key's window is honoured there.
    expect((await api('GET', '/watchlist', { key: a.key })).status).toBe(200);
    expect((await api('GET', '/watchlist', { key: a.key })).status).toBe(429);
  });

  it('GET /usage answers the Account API’s own 502 billing_unavailable', async () => {
    const a = await newAccount(gw.db);
    const r = await api('GET', '/usage', { key: a.key });
    expect(r.status).toBe(502);
    expect(r.body).toEqual({ detail: 'billing_unavailable' });
  });
});

describe('the rate limiter’s store is unreachable while authentication works', () => {
  let dead: Db;
  let gw: TestGateway;
  let api: Client;

  beforeAll(async () => {
    dead = unreachableDb();
    gw = await startTestGateway({ env: GATEWAY_ENV, services: { limiter: (() => { const p = unreachablePool(); return new RateLimiter(new AdmissionGroups(p), p); })() } });
    api = clientFor(gw.url);
  });
  afterAll(async () => {
    await gw.close();
    await dead.destroy();
  });

  it('a free keyed request fails closed with 502 rather than going unlimited', async () => {
    const a = await newAccount(gw.db);
    for (const path of ['/watchlist', '/usage']) {
      const r = await api('GET', path, { key: a.key });
      expect(r.status, path).toBe(502);
      expect(gatewayCode(r)).toBe('service_unavailable');
      expectNoLeak(r.text);
    }
    expect(await totalUsed(gw.db, a.accountId)).toBe(0);
  });

  it('a paid request is counted by its admission (billing store up), so it is still served and charged once', async () => {
    const a = await newAccount(gw.db);
    const r = await api('GET', '/svc/data/ping', { key: a.key });
    expect(r.status).toBe(200);
    expect(r.headers.get('ratelimit')).toMatch(/"default";r=\d+;t=\d+/);
    expect(await totalUsed(gw.db, a.accountId)).toBe(1);
  });

  it('a missing key is 401 (the limiter is never asked); a rejected key is still 401 (the per-address limit cannot be applied, the answer is a refusal anyway)', async () => {
    expect(gatewayCode(await api('GET', '/usage'))).toBe('unauthenticated');
    expect(gatewayCode(await api('GET', '/usage', { key: generateApiKey().key }))).toBe('invalid_credentials');
  });

  it('a forbidden key is still answered 403 (access is checked before the limiter)', async () => {
    const a = await newAccount(gw.db, { apis: ['watchlist'] });
    expect(gatewayCode(await api('GET', '/events/platforms', { key: a.key }))).toBe('forbidden');
  });
});
