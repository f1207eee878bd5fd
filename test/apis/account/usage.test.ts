// GET /usage over HTTP (spec 2.7, 3.2, 4.4, 7.5, 8) against a real gateway and PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../../db/connection.ts';
import { createPool } from '../../../db/pool.ts';
import { setSubscriptionStatus, setUsage } from '../../../src/accounts/operations.ts';
import { usageReportSchema, type UsageReport } from '../../../src/apis/account/schema.ts';
import { LocalBillingProvider } from '../../../src/billing/local-provider.ts';
import { addMonths } from '../../../src/billing/periods.ts';
import { call, newAccount, startTestGateway, type TestGateway } from '../../support/harness.ts';

const DAY = 86_400_000;
let gw: TestGateway;
let db: Db;

beforeAll(async () => {
  gw = await startTestGateway();
  db = gw.db;
});
afterAll(async () => {
  await gw?.close();
});

/** GET /usage, asserting 200 and the published schema. */
async function usage(key: string, base = gw.url): Promise<UsageReport> {
  const r = await call(base, 'GET', '/usage', { key });
  expect(r.status, r.text).toBe(200);
  const parsed = usageReportSchema.safeParse(r.body);
  if (!parsed.success) throw new Error(`GET /usage does not match the schema: ${parsed.error.message}\n${r.text}`);
  return r.body as UsageReport;
}

/** A paid request: GET /svc/data/ping costs 1, GET /events/platforms costs 5 (spec 8). */
function paid(key: string, credits: 1 | 5 = 1) {
  return call(gw.url, 'GET', credits === 1 ? '/svc/data/ping' : '/events/platforms', { key });
}

async function counterRows(accountId: number) {
  return db('usage_counters').where({ account_id: accountId }).orderBy('period_start');
}

describe('GET /usage for served subscriptions', () => {
  it('active account on a fresh period', async () => {
    const before = Date.now();
    const a = await newAccount(db, { plan: 'pro' });
    const after = Date.now();
    const r = await usage(a.key);
    expect(r.customer_id).toMatch(/^cus_/);
    expect(r.plan).toBe('pro');
    expect(r.plan_ids.subscription_id).toMatch(/^sub_/);
    expect(r.plan_ids).toMatchObject({ price_id: 'price_pro', product_id: 'prod_api' });
    expect(r).toMatchObject({ status: 'active', usage_status: 'ok', cancel_at_period_end: false, canceled_at: null, trial_end: null, unit: 'credits' });
    expect(r.credits).toEqual({
      included: 200_000,
      used: 0,
      remaining: 200_000,
      overage: 0,
      percent_used: 0,
      projected_used: 0,
      hard_cap: 'unlimited',
      in_overage: false,
    });
    const start = Date.parse(r.period.start!);
    expect(start).toBeGreaterThanOrEqual(before);
    expect(start).toBeLessThanOrEqual(after);
    expect(r.period.end).toBe(addMonths(new Date(start), 1).toISOString());
    expect(r.period.days_remaining).toBeGreaterThanOrEqual(28);
    expect(r.period.days_remaining).toBeLessThanOrEqual(31);
    expect(r.period.elapsed_fraction).toBeLessThan(0.001);
    expect(Math.abs(Date.parse(r.as_of) - Date.now())).toBeLessThan(10_000);
  });

  it('trialing account: served, with trial_end set', async () => {
    const a = await newAccount(db, { plan: 'starter', status: 'trialing' });
    const r = await usage(a.key);
    expect(r.status).toBe('trialing');
    expect(r.usage_status).toBe('ok');
    expect(r.plan).toBe('starter');
    expect(r.trial_end).not.toBeNull();
    const trialEnd = Date.parse(r.trial_end!);
    expect(trialEnd).toBeGreaterThan(Date.now() + 13 * DAY);
    expect(trialEnd).toBeLessThan(Date.now() + 15 * DAY);
    // Starter: 20000 included under a 25000 cap; remaining counts the included ones.
    expect(r.credits).toMatchObject({ included: 20_000, hard_cap: 25_000, remaining: 20_000 });
    expect((await paid(a.key)).status).toBe(200);
  });

  it('used grows by the cost of each paid request', async () => {
    const a = await newAccount(db, { plan: 'pro' });
    for (let i = 0; i < 3; i++) expect((await paid(a.key, 1)).status).toBe(200);
    expect((await paid(a.key, 5)).status).toBe(200);
    const r = await usage(a.key);
    expect(r.credits.used).toBe(8);
    expect(r.credits.remaining).toBe(200_000 - 8);
    expect(r.credits.percent_used).toBe(0);
    expect(r.credits.projected_used).toBeGreaterThanOrEqual(8);
    expect(r.usage_status).toBe('ok');
  });

  it('/usage itself costs nothing and writes no ledger rows', async () => {
    const a = await newAccount(db, { plan: 'pro' });
    for (let i = 0; i < 5; i++) await usage(a.key);
    expect((await usage(a.key)).credits.used).toBe(0);
    const ledger = await db('credit_ledger').where({ account_id: a.accountId });
    expect(ledger).toEqual([]);
    const counters = await counterRows(a.accountId);
    expect(counters.every((c) => Number(c.used) === 0)).toBe(true);
  });

  it('reflects usage set by an operator, through every usage_status', async () => {
    const a = await newAccount(db, { plan: 'pro' });
    const cases: [number, UsageReport['usage_status'], Partial<UsageReport['credits']>][] = [
      [150_000, 'ok', { remaining: 50_000, overage: 0, in_overage: false, percent_used: 75 }],
      [160_000, 'approaching_limit', { remaining: 40_000, percent_used: 80 }],
      [200_000, 'approaching_limit', { remaining: 0, overage: 0, in_overage: false }],
      [200_001, 'over_included', { remaining: 0, overage: 1, in_overage: true }],
      [3_000_000, 'over_included', { overage: 2_800_000, in_overage: true, hard_cap: 'unlimited' }],
    ];
    for (const [used, status, credits] of cases) {
      await setUsage(db, a.accountId, used);
      const r = await usage(a.key);
      expect(r.credits.used, `used ${used}`).toBe(used);
      expect(r.usage_status, `used ${used}`).toBe(status);
      expect(r.credits).toMatchObject(credits);
    }
    // Past included, requests are still served and keep counting.
    expect((await paid(a.key)).status).toBe(200);
    expect((await usage(a.key)).credits.used).toBe(3_000_001);
  });
});

describe('hard cap', () => {
  it("plan 'free' at 1000: at_hard_cap, /usage and free endpoints still answer, paid calls get 402", async () => {
    const a = await newAccount(db, { plan: 'free' });
    await setUsage(db, a.accountId, 999);
    expect((await usage(a.key)).usage_status).toBe('approaching_limit');
    // A 5-credit call would pass the cap: refused, and not billed.
    const big = await paid(a.key, 5);
    expect(big.status).toBe(402);
    expect(big.body).toEqual({ error: { code: 'limit_reached', message: expect.any(String) } });
    expect((await usage(a.key)).credits.used).toBe(999);
    // The last credit is spendable.
    expect((await paid(a.key, 1)).status).toBe(200);

    const r = await usage(a.key);
    expect(r.usage_status).toBe('at_hard_cap');
    expect(r.credits).toMatchObject({ included: 1000, used: 1000, remaining: 0, overage: 0, hard_cap: 1000, in_overage: false, projected_used: 1000 });
    const denied = await paid(a.key, 1);
    expect(denied.status).toBe(402);
    expect(denied.body.error.code).toBe('limit_reached');
    expect((await call(gw.url, 'GET', '/watchlist', { key: a.key })).status).toBe(200);
    expect((await usage(a.key)).credits.used).toBe(1000);
  });

  it("plan 'starter' (cap above included): overage up to the cap, then limit_reached", async () => {
    const a = await newAccount(db, { plan: 'starter' });
    await setUsage(db, a.accountId, 24_999);
    let r = await usage(a.key);
    expect(r.usage_status).toBe('over_included');
    expect(r.credits).toMatchObject({ remaining: 0, overage: 4_999, in_overage: true });
    expect((await paid(a.key)).status).toBe(200);
    r = await usage(a.key);
    expect(r.usage_status).toBe('at_hard_cap');
    expect(r.credits.used).toBe(25_000);
    expect((await paid(a.key)).status).toBe(402);
  });
});

describe('subscriptions that are not served', () => {
  const ZEROED = { included: 0, used: 0, remaining: 0, overage: 0, percent_used: 0, projected_used: 0, hard_cap: 0, in_overage: false };

  it.each(['past_due', 'paused', 'canceled', 'unpaid'])('%s: status none, usage_status none, zeroed credits; paid calls 402', async (status) => {
    const a = await newAccount(db, { plan: 'pro', status });
    const r = await usage(a.key);
    expect(r.status).toBe('none');
    expect(r.usage_status).toBe('none');
    expect(r.plan).toBeNull();
    expect(r.credits).toEqual(ZEROED);
    if (status === 'canceled') expect(r.canceled_at).not.toBeNull();
    const p = await paid(a.key);
    expect(p.status).toBe(402);
    expect(p.body.error.code).toBe('no_subscription');
  });

  it('a subscription moved out of service reports none, and back in reports the usage again', async () => {
    const a = await newAccount(db, { plan: 'pro' });
    await setUsage(db, a.accountId, 42);
    await setSubscriptionStatus(db, a.accountId, 'past_due');
    const r = await usage(a.key);
    expect(r).toMatchObject({ status: 'none', usage_status: 'none', plan: null });
    expect(r.credits.used).toBe(0);
    await setSubscriptionStatus(db, a.accountId, 'active');
    const back = await usage(a.key);
    expect(back).toMatchObject({ status: 'active', plan: 'pro' });
    expect(back.credits.used).toBe(42);
  });

  it('an account without a billing account: customer_id null, status none, paid calls no_billing_account', async () => {
    const a = await newAccount(db, { plan: 'pro', billing: false });
    const r = await usage(a.key);
    expect(r.customer_id).toBeNull();
    expect(r.status).toBe('none');
    expect(r.usage_status).toBe('none');
    const p = await paid(a.key);
    expect(p.status).toBe(402);
    expect(p.body.error.code).toBe('no_billing_account');
  });
});

describe('access', () => {
  it('any key may call /usage, even one granted only market_data', async () => {
    const a = await newAccount(db, { apis: ['market_data'] });
    expect((await usage(a.key)).status).toBe('active');
    const w = await call(gw.url, 'GET', '/watchlist', { key: a.key });
    expect(w.status).toBe(403);
    expect(w.body.error.code).toBe('forbidden');
  });

  it('even a key granted no API at all', async () => {
    const a = await newAccount(db, { apis: [] });
    expect((await usage(a.key)).plan).toBe('pro');
    expect((await paid(a.key)).status).toBe(403);
  });

  it('without a key or with a wrong one: 401 in the gateway envelope', async () => {
    const none = await call(gw.url, 'GET', '/usage');
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('unauthenticated');
    const wrong = await call(gw.url, 'GET', '/usage', { key: 'tmk_' + 'x'.repeat(40) });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.code).toBe('invalid_credentials');
  });
});

describe('billing failures (spec 7.5)', () => {
  it('a misconfigured plan (no price): 502 bad_plan_pricing; paid calls 402 plan_unavailable', async () => {
    const planId = `broken_${Date.now().toString(36)}`;
    await db('plans').insert({ id: planId, name: 'Broken', included: 100, hard_cap: 100, price_id: null, product_id: 'prod_api' });
    const a = await newAccount(db, { plan: planId });
    const r = await call(gw.url, 'GET', '/usage', { key: a.key });
    expect(r.status).toBe(502);
    expect(r.body).toEqual({ detail: 'bad_plan_pricing' });
    const p = await paid(a.key);
    expect(p.status).toBe(402);
    expect(p.body.error.code).toBe('plan_unavailable');
    // Not served anyway: the report answers normally with status none.
    await setSubscriptionStatus(db, a.accountId, 'paused');
    expect((await usage(a.key)).status).toBe('none');
  });

  it('billing provider unreachable: 502 billing_unavailable', async () => {
    const dead = 'postgres://postgres@127.0.0.1:1/x';
    const deadDb = createDb({ connectionString: dead });
    const deadPool = createPool({ connectionString: dead });
    const broken = await startTestGateway({ services: { billing: new LocalBillingProvider(deadDb, deadPool) } });
    try {
      const a = await newAccount(db, { plan: 'pro' });
      const r = await call(broken.url, 'GET', '/usage', { key: a.key });
      expect(r.status).toBe(502);
      expect(r.body).toEqual({ detail: 'billing_unavailable' });
      // The same account is fine on a gateway whose billing works.
      expect((await usage(a.key)).status).toBe('active');
    } finally {
      await broken.close();
      await deadDb.destroy();
      await deadPool.end();
    }
  });
});

describe('billing periods', () => {
  /** Moves the account's subscription (and its counter) into the past. */
  async function backdate(accountId: number, start: Date, end: Date, extra: Record<string, unknown> = {}) {
    const sub = await db('subscriptions').where({ account_id: accountId }).first();
    await db('usage_counters').where({ account_id: accountId, period_start: sub.current_period_start }).delete();
    await db('subscriptions').where({ account_id: accountId }).update({ current_period_start: start, current_period_end: end, ...extra });
  }

  it('a period that ended is rolled forward on /usage: new period, used counts from 0', async () => {
    const a = await newAccount(db, { plan: 'pro' });
    const oldStart = new Date(Date.now() - 40 * DAY);
    const oldEnd = addMonths(oldStart, 1);
    await backdate(a.accountId, oldStart, oldEnd);
    await setUsage(db, a.accountId, 500); // used in the old period

    const r = await usage(a.key);
    expect(r.status).toBe('active');
    expect(r.period.start).toBe(oldEnd.toISOString());
    expect(r.period.end).toBe(addMonths(oldStart, 2).toISOString());
    expect(Date.parse(r.period.start!)).toBeLessThanOrEqual(Date.now());
    expect(Date.parse(r.period.end!)).toBeGreaterThan(Date.now());
    expect(r.credits.used).toBe(0);

    expect((await paid(a.key)).status).toBe(200);
    expect((await usage(a.key)).credits.used).toBe(1);
    const counters = await counterRows(a.accountId);
    expect(counters.map((c) => [c.period_start.toISOString(), Number(c.used)])).toEqual([
      [oldStart.toISOString(), 500],
      [oldEnd.toISOString(), 1],
    ]);
  });

  it('a period that ended long ago rolls to the period containing now', async () => {
    const a = await newAccount(db, { plan: 'pro' });
    const oldStart = new Date(Date.now() - 400 * DAY);
    await backdate(a.accountId, oldStart, addMonths(oldStart, 1));
    const r = await usage(a.key);
    expect(Date.parse(r.period.start!)).toBeLessThanOrEqual(Date.now());
    expect(Date.parse(r.period.end!)).toBeGreaterThan(Date.now());
    expect(r.period.days_remaining).toBeLessThanOrEqual(31);
  });

  it('a paid request after the period ended is billed to the new period', async () => {
    const a = await newAccount(db, { plan: 'free' });
    const oldStart = new Date(Date.now() - 35 * DAY);
    await backdate(a.accountId, oldStart, addMonths(oldStart, 1));
    await setUsage(db, a.accountId, 1000); // at the cap in the old period
    expect((await paid(a.key)).status).toBe(200);
    const r = await usage(a.key);
    expect(r.credits.used).toBe(1);
    expect(r.usage_status).toBe('ok');
  });

  // KNOWN BUG (src/billing/local-provider.ts, rollPeriod): the roll is guarded on
  // `current_period_end = <JS Date>`, which has millisecond precision; a period end with
  // microseconds (anything written by SQL now()) never matches, so the period never rolls,
  // /usage keeps showing the ended period and every paid request is refused no_subscription.
  it('a period end stored with microseconds (set in SQL) still rolls', async () => {
    const a = await newAccount(db, { plan: 'pro' });
    await db('subscriptions')
      .where({ account_id: a.accountId })
      .update({ current_period_start: db.raw("now() - interval '40 days'"), current_period_end: db.raw("now() - interval '10 days'") });
    const r = await usage(a.key);
    expect(Date.parse(r.period.end!)).toBeGreaterThan(Date.now());
    expect(r.status).toBe('active');
  });

  it('cancel_at_period_end: served until the end, then status none', async () => {
    const a = await newAccount(db, { plan: 'pro' });
    await db('subscriptions').where({ account_id: a.accountId }).update({ cancel_at_period_end: true });
    const during = await usage(a.key);
    expect(during).toMatchObject({ status: 'active', cancel_at_period_end: true, canceled_at: null });

    const oldStart = new Date(Date.now() - 40 * DAY);
    const oldEnd = addMonths(oldStart, 1);
    await backdate(a.accountId, oldStart, oldEnd);
    const after = await usage(a.key);
    expect(after).toMatchObject({ status: 'none', usage_status: 'none', plan: null, canceled_at: oldEnd.toISOString() });
    const sub = await db('subscriptions').where({ account_id: a.accountId }).first();
    expect(sub.status).toBe('canceled');
    const p = await paid(a.key);
    expect(p.status).toBe(402);
    expect(p.body.error.code).toBe('no_subscription');
  });
});
