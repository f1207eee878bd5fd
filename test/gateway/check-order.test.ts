// Order of checks (spec 5.6): authentication, access, rate limit, then metering. Each test sets
// up a caller that fails two checks at once and asserts the earlier one answers; denied
// requests never reach the API and are never charged.
import { describe, expect, it } from 'vitest';
import { setSubscriptionStatus, setUsage } from '../../src/accounts/operations.ts';
import { generateApiKey } from '../../src/gateway/keys.ts';
import { newAccount } from '../support/harness.ts';
import { awayFromMinuteEdge, gatewayCode, ledgerRows, totalUsed, useFixtureGateway } from '../support/gateway-helpers.ts';

// The real gateway plus the fixture API (gateway-helpers.ts), started for this file.
const t = useFixtureGateway();

function expectNotReached(requestId: string | null): void {
  expect(requestId).toBeTruthy();
  expect(t.fixture.seen.has(requestId!)).toBe(false);
}

describe('authentication before access', () => {
  it('no key on a route the caller would be forbidden: 401 unauthenticated, not 403', async () => {
    const r = await t.api('POST', '/svc/data/search');
    expect(r.status).toBe(401);
    expect(gatewayCode(r)).toBe('unauthenticated');
    expectNotReached(r.headers.get('x-request-id'));
  });

  it('a rejected key on such a route: 401 invalid_credentials, not 403', async () => {
    const r = await t.api('GET', '/events/platforms', { key: generateApiKey().key });
    expect(r.status).toBe(401);
    expect(gatewayCode(r)).toBe('invalid_credentials');
  });
});

describe('access before rate limit', () => {
  it('a forbidden key that is also rate-limited answers 403, and forbidden calls do not use up its budget', async () => {
    await awayFromMinuteEdge();
    const a = await newAccount(t.gw.db, { apis: ['watchlist'], rateLimit: 2 });
    expect((await t.api('GET', '/watchlist', { key: a.key })).status).toBe(200);
    expect((await t.api('GET', '/watchlist', { key: a.key })).status).toBe(200);
    expect((await t.api('GET', '/watchlist', { key: a.key })).status).toBe(429);
    for (let i = 0; i < 3; i++) {
      const r = await t.api('POST', '/svc/data/search', { key: a.key });
      expect(r.status).toBe(403);
      expect(gatewayCode(r)).toBe('forbidden');
      expectNotReached(r.headers.get('x-request-id'));
    }
  });

  it('forbidden requests are not counted by the rate limiter', async () => {
    await awayFromMinuteEdge();
    const a = await newAccount(t.gw.db, { apis: ['watchlist'], rateLimit: 2 });
    for (let i = 0; i < 5; i++) {
      const r = await t.api('GET', '/events/platforms', { key: a.key });
      expect(r.status).toBe(403);
      // Not counted, but the window's standing is reported like on every keyed response.
      expect(r.headers.get('ratelimit-policy')).toBe('"default";q=2;w=60');
      expect(r.headers.get('ratelimit')).toMatch(/^"default";r=2;t=\d+$/);
      expect(r.headers.get('retry-after')).toBeNull();
    }
    expect((await t.api('GET', '/watchlist', { key: a.key })).status).toBe(200);
    expect((await t.api('GET', '/watchlist', { key: a.key })).status).toBe(200);
    const spent = await t.api('GET', '/events/platforms', { key: a.key });
    expect(spent.status).toBe(403);
    expect(spent.headers.get('ratelimit')).toMatch(/^"default";r=0;t=\d+$/);
  });
});

describe('rate limit before billing', () => {
  it('a rate-limited key at the hard cap answers 429, not 402', async () => {
    await awayFromMinuteEdge();
    const a = await newAccount(t.gw.db, { plan: 'free', rateLimit: 1 });
    await setUsage(t.gw.db, a.accountId, 1000);
    const first = await t.api('GET', '/svc/data/ping', { key: a.key });
    expect(first.status).toBe(402);
    expect(gatewayCode(first)).toBe('limit_reached');
    const second = await t.api('GET', '/svc/data/ping', { key: a.key });
    expect(second.status).toBe(429);
    expect(gatewayCode(second)).toBe('rate_limited');
    expect(await totalUsed(t.gw.db, a.accountId)).toBe(1000);
    expect(await ledgerRows(t.gw.db, a.accountId)).toEqual([]);
  });

  it('a rate-limited key without a subscription answers 429, not 402', async () => {
    await awayFromMinuteEdge();
    const a = await newAccount(t.gw.db, { rateLimit: 1 });
    await setSubscriptionStatus(t.gw.db, a.accountId, 'past_due');
    expect(gatewayCode(await t.api('GET', '/events/platforms', { key: a.key }))).toBe('no_subscription');
    expect(gatewayCode(await t.api('GET', '/events/platforms', { key: a.key }))).toBe('rate_limited');
  });

  it('a rate-limited key with a malformed sales_limit answers 429, not 400', async () => {
    await awayFromMinuteEdge();
    const a = await newAccount(t.gw.db, { rateLimit: 1 });
    expect((await t.api('GET', '/svc/data/sales/marketplace_a/E-1?sales_limit=5', { key: a.key })).status).toBe(200);
    const r = await t.api('GET', '/svc/data/sales/marketplace_a/E-1?sales_limit=0', { key: a.key });
    expect(r.status).toBe(429);
    expect(await totalUsed(t.gw.db, a.accountId)).toBe(1);
  });
});

describe('the parameter check comes before any billing decision', () => {
  it('a malformed sales_limit on an account that would be refused by billing answers 400 invalid_parameter', async () => {
    const a = await newAccount(t.gw.db, { plan: 'free' });
    await setUsage(t.gw.db, a.accountId, 1000);
    const r = await t.api('GET', '/svc/data/sales/marketplace_a/E-1?sales_limit=abc', { key: a.key });
    expect(r.status).toBe(400);
    expect(gatewayCode(r)).toBe('invalid_parameter');
    expectNotReached(r.headers.get('x-request-id'));
  });
});

describe('denied requests are never charged and never reach the API', () => {
  it('a mix of 401, 403, 402, 400 and 429 leaves no ledger row and no usage', async () => {
    await awayFromMinuteEdge();
    const a = await newAccount(t.gw.db, { plan: 'free', rateLimit: 4, apis: ['market_data', 'watchlist'] });
    await setUsage(t.gw.db, a.accountId, 1000);
    const replies = [
      await t.api('POST', '/svc/data/search'), // 401
      await t.api('GET', '/events/platforms', { key: a.key }), // 403 (not counted)
      await t.api('POST', '/svc/data/search', { key: a.key }), // 402 limit_reached (1)
      await t.api('GET', '/svc/data/sales/marketplace_a/E-1?sales_limit=201', { key: a.key }), // 400 (2)
      await t.api('GET', '/svc/data/ping', { key: a.key }), // 402 (3)
      await t.api('POST', '/svc/data/search', { key: a.key }), // 402 (4)
      await t.api('POST', '/svc/data/search', { key: a.key }), // 429
    ];
    expect(replies.map((r) => r.status)).toEqual([401, 403, 402, 400, 402, 402, 429]);
    for (const r of replies) expectNotReached(r.headers.get('x-request-id'));
    expect(await totalUsed(t.gw.db, a.accountId)).toBe(1000);
    expect(await ledgerRows(t.gw.db, a.accountId)).toEqual([]);
  });
});
