// Rate limiting (spec 8, brief "Rate limit"): fixed calendar-minute window per key, 30 by
// default with a per-key override, IETF draft RateLimit-Policy / RateLimit headers, Retry-After
// in whole seconds not before the window ends, one atomic statement so concurrent requests
// cannot slip past, and per-address limiting of rejected keys (never of requests sending none).
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createKey, revokeKey, setUsage } from '../../src/accounts/operations.ts';
import { generateApiKey } from '../../src/gateway/keys.ts';
import { AdmissionGroups } from '../../src/gateway/admissions.ts';
import { RateLimiter } from '../../src/gateway/rate-limit.ts';
import { createPool } from '../../db/pool.ts';
import { databaseUrl, newAccount, startTestGateway, testConfig, type TestGateway } from '../support/harness.ts';
import {
  awayFromMinuteEdge,
  clientFor,
  createFixtureApi,
  GATEWAY_ENV,
  withFixture,
  gatewayCode,
  ledgerRows,
  randomAddress,
  totalUsed,
  type Client,
} from '../support/gateway-helpers.ts';

let gw: TestGateway;
let api: Client;

beforeAll(async () => {
  gw = await startTestGateway({ env: GATEWAY_ENV });
  api = clientFor(gw.url);
});
afterAll(async () => {
  await gw.close();
});

/** Parses `"name";q=3;w=60` / `"name";r=2;t=41` into its name and integer parameters. */
function structured(value: string | null): { name: string; params: Record<string, number> } {
  expect(value).toBeTruthy();
  const [name, ...items] = value!.split(';');
  expect(name).toMatch(/^"[a-z_-]+"$/);
  const params: Record<string, number> = {};
  for (const item of items) {
    const m = /^([a-z]+)=(\d+)$/.exec(item.trim());
    expect(m, `parameter ${item} of ${value}`).not.toBeNull();
    params[m![1]!] = Number(m![2]);
  }
  return { name: name!.slice(1, -1), params };
}

function retryAfter(value: string | null): number {
  expect(value).toMatch(/^\d+$/);
  return Number(value);
}

describe('per-key calendar-minute limit', () => {
  it('a key with rateLimit 3: the 4th request in the minute is 429 rate_limited, with the headers of the IETF draft', async () => {
    await awayFromMinuteEdge();
    const a = await newAccount(gw.db, { rateLimit: 3 });
    const replies = [];
    for (let i = 0; i < 4; i++) replies.push(await api('GET', '/usage', { key: a.key }));
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    const denied = replies[3]!;
    expect(gatewayCode(denied)).toBe('rate_limited');

    replies.forEach((r, i) => {
      const policy = structured(r.headers.get('ratelimit-policy'));
      expect(policy.params).toEqual({ q: 3, w: 60 });
      const state = structured(r.headers.get('ratelimit'));
      expect(state.name).toBe(policy.name);
      expect(state.params.r).toBe(Math.max(0, 3 - (i + 1)));
      expect(state.params.t).toBeGreaterThanOrEqual(1);
      expect(state.params.t).toBeLessThanOrEqual(60);
    });
    const seconds = retryAfter(denied.headers.get('retry-after'));
    expect(seconds).toBeGreaterThanOrEqual(1);
    expect(seconds).toBeLessThanOrEqual(60);
    // Not before the window ends: the retry lands in the next calendar minute.
    const windowEnd = Math.ceil(Date.now() / 60_000) * 60_000;
    expect(Date.now() + seconds * 1000).toBeGreaterThanOrEqual(windowEnd - 1_000);
    expect(structured(denied.headers.get('ratelimit')).params.t).toBe(seconds);
    // Successful responses carry no Retry-After.
    expect(replies[0]!.headers.get('retry-after')).toBeNull();
  });

  it('a key without an override gets the default of 30 per minute (spec 8)', async () => {
    // 31 requests one after another in one calendar minute: room for a loaded machine.
    await awayFromMinuteEdge(15_000);
    const a = await newAccount(gw.db);
    const { key } = await createKey(gw.db, { accountId: a.accountId }); // no per-key override
    const statuses: number[] = [];
    for (let i = 0; i < 31; i++) statuses.push((await api('GET', '/watchlist', { key })).status);
    expect(statuses.slice(0, 30).every((s) => s === 200)).toBe(true);
    expect(statuses[30]).toBe(429);
    expect(testConfig().RATE_LIMIT_PER_MINUTE).toBe(30);
  });

  it('rate-limited paid requests are never billed', async () => {
    await awayFromMinuteEdge();
    const a = await newAccount(gw.db, { rateLimit: 3 });
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await api('GET', '/events/platforms', { key: a.key })).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
    expect(await totalUsed(gw.db, a.accountId)).toBe(15);
    const rows = await ledgerRows(gw.db, a.accountId);
    expect(rows).toHaveLength(3);
    expect(rows.every((r) => r.state === 'charged')).toBe(true);
  });

  it('limits are per key: another key of the same account has its own window', async () => {
    await awayFromMinuteEdge();
    const a = await newAccount(gw.db, { rateLimit: 1 });
    const b = await createKey(gw.db, { accountId: a.accountId, rateLimitPerMinute: 1 });
    expect((await api('GET', '/usage', { key: a.key })).status).toBe(200);
    expect((await api('GET', '/usage', { key: a.key })).status).toBe(429);
    expect((await api('GET', '/usage', { key: b.key })).status).toBe(200);
  });

  it('concurrent requests cannot slip past the limit: 25 at once with a limit of 10 admit exactly 10', async () => {
    await awayFromMinuteEdge();
    const a = await newAccount(gw.db, { rateLimit: 10 });
    const replies = await Promise.all(Array.from({ length: 25 }, () => api('GET', '/svc/data/ping', { key: a.key })));
    const ok = replies.filter((r) => r.status === 200).length;
    expect(ok).toBe(10);
    expect(replies.filter((r) => r.status === 429).every((r) => gatewayCode(r) === 'rate_limited')).toBe(true);
    expect(ok + replies.filter((r) => r.status === 429).length).toBe(25);
    expect(await totalUsed(gw.db, a.accountId)).toBe(10);
  });
});

describe('RateLimit headers on the answers of counted requests', () => {
  let fx: TestGateway;
  let fapi: Client;

  beforeAll(async () => {
    // The fixture API exercises the gateway contract: it answers 4xx and 5xx on demand.
    fx = await startTestGateway({ env: GATEWAY_ENV, apis: withFixture(createFixtureApi()) });
    fapi = clientFor(fx.url);
  });
  afterAll(async () => {
    await fx.close();
  });

  it('served, billing-denied, parameter-refused, API 4xx and API 5xx answers all carry them, counting down', async () => {
    await awayFromMinuteEdge();
    const a = await newAccount(fx.db, { rateLimit: 50 });
    const broke = await newAccount(fx.db, { plan: 'free', rateLimit: 50 });
    await setUsage(fx.db, broke.accountId, 1000);
    const replies = [
      await fapi('GET', '/svc/data/ping', { key: a.key }),
      await fapi('POST', '/watchlist', { key: a.key, body: { website: 'pf_01', event: 'G5vYZ9fT1aB2cD3e', region: 'us' } }),
      await fapi('GET', '/svc/data/sales/marketplace_a/E-1?sales_limit=0', { key: a.key }),
      await fapi('POST', '/svc/data/search?outcome=not_found', { key: a.key }),
      await fapi('POST', '/svc/data/search?outcome=throw', { key: a.key }),
      await fapi('GET', '/watchlist/424242', { key: a.key }),
    ];
    expect(replies.map((r) => r.status)).toEqual([200, 201, 400, 404, 500, 404]);
    replies.forEach((r, i) => {
      expect(structured(r.headers.get('ratelimit-policy')).params.q).toBe(50);
      expect(structured(r.headers.get('ratelimit')).params.r).toBe(50 - (i + 1));
    });
    const denied = await fapi('GET', '/svc/data/ping', { key: broke.key });
    expect(denied.status).toBe(402);
    expect(structured(denied.headers.get('ratelimit')).params.r).toBe(49);
  });
});

describe('window arithmetic against a fixed clock', () => {
  // The real RateLimiter on the real database; only its clock is pinned so the window
  // position, Retry-After and the reset are exact rather than racing the wall clock.
  let clocked: TestGateway;
  let now = 0;
  let capi: Client;

  beforeAll(async () => {
    clocked = await startTestGateway({ env: GATEWAY_ENV });
    clocked.services.limiter = new RateLimiter(new AdmissionGroups(clocked.services.pool), clocked.services.pool, () => now);
    capi = clientFor(clocked.url);
  });
  afterAll(async () => {
    await clocked.close();
  });

  it('Retry-After is the whole seconds left in the calendar minute, rounded up; the next minute starts afresh', async () => {
    const minute = Math.floor(Date.now() / 60_000) * 60_000;
    now = minute + 15_300;
    const a = await newAccount(clocked.db, { rateLimit: 2 });
    expect((await capi('GET', '/usage', { key: a.key })).status).toBe(200);
    const second = await capi('GET', '/usage', { key: a.key });
    expect(structured(second.headers.get('ratelimit')).params).toEqual({ r: 0, t: 45 });
    const third = await capi('GET', '/usage', { key: a.key });
    expect(third.status).toBe(429);
    expect(retryAfter(third.headers.get('retry-after'))).toBe(45);

    now = minute + 59_999;
    const edge = await capi('GET', '/usage', { key: a.key });
    expect(edge.status).toBe(429);
    expect(retryAfter(edge.headers.get('retry-after'))).toBe(1);

    now = minute + 60_000; // the next window
    const fresh = await capi('GET', '/usage', { key: a.key });
    expect(fresh.status).toBe(200);
    expect(structured(fresh.headers.get('ratelimit')).params).toEqual({ r: 1, t: 60 });
  });
});

describe('rejected keys are limited per client address; requests without a key are not', () => {
  let limited: TestGateway;
  let plain: TestGateway;

  beforeAll(async () => {
    // A key cache longer than a test, so "a key already in use" stays cached through it.
    limited = await startTestGateway({ env: { TRUST_PROXY: 'true', UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: '5', KEY_CACHE_TTL_MS: '60000' } });
    plain = await startTestGateway({ env: { TRUST_PROXY: 'false', UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: '5' } });
  });
  afterAll(async () => {
    await limited.close();
    await plain.close();
  });

  it('after 5 bad-key requests the 6th gets 429 rate_limited, without asking the key store; a valid key in use from the same address is still served', async () => {
    await awayFromMinuteEdge();
    const from = clientFor(limited.url);
    // A key in use: served (so cached) before its address's failed attempts.
    const a = await newAccount(limited.db);
    expect((await clientFor(limited.url)('GET', '/usage', { key: a.key })).status).toBe(200);
    const unseen = await newAccount(limited.db);
    let lookups = 0;
    const count = (q: { sql: string }) => void (q.sql.includes('api_keys') && lookups++);
    limited.db.on('query', count);
    for (let i = 0; i < 5; i++) {
      const r = await from('GET', '/usage', { key: generateApiKey().key });
      expect(r.status).toBe(401);
      expect(gatewayCode(r)).toBe('invalid_credentials');
      const policy = structured(r.headers.get('ratelimit-policy'));
      expect(policy.params.q).toBe(5);
      expect(structured(r.headers.get('ratelimit')).params.r).toBe(4 - i);
    }
    expect(lookups).toBe(5);
    const sixth = await from('GET', '/usage', { key: generateApiKey().key });
    expect(sixth.status).toBe(429);
    expect(gatewayCode(sixth)).toBe('rate_limited');
    // The per-address limit applies before a lookup (issue 25): guessing on costs the key store nothing.
    for (let i = 0; i < 5; i++) expect((await from('GET', '/usage', { key: generateApiKey().key })).status).toBe(429);
    expect(lookups).toBe(5);
    // A key the gateway has not seen is not looked up either, until the window ends.
    expect(gatewayCode(await from('GET', '/usage', { key: unseen.key }))).toBe('rate_limited');
    expect(lookups).toBe(5);
    limited.db.off('query', count);
    const s = retryAfter(sixth.headers.get('retry-after'));
    expect(s).toBeGreaterThanOrEqual(1);
    expect(s).toBeLessThanOrEqual(60);
    // A request that sends no key guesses nothing: still 401 unauthenticated (spec 5.2).
    expect(gatewayCode(await from('GET', '/usage'))).toBe('unauthenticated');
    // A real key in use is not held back by its address's failed attempts.
    expect((await from('GET', '/usage', { key: a.key })).status).toBe(200);
    // Another address has its own budget.
    const other = clientFor(limited.url);
    expect(gatewayCode(await other('GET', '/usage', { key: 'garbage' }))).toBe('invalid_credentials');
  });

  it('requests without a key are never limited: far past the limit, each is 401 unauthenticated, without RateLimit headers', async () => {
    await awayFromMinuteEdge();
    const from = clientFor(limited.url);
    const paths = ['/usage', '/watchlist', '/svc/data/ping', '/events/platforms'];
    for (let i = 0; i < 30; i++) {
      const r = await from('GET', paths[i % paths.length]!);
      expect(r.status, `request ${i + 1}`).toBe(401);
      expect(gatewayCode(r)).toBe('unauthenticated');
      expect(r.headers.get('ratelimit')).toBeNull();
      expect(r.headers.get('retry-after')).toBeNull();
    }
  });

  it('requests without a key do not use up the address budget: rejected keys (unknown, malformed, revoked, expired) still get 5 x 401, then 429', async () => {
    await awayFromMinuteEdge();
    const from = clientFor(limited.url);
    for (let i = 0; i < 20; i++) expect((await from('GET', '/usage')).status).toBe(401);
    const revoked = await newAccount(limited.db);
    await revokeKey(limited.db, revoked.keyId);
    const expired = await newAccount(limited.db, { expiresAt: new Date(Date.now() - 60_000) });
    const rejected = [generateApiKey().key, 'garbage', revoked.key, expired.key, generateApiKey().key, 'tmk_short', revoked.key];
    const replies = [];
    for (const key of rejected) replies.push(await from('GET', '/usage', { key }));
    expect(replies.map((r) => gatewayCode(r))).toEqual([...Array(5).fill('invalid_credentials'), 'rate_limited', 'rate_limited']);
    expect(replies.map((r) => r.status)).toEqual([401, 401, 401, 401, 401, 429, 429]);
    // Past the limit, a request without a key is still 401 unauthenticated.
    expect(gatewayCode(await from('GET', '/usage'))).toBe('unauthenticated');
  });

  it('answering a request without a key costs a header check: no limiter call, no key lookup', async () => {
    const hit = vi.spyOn(limited.services.limiter, 'hit');
    const verify = vi.spyOn(limited.services.keys, 'verify');
    try {
      const from = clientFor(limited.url);
      for (const path of ['/usage', '/watchlist/1', '/events/platforms']) expect(gatewayCode(await from('GET', path))).toBe('unauthenticated');
      expect(hit).not.toHaveBeenCalled();
      expect(verify).not.toHaveBeenCalled();
      // A rejected key is looked up and counted.
      expect(gatewayCode(await from('GET', '/usage', { key: generateApiKey().key }))).toBe('invalid_credentials');
      expect(verify).toHaveBeenCalledTimes(1);
      expect(hit).toHaveBeenCalledTimes(1);
    } finally {
      hit.mockRestore();
      verify.mockRestore();
    }
  });

  it('behind the trusted proxy, a client cannot escape by sending its own X-Forwarded-For entries', async () => {
    await awayFromMinuteEdge();
    // The reverse proxy appends the address it saw; anything before it came from the client.
    const proxySaw = randomAddress();
    const statuses = [];
    for (let i = 0; i < 7; i++) {
      const r = await clientFor(limited.url, `${randomAddress()}, ${proxySaw}`)('GET', '/usage', { key: generateApiKey().key });
      statuses.push(r.status);
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429]);
  });

  it('without TRUST_PROXY, X-Forwarded-For is ignored, so rotating it does not help either', async () => {
    await awayFromMinuteEdge();
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await clientFor(plain.url)('GET', '/usage', { key: 'garbage' })).status);
    // Every request comes from 127.0.0.1, whose window other gateways of the run may share: at
    // the latest the 6th is refused.
    expect(statuses.at(-1)).toBe(429);
  });
});

describe('peeks (the address check before a key lookup, the window of a refusal)', () => {
  // The real RateLimiter on the real database: windows written by the test (its ground truth),
  // then peeked at all at once, as a restarted stream node's storm of unknown keys does.
  it('property: concurrent peeks each read their own subject and window, in one or two reads rather than one each', async () => {
    const minute = Math.floor(Date.now() / 60_000) * 60_000 + 20_000;
    // A pool of its own, so the reads counted are this limiter's only.
    const pool = createPool({ connectionString: databaseUrl(), max: 4 });
    const limiter = new RateLimiter(new AdmissionGroups(pool), pool, () => minute);
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.record({ hits: fc.nat(40), earlier: fc.boolean() }), { minLength: 1, maxLength: 12 }), fc.array(fc.nat(), { minLength: 1, maxLength: 60 }), async (windows, picks) => {
          const run = randomAddress();
          // A subject per window; `earlier`: its row is for the previous minute, so this one has no hits yet.
          const subjects = windows.map((_, i) => `peek-test:${run}:${i}`);
          const start = Math.floor(minute / 60_000) * 60_000;
          await gw.db('rate_limit_windows').insert(
            windows.map((w, i) => ({ subject: subjects[i]!, window_start: new Date(w.earlier ? start - 60_000 : start), hits: w.hits })),
          );
          const query = vi.spyOn(pool, 'query');
          try {
            const asked = picks.map((p) => p % windows.length);
            const got = await Promise.all(asked.map((i) => limiter.peek(subjects[i]!, 30)));
            expect(got.map((d) => d.remaining)).toEqual(asked.map((i) => Math.max(0, 30 - (windows[i]!.earlier ? 0 : windows[i]!.hits))));
            expect(got.every((d) => d.allowed)).toBe(true);
            expect(query.mock.calls.length).toBeLessThanOrEqual(2);
          } finally {
            query.mockRestore();
            await gw.db('rate_limit_windows').whereIn('subject', subjects).delete();
          }
        }),
        { numRuns: 25 },
      );
    } finally {
      await pool.end();
    }
  });
});
