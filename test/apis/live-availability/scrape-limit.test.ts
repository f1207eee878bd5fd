// The per-account, per-platform limit on on-demand scrapes (issue 36), through the real gateway
// and PostgreSQL: at most the plan's number (SCRAPE_REQUESTS_PER_PLATFORM_PER_MINUTE when the plan
// sets none) of POST /events/scrape per account and platform per calendar minute, over all the
// account's keys; past it 429 rate_limited in the gateway envelope with Retry-After and the
// policy's RateLimit headers, its credits released (never billed); checked after the body (a bad
// body stays a billed 400) and after the key's own limit; other accounts and platforms unaffected.
// The scrape itself is a stub runner here (it records what it was asked to scrape: the ground
// truth that a refused request never starts one); scrape.test.ts runs one against the real stack.
// The limiter runs on a clock the tests set, so windows and Retry-After are exact.
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../../src/accounts/operations.ts';
import { APIS } from '../../../src/apis/index.ts';
import type { ScrapeRunner } from '../../../src/apis/live-availability/scrape-runs.ts';
import type { BillingProvider } from '../../../src/billing/provider.ts';
import { AdmissionGroups } from '../../../src/gateway/admissions.ts';
import { buildOpenApi } from '../../../src/gateway/openapi.ts';
import { RateLimiter, type RateDecision } from '../../../src/gateway/rate-limit.ts';
import type { EventRef } from '../../../src/platform/event-ref.ts';
import type { PlatformKey } from '../../../src/platform/registry.ts';
import { newAccount, startTestGateway, type Reply, type TestAccount, type TestGateway } from '../../support/harness.ts';
import { clientFor, GATEWAY_ENV, gatewayCode, ledgerRows, usedCredits, type Client } from '../../support/gateway-helpers.ts';

/** The service default for plans that set none, in this file (the real default is 10). */
const DEFAULT_LIMIT = 3;
const MINUTE = 60_000;
const COST = 5;

let gw: TestGateway;
let api: Client;
/** The limiter's clock (ms since the epoch), set by each test. */
let clock = 0;

/** The stub scrape backend: every scrape it was asked to start, as `platform|event_id`. */
const started: string[] = [];
const stubRunner: ScrapeRunner = {
  run: async (ref: EventRef) => {
    started.push(`${ref.platform}|${ref.eventId}`);
    return {
      success: true,
      platform: ref.platform,
      event_id: ref.eventId,
      region: ref.region,
      scrape_timestamp: new Date().toISOString(),
      sections_type: 'OfferSections',
      total_stock: 0,
      sections: {},
      event_info: null,
      degraded: null,
      error: null,
    };
  },
  assertReady: async () => {},
  degradedPlatforms: async () => ({}),
};

// Plans of this file's own (other files share the database), each with its own limit.
const suffix = randomBytes(4).toString('hex');
const PLAN_LIMITS: Record<string, number | null> = { [`scrape1_${suffix}`]: 1, [`scrape2_${suffix}`]: 2, [`scrape4_${suffix}`]: 4, pro: null };
const limitOf = (plan: string) => PLAN_LIMITS[plan] ?? DEFAULT_LIMIT;

beforeAll(async () => {
  gw = await startTestGateway({
    env: { ...GATEWAY_ENV, SCRAPE_REQUESTS_PER_PLATFORM_PER_MINUTE: String(DEFAULT_LIMIT) },
    services: { scrapes: stubRunner },
  });
  gw.services.limiter = new RateLimiter(new AdmissionGroups(gw.services.pool), gw.services.pool, () => clock);
  api = clientFor(gw.url);
  for (const [id, limit] of Object.entries(PLAN_LIMITS)) {
    if (limit === null) continue;
    await gw.db('plans').insert({
      id,
      name: `Scrape limit ${limit}`,
      included: 1_000_000,
      hard_cap: null,
      price_id: `price_${id}`,
      product_id: 'prod_api',
      scrape_requests_per_platform_per_minute: limit,
    });
  }
});
afterAll(async () => {
  await gw?.close();
});

/** A calendar minute of its own for each test: windows never carry over between tests. */
let minutes = 0;
function freshWindow(): number {
  minutes += 2;
  return (Math.floor(Date.now() / MINUTE) + minutes) * MINUTE;
}

const PLATFORMS = ['pf_06', 'pf_05', 'pf_10'] as const satisfies readonly PlatformKey[];
type Platform = (typeof PLATFORMS)[number];

/** A valid body for account number `i` (its own event, so the stub's records name the account). */
function body(platform: Platform, i: number): { platform: string; event_id: string; region: string } {
  switch (platform) {
    case 'pf_06':
      return { platform, event_id: `Acct000${i}`, region: 'us' };
    case 'pf_05':
      return { platform, event_id: `70000${i}`, region: 'it' };
    case 'pf_10':
      return { platform, event_id: `00000000-0000-4000-8000-00000000000${i}`, region: 'us' };
  }
}
const BAD_BODY = { platform: 'pf_06', event_id: 'not an id!', region: 'us' };

const scrape = (key: string, b: unknown) => api('POST', '/events/scrape', { key, body: b });

/** Seconds from `at` to the end of its calendar minute, at least 1: what Retry-After must say. */
const secondsLeft = (at: number) => Math.max(1, Math.ceil((Math.floor(at / MINUTE) * MINUTE + MINUTE - at) / 1000));

/** The items of a structured-field list header (one per policy), by policy name. */
function policies(value: string | null): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of (value ?? '').split(',')) {
    const m = /^\s*"([^"]+)";(.*)$/.exec(item);
    if (m) out[m[1]!] = m[2]!.trim();
  }
  return out;
}

function expectRefusal(r: Reply, platform: string, limit: number, at: number): void {
  expect(r.status, r.text).toBe(429);
  expect(gatewayCode(r)).toBe('rate_limited');
  expect(r.body.error.message).toBe(`more than ${limit} scrape requests to ${platform} in the current minute for this account`);
  expect(r.headers.get('retry-after')).toBe(String(secondsLeft(at)));
  expect(policies(r.headers.get('ratelimit-policy'))[`scrape_${platform}`]).toBe(`q=${limit};w=60`);
  expect(policies(r.headers.get('ratelimit'))[`scrape_${platform}`]).toBe(`r=0;t=${secondsLeft(at)}`);
  // The key's own policy is still reported beside it, and its budget was not the one spent.
  expect(policies(r.headers.get('ratelimit-policy')).default).toMatch(/^q=\d+;w=60$/);
}

describe('one account, one platform', () => {
  it('serves the plan default, then answers 429 rate_limited with Retry-After and the policy; refusals are not billed and never scrape', async () => {
    const t0 = freshWindow();
    const a = await newAccount(gw.db);
    const replies: Reply[] = [];
    clock = t0 + 12_300;
    const from = started.length;
    for (let i = 0; i < DEFAULT_LIMIT + 2; i++) replies.push(await scrape(a.key, body('pf_06', 1)));
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 429, 429]);
    replies.slice(0, DEFAULT_LIMIT).forEach((r, i) => {
      expect(r.headers.get('retry-after')).toBeNull();
      expect(policies(r.headers.get('ratelimit-policy')).scrape_pf_06).toBe(`q=${DEFAULT_LIMIT};w=60`);
      expect(policies(r.headers.get('ratelimit')).scrape_pf_06).toBe(`r=${DEFAULT_LIMIT - i - 1};t=48`);
    });
    for (const r of replies.slice(DEFAULT_LIMIT)) expectRefusal(r, 'pf_06', DEFAULT_LIMIT, clock);
    expect(replies[3]!.headers.get('retry-after')).toBe('48'); // 47.7 s left, in whole seconds up
    expect(started.length - from).toBe(DEFAULT_LIMIT);

    const rows = await ledgerRows(gw.db, a.accountId);
    const byId = new Map(rows.map((row) => [row.request_id, row]));
    replies.forEach((r, i) => {
      const row = byId.get(r.headers.get('x-request-id')!);
      expect(row, `request ${i}`).toMatchObject(i < DEFAULT_LIMIT ? { state: 'charged', status_code: 200, credits: COST } : { state: 'released', status_code: 429, credits: COST });
    });
    expect(await usedCredits(gw.db, a.accountId)).toBe(COST * DEFAULT_LIMIT);
    const usage = await api('GET', '/usage', { key: a.key });
    expect(usage.body.credits.used).toBe(COST * DEFAULT_LIMIT);
  });

  it('the next calendar minute serves again; Retry-After at the end of a minute is 1', async () => {
    const t0 = freshWindow();
    const a = await newAccount(gw.db);
    clock = t0 + 59_200;
    for (let i = 0; i < DEFAULT_LIMIT; i++) expect((await scrape(a.key, body('pf_05', 1))).status).toBe(200);
    const refused = await scrape(a.key, body('pf_05', 1));
    expectRefusal(refused, 'pf_05', DEFAULT_LIMIT, clock);
    expect(refused.headers.get('retry-after')).toBe('1');
    clock = t0 + MINUTE;
    expect((await scrape(a.key, body('pf_05', 1))).status).toBe(200);
  });

  it('a bad body stays a 400 {detail}, billed as an API 4xx, even with the limit spent; it does not count', async () => {
    const t0 = freshWindow();
    const a = await newAccount(gw.db);
    clock = t0 + 1_000;
    const bad = await scrape(a.key, BAD_BODY);
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body)).toEqual(['detail']);
    for (let i = 0; i < DEFAULT_LIMIT; i++) expect((await scrape(a.key, body('pf_06', 1))).status).toBe(200);
    expect((await scrape(a.key, BAD_BODY)).status).toBe(400);
    expectRefusal(await scrape(a.key, body('pf_06', 1)), 'pf_06', DEFAULT_LIMIT, clock);
    expect(await usedCredits(gw.db, a.accountId)).toBe(COST * (DEFAULT_LIMIT + 2));
  });
});

describe('who shares a budget', () => {
  it('every key of the account shares it; the key’s own limit applies first, and a request it refuses does not count', async () => {
    const t0 = freshWindow();
    clock = t0 + 30_000;
    const a = await newAccount(gw.db, { rateLimit: 2 });
    const second = await createKey(gw.db, { accountId: a.accountId, rateLimitPerMinute: 100 });
    expect((await scrape(a.key, body('pf_10', 1))).status).toBe(200);
    expect((await scrape(a.key, body('pf_10', 1))).status).toBe(200);
    const keyLimited = await scrape(a.key, body('pf_10', 1));
    expect(keyLimited.status).toBe(429);
    expect(keyLimited.body.error.message).toBe('more than 2 requests in the current minute');
    // The key's refusal came first and did not count: one scrape of the account's three is left.
    expect((await scrape(second.key, body('pf_10', 1))).status).toBe(200);
    expectRefusal(await scrape(second.key, body('pf_10', 1)), 'pf_10', DEFAULT_LIMIT, clock);
    expect(await usedCredits(gw.db, a.accountId)).toBe(COST * DEFAULT_LIMIT);
  });

  it('another account, and the same account on another platform, are unaffected', async () => {
    const t0 = freshWindow();
    clock = t0 + 5_000;
    const a = await newAccount(gw.db);
    const b = await newAccount(gw.db);
    for (let i = 0; i < DEFAULT_LIMIT; i++) expect((await scrape(a.key, body('pf_06', 1))).status).toBe(200);
    expectRefusal(await scrape(a.key, body('pf_06', 1)), 'pf_06', DEFAULT_LIMIT, clock);
    expect((await scrape(a.key, body('pf_05', 1))).status).toBe(200);
    for (let i = 0; i < DEFAULT_LIMIT; i++) expect((await scrape(b.key, body('pf_06', 2))).status).toBe(200);
  });

  it('a plan’s own limit replaces the default, over or under it', async () => {
    const t0 = freshWindow();
    clock = t0 + 5_000;
    for (const [plan, limit] of [[`scrape1_${suffix}`, 1], [`scrape4_${suffix}`, 4]] as const) {
      const a = await newAccount(gw.db, { plan });
      const statuses = [];
      for (let i = 0; i < limit + 1; i++) statuses.push((await scrape(a.key, body('pf_06', 1))).status);
      expect(statuses, plan).toEqual([...Array<number>(limit).fill(200), 429]);
    }
  });

  it('a limiter that cannot count fails closed: 502 service_unavailable, not billed, no scrape', async () => {
    const a = await newAccount(gw.db);
    const limiter = gw.services.limiter;
    const from = started.length;
    gw.services.limiter = new (class extends RateLimiter {
      override async hit(subject: string, limit: number, lane?: number | string): Promise<RateDecision> {
        if (subject.startsWith('scrape:')) throw Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' });
        return super.hit(subject, limit, lane);
      }
    })(new AdmissionGroups(gw.services.pool), gw.services.pool, () => clock);
    try {
      const r = await scrape(a.key, body('pf_06', 1));
      expect(r.status).toBe(502);
      expect(gatewayCode(r)).toBe('service_unavailable');
    } finally {
      gw.services.limiter = limiter;
    }
    expect(started.length).toBe(from);
    expect(await usedCredits(gw.db, a.accountId)).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------
// The property. Any sequence of scrape requests by three accounts (each on a plan with its own
// limit, or on the default) over three platforms within one calendar minute, sent in bursts of
// concurrent requests at times the clock is set to, with a few bad bodies among them.

interface Step {
  account: number;
  platform: number;
  valid: boolean;
}
interface Scenario {
  plans: string[];
  /** Each burst's time in the minute (ms), and its requests, sent all at once. */
  bursts: { at: number; steps: Step[] }[];
}

const planIds = Object.keys(PLAN_LIMITS);
const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  plans: fc.array(fc.constantFrom(...planIds), { minLength: 3, maxLength: 3 }),
  bursts: fc
    .array(
      fc.record({
        at: fc.integer({ min: 0, max: MINUTE - 1 }),
        steps: fc.array(
          fc.record({ account: fc.nat({ max: 2 }), platform: fc.nat({ max: 2 }), valid: fc.oneof({ weight: 9, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }) }),
          { minLength: 1, maxLength: 8 },
        ),
      }),
      { minLength: 1, maxLength: 4 },
    )
    .map((bursts) => [...bursts].sort((x, y) => x.at - y.at)),
});

/** What the test saw over every run, so a property that counted nothing cannot pass. */
interface Totals {
  served: number;
  refused: number;
}

/** One run of the property against the gateway as it is now (whatever a test swapped in). */
async function checkScenario(s: Scenario, totals: Totals): Promise<void> {
  const t0 = freshWindow();
  const accounts: TestAccount[] = [];
  for (const plan of s.plans) accounts.push(await newAccount(gw.db, { plan }));
  const pair = (account: number, platform: Platform) => `${account}|${platform}`;

  // The ground truth, written down before anything is sent: a pair is served as many of its
  // valid requests as its plan allows, whatever order they arrive in; a bad body is a billed 400.
  const requested = new Map<string, number>();
  const badBodies = [0, 0, 0];
  for (const { steps } of s.bursts) {
    for (const st of steps) {
      if (!st.valid) badBodies[st.account]!++;
      else requested.set(pair(st.account, PLATFORMS[st.platform]!), (requested.get(pair(st.account, PLATFORMS[st.platform]!)) ?? 0) + 1);
    }
  }
  const expectedServed = new Map([...requested].map(([k, n]) => [k, Math.min(n, limitOf(s.plans[Number(k.split('|')[0])]!))]));
  const expectedBilled = accounts.map((_, i) => COST * ([...expectedServed].filter(([k]) => k.startsWith(`${i}|`)).reduce((sum, [, n]) => sum + n, 0) + badBodies[i]!));

  const served = new Map<string, number>();
  const refusedIds: string[][] = accounts.map(() => []);
  const from = started.length;
  for (const burst of s.bursts) {
    clock = t0 + burst.at;
    const replies = await Promise.all(burst.steps.map((st) => scrape(accounts[st.account]!.key, st.valid ? body(PLATFORMS[st.platform]!, st.account) : BAD_BODY)));
    burst.steps.forEach((st, i) => {
      const r = replies[i]!;
      const platform = PLATFORMS[st.platform]!;
      if (!st.valid) {
        expect(r.status, `a bad body: ${r.text}`).toBe(400);
        return;
      }
      if (r.status === 200) {
        served.set(pair(st.account, platform), (served.get(pair(st.account, platform)) ?? 0) + 1);
        expect(r.headers.get('retry-after')).toBeNull();
        return;
      }
      expectRefusal(r, platform, limitOf(s.plans[st.account]!), clock);
      refusedIds[st.account]!.push(r.headers.get('x-request-id')!);
    });
  }

  expect(Object.fromEntries(served), 'served per (account, platform)').toEqual(Object.fromEntries([...expectedServed].filter(([, n]) => n > 0)));
  // A scrape started for exactly the requests served: the stub names the account by its event.
  const scrapes = new Map<string, number>();
  for (const entry of started.slice(from)) {
    const [platform, eventId] = entry.split('|') as [Platform, string];
    const account = [0, 1, 2].find((i) => body(platform, i).event_id === eventId)!;
    scrapes.set(pair(account, platform), (scrapes.get(pair(account, platform)) ?? 0) + 1);
  }
  expect(Object.fromEntries(scrapes), 'scrapes started per (account, platform)').toEqual(Object.fromEntries(served));

  for (const [i, a] of accounts.entries()) {
    const rows = await ledgerRows(gw.db, a.accountId);
    const released = rows.filter((row) => row.state === 'released');
    expect(released.map((row) => row.request_id).sort(), `billed: refusals released, account ${i}`).toEqual([...refusedIds[i]!].sort());
    expect(released.every((row) => row.status_code === 429), `billed: released as 429, account ${i}`).toBe(true);
    expect(await usedCredits(gw.db, a.accountId), `billed credits, account ${i}`).toBe(expectedBilled[i]);
    const usage = await api('GET', '/usage', { key: a.key });
    expect(usage.body.credits.used, `billed credits in GET /usage, account ${i}`).toBe(expectedBilled[i]);
  }
  totals.served += [...served.values()].reduce((x, y) => x + y, 0);
  totals.refused += refusedIds.flat().length;
}

describe('property: served per (account, platform) never exceeds the plan’s limit, refusals are exact and never billed', () => {
  it('holds on the gateway', async () => {
    const totals: Totals = { served: 0, refused: 0 };
    await fc.assert(
      fc.asyncProperty(scenarioArb, (s) => checkScenario(s, totals)),
      { numRuns: 30 },
    );
    // The checks above compared real counts: requests were both served and refused.
    expect(totals.served).toBeGreaterThan(0);
    expect(totals.refused).toBeGreaterThan(0);
  }, 180_000);

  // The property is not a rubber stamp: on a gateway with one part of the feature taken out it
  // finds a counterexample, and fails on the check about that part.
  const mutants = {
    'the limit check disabled (every scrape counted against an unreachable limit)': {
      failsOn: /served per \(account, platform\)/,
      apply: (g: TestGateway) => {
        const pool = g.services.pool;
        g.services.limiter = new (class extends RateLimiter {
          override hit(subject: string, limit: number, lane?: number | string): Promise<RateDecision> {
            return super.hit(subject, subject.startsWith('scrape:') ? 1_000_000 : limit, lane);
          }
        })(new AdmissionGroups(pool), pool, () => clock);
      },
    },
    'refusals captured like any 4xx of the API (the behaviour before issue 36)': {
      failsOn: /billed/,
      apply: (g: TestGateway) => {
        const b = g.services.billing;
        g.services.billing = {
          snapshot: (id) => b.snapshot(id),
          admit: (req) => b.admit(req),
          capture: (id, status) => b.capture(id, status),
          flush: () => b.flush(),
          release: (id, status) => (status !== null && status < 500 ? b.capture(id, status) : b.release(id, status)),
          releaseOrphans: (ms) => b.releaseOrphans(ms),
        } satisfies BillingProvider;
      },
    },
  };

  it.each(Object.entries(mutants))('finds a counterexample when %s', async (_, mutant) => {
    const { limiter, billing } = gw.services;
    mutant.apply(gw);
    try {
      const failure = fc.assert(
        fc.asyncProperty(scenarioArb, (s) => checkScenario(s, { served: 0, refused: 0 })),
        // The failed check's message in the report, to match it below; no shrinking (one failure is the point).
        { numRuns: 50, endOnFailure: true, includeErrorInReport: true },
      );
      await expect(failure).rejects.toThrow(mutant.failsOn);
    } finally {
      gw.services.limiter = limiter;
      gw.services.billing = billing;
    }
  }, 180_000);
});

describe('OpenAPI', () => {
  it('scrapeEvent documents its 429: the gateway envelope with code rate_limited, Retry-After and the RateLimit headers', () => {
    const doc = buildOpenApi(APIS.flatMap((a) => a.routes), { localPort: 8080 }) as {
      paths: Record<string, Record<string, { responses: Record<string, { description: string; headers?: Record<string, unknown>; content?: Record<string, { schema: unknown }> }> }>>;
    };
    const r = doc.paths['/events/scrape']!.post!.responses['429']!;
    expect(r.description).toMatch(/scrape requests to this platform/);
    expect(r.content!['application/json']!.schema).toMatchObject({
      type: 'object',
      properties: { error: { type: 'object', properties: { code: { const: 'rate_limited' }, message: { type: 'string' } } } },
    });
    expect(Object.keys(r.headers ?? {})).toEqual(['Retry-After', 'RateLimit-Policy', 'RateLimit']);
    expect(r.headers!['Retry-After']).toMatchObject({ schema: { type: 'integer', minimum: 1 } });
  });
});
