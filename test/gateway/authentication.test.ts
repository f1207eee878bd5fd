// Authentication and access (spec 5, 7.1): 401 unauthenticated without a key, 401
// invalid_credentials for a rejected key (wrong, garbage, revoked, expired), 403 forbidden for
// a key not granted the API, /usage open to every key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, revokeKey, setUsage } from '../../src/accounts/operations.ts';
import { generateApiKey } from '../../src/gateway/keys.ts';
import { newAccount, startTestGateway, testConfig, type TestAccount, type TestGateway } from '../support/harness.ts';
import { clientFor, GATEWAY_ENV, gatewayCode, ledgerRows, totalUsed, type Client } from '../support/gateway-helpers.ts';

let gw: TestGateway;
let api: Client;
let acct: TestAccount;
const KEY_TTL_MS = testConfig().KEY_CACHE_TTL_MS;

beforeAll(async () => {
  gw = await startTestGateway({ env: GATEWAY_ENV });
  api = clientFor(gw.url);
  acct = await newAccount(gw.db);
});
afterAll(async () => {
  await gw.close();
});

const ROUTES: [string, string][] = [
  ['GET', '/svc/data/ping'],
  ['GET', '/events/platforms'],
  ['GET', '/watchlist'],
  ['GET', '/watchlist/health'],
  ['GET', '/watchlist/1'],
  ['GET', '/usage'],
];

function mutate(key: string): string[] {
  const last = key.at(-1)!;
  const swapped = last === 'a' ? 'b' : 'a';
  const i = key.slice(4).search(/[A-Za-z]/) + 4; // a letter, so the case flip changes the key
  const c = key[i]!;
  const flipCase = key.slice(0, i) + (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()) + key.slice(i + 1);
  return [key.slice(0, -1) + swapped, key + 'x', key.slice(0, -1), flipCase, key.toUpperCase(), 'tmk_' + key.slice(4).split('').reverse().join('')];
}

describe('401 unauthenticated: no credential sent', () => {
  it.each(ROUTES)('%s %s without an apikey header', async (method, path) => {
    const r = await api(method, path);
    expect(r.status).toBe(401);
    expect(gatewayCode(r)).toBe('unauthenticated');
  });

  it('an empty apikey header is no credential either', async () => {
    const r = await api('GET', '/usage', { key: '' });
    expect(r.status).toBe(401);
    expect(gatewayCode(r)).toBe('unauthenticated');
  });

  it('a key in another header or in the query string is not a credential', async () => {
    for (const r of [
      await api('GET', '/usage', { headers: { authorization: `Bearer ${acct.key}` } }),
      await api('GET', '/usage', { headers: { 'x-api-key': acct.key } }),
      await api('GET', `/usage?apikey=${acct.key}`),
    ]) {
      expect(r.status).toBe(401);
      expect(gatewayCode(r)).toBe('unauthenticated');
    }
  });
});

describe('401 invalid_credentials: key sent and rejected', () => {
  it('a well-formed key that was never issued', async () => {
    for (const [method, path] of ROUTES) {
      const r = await api(method, path, { key: generateApiKey().key });
      expect(r.status, path).toBe(401);
      expect(gatewayCode(r), path).toBe('invalid_credentials');
    }
  });

  it.each(['x', 'garbage', 'tmk_', 'Bearer abc', '{"key":1}', 'tmk_' + '!'.repeat(40), ' '.repeat(3) + 'a', 'ü'.repeat(44), '0'.repeat(2000)])(
    'garbage key %j',
    async (key) => {
      const r = await api('GET', '/usage', { key });
      expect(r.status).toBe(401);
      expect(gatewayCode(r)).toBe('invalid_credentials');
    },
  );

  it('near misses of a real key are rejected while the real key works', async () => {
    expect((await api('GET', '/usage', { key: acct.key })).status).toBe(200);
    for (const k of mutate(acct.key)) {
      expect(k).not.toBe(acct.key);
      const r = await api('GET', '/usage', { key: k });
      expect(r.status, k).toBe(401);
      expect(gatewayCode(r)).toBe('invalid_credentials');
    }
  });

  it(`a revoked key stops working within KEY_CACHE_TTL_MS (${KEY_TTL_MS} ms)`, async () => {
    const a = await newAccount(gw.db);
    expect((await api('GET', '/usage', { key: a.key })).status).toBe(200); // now cached
    await revokeKey(gw.db, a.keyId);
    const revokedAt = Date.now();
    const seen: { startedAfter: number; status: number; code?: string }[] = [];
    // Until past the bound and at least one request started after it (on a loaded machine a
    // single request can outlast the 600 ms of margin).
    while (Date.now() - revokedAt < KEY_TTL_MS + 600 || !seen.some((s) => s.startedAfter > KEY_TTL_MS)) {
      const startedAfter = Date.now() - revokedAt;
      const r = await api('GET', '/usage', { key: a.key });
      seen.push({ startedAfter, status: r.status, code: gatewayCode(r) });
      await new Promise((res) => setTimeout(res, 15));
    }
    // Every request that started once the cache bound had passed was refused...
    const late = seen.filter((s) => s.startedAfter > KEY_TTL_MS);
    expect(late.length).toBeGreaterThan(0);
    for (const s of late) expect(s, JSON.stringify(s)).toMatchObject({ status: 401, code: 'invalid_credentials' });
    // ...and only served before it (a cached answer), never refused then served again.
    const firstRefused = seen.findIndex((s) => s.status === 401);
    expect(seen.slice(firstRefused).every((s) => s.status === 401)).toBe(true);
    expect(seen.slice(0, firstRefused).every((s) => s.status === 200)).toBe(true);
    for (const [method, path] of ROUTES) expect((await api(method, path, { key: a.key })).status).toBe(401);
  });

  it('a revoked key never served again after the TTL, and other keys of the account keep working', async () => {
    const a = await newAccount(gw.db);
    const other = await createKey(gw.db, { accountId: a.accountId });
    await revokeKey(gw.db, a.keyId);
    await new Promise((r) => setTimeout(r, KEY_TTL_MS + 50));
    expect((await api('GET', '/usage', { key: a.key })).status).toBe(401);
    expect((await api('GET', '/usage', { key: other.key })).status).toBe(200);
  });

  it('a key whose expiresAt has passed', async () => {
    const a = await newAccount(gw.db, { expiresAt: new Date(Date.now() - 1_000) });
    const r = await api('GET', '/usage', { key: a.key });
    expect(r.status).toBe(401);
    expect(gatewayCode(r)).toBe('invalid_credentials');
  });

  it('a key stops working at its expiresAt, even while cached', async () => {
    // Far enough ahead for the account and the first call to be done before it on a loaded machine.
    const expiresAt = new Date(Date.now() + 5_000);
    const a = await newAccount(gw.db, { expiresAt });
    expect((await api('GET', '/svc/data/ping', { key: a.key })).status).toBe(200);
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt.getTime() - Date.now()) + 20));
    const r = await api('GET', '/svc/data/ping', { key: a.key });
    expect(r.status).toBe(401);
    expect(gatewayCode(r)).toBe('invalid_credentials');
    expect(await totalUsed(gw.db, a.accountId)).toBe(1);
  });

  it('rejected keys are never charged', async () => {
    const a = await newAccount(gw.db);
    await revokeKey(gw.db, a.keyId);
    await new Promise((r) => setTimeout(r, KEY_TTL_MS + 50));
    for (let i = 0; i < 3; i++) expect((await api('GET', '/events/platforms', { key: a.key })).status).toBe(401);
    expect(await totalUsed(gw.db, a.accountId)).toBe(0);
    expect(await ledgerRows(gw.db, a.accountId)).toEqual([]);
  });
});

describe('403 forbidden: key valid but not granted the API', () => {
  it('a watchlist-only key may not call Market Data or Live Availability', async () => {
    const a = await newAccount(gw.db, { apis: ['watchlist'] });
    for (const path of ['/svc/data/ping', '/events/platforms']) {
      const r = await api('GET', path, { key: a.key });
      expect(r.status, path).toBe(403);
      expect(gatewayCode(r)).toBe('forbidden');
    }
    expect((await api('GET', '/watchlist', { key: a.key })).status).toBe(200);
    expect(await ledgerRows(gw.db, a.accountId)).toEqual([]);
  });

  it('a Market Data key may not call Live Availability or the watchlist', async () => {
    const a = await newAccount(gw.db, { apis: ['market_data'] });
    expect((await api('GET', '/svc/data/ping', { key: a.key })).status).toBe(200);
    for (const path of ['/events/platforms', '/watchlist', '/watchlist/health', '/watchlist/1']) {
      const r = await api('GET', path, { key: a.key });
      expect(r.status, path).toBe(403);
      expect(gatewayCode(r)).toBe('forbidden');
    }
  });

  it('forbidden regardless of credit balance: at the hard cap it is still 403, not 402', async () => {
    const a = await newAccount(gw.db, { plan: 'free', apis: ['watchlist'] });
    await setUsage(gw.db, a.accountId, 1000);
    const r = await api('GET', '/svc/data/ping', { key: a.key });
    expect(r.status).toBe(403);
    expect(gatewayCode(r)).toBe('forbidden');
  });

  it('/usage works for any valid key, even one granted no API at all', async () => {
    for (const apis of [[], ['watchlist'], ['market_data'], ['live_availability'], ['stream']]) {
      const a = await newAccount(gw.db, { apis });
      const r = await api('GET', '/usage', { key: a.key });
      expect(r.status, JSON.stringify(apis)).toBe(200);
      expect(r.body.credits).toBeTruthy();
    }
  });

  it('a key granted no API is forbidden everywhere else', async () => {
    const a = await newAccount(gw.db, { apis: [] });
    for (const path of ['/svc/data/ping', '/events/platforms', '/watchlist']) {
      expect((await api('GET', path, { key: a.key })).status, path).toBe(403);
    }
  });
});
