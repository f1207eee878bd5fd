// Billing denials (spec 3.2, 7.1): 402 limit_reached, no_subscription, no_billing_account,
// plan_unavailable and payment_required on paid routes, in the gateway envelope, never
// charged, never reaching the API; free routes keep working for the same key.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createAccount, createKey, setSubscriptionStatus, setUsage } from '../../src/accounts/operations.ts';
import { newAccount, type TestAccount } from '../support/harness.ts';
import { gatewayCode, ledgerRows, totalUsed, usedCredits, useFixtureGateway } from '../support/gateway-helpers.ts';

// The real gateway plus the fixture API (gateway-helpers.ts), started for this file.
const t = useFixtureGateway();

const PAID: [string, string][] = [
  ['GET', '/svc/data/ping'],
  ['GET', '/events/platforms'],
  ['POST', '/svc/data/search'],
  ['GET', '/svc/data/sales/marketplace_a/E-1?sales_limit=40'],
];

async function plan(id: string): Promise<{ included: number; hard_cap: number | null }> {
  return t.gw.db('plans').where({ id }).first('included', 'hard_cap');
}

/** Every paid route answers the denial; nothing is charged or reaches the API; free routes work. */
async function expectDenied(a: TestAccount, code: string): Promise<void> {
  const before = await totalUsed(t.gw.db, a.accountId);
  for (const [method, path] of PAID) {
    const r = await t.api(method, path, { key: a.key });
    expect(r.status, `${method} ${path}`).toBe(402);
    expect(gatewayCode(r), `${method} ${path}`).toBe(code);
    expect(t.fixture.seen.has(r.headers.get('x-request-id')!)).toBe(false);
  }
  expect(await totalUsed(t.gw.db, a.accountId)).toBe(before);
  expect(await ledgerRows(t.gw.db, a.accountId)).toEqual([]);
  expect((await t.api('GET', '/watchlist', { key: a.key })).status).toBe(200);
  expect((await t.api('GET', '/watchlist/health', { key: a.key })).status).toBe(200);
}

describe('402 limit_reached', () => {
  it('used at the hard cap of plan free: every paid request is refused, free endpoints keep working', async () => {
    const a = await newAccount(t.gw.db, { plan: 'free' });
    const { hard_cap } = await plan('free');
    expect(hard_cap).toBe(1000);
    await setUsage(t.gw.db, a.accountId, hard_cap!);
    await expectDenied(a, 'limit_reached');
    const usage = await t.api('GET', '/usage', { key: a.key });
    expect(usage.status).toBe(200);
    expect(usage.body.usage_status).toBe('at_hard_cap');
  });

  it('used past the hard cap (set by an operator) is refused too, and never lowered', async () => {
    const a = await newAccount(t.gw.db, { plan: 'free' });
    await setUsage(t.gw.db, a.accountId, 1500);
    await expectDenied(a, 'limit_reached');
    expect(await usedCredits(t.gw.db, a.accountId)).toBe(1500);
  });
});

describe('402 no_subscription', () => {
  it.each(['past_due', 'paused', 'canceled', 'unpaid'])('status %s is not served', async (status) => {
    const a = await newAccount(t.gw.db);
    await setSubscriptionStatus(t.gw.db, a.accountId, status);
    await expectDenied(a, 'no_subscription');
    const usage = await t.api('GET', '/usage', { key: a.key });
    expect(usage.body.status).toBe('none');
  });

  it.each(['trialing', 'active'])('status %s is served', async (status) => {
    const a = await newAccount(t.gw.db, { status });
    for (const [method, path] of PAID) expect((await t.api(method, path, { key: a.key })).status, path).toBe(200);
    expect(await usedCredits(t.gw.db, a.accountId)).toBe(1 + 5 + 1 + 2);
  });

  it('an account that comes back to active is served again at once', async () => {
    const a = await newAccount(t.gw.db);
    await setSubscriptionStatus(t.gw.db, a.accountId, 'unpaid');
    expect(gatewayCode(await t.api('GET', '/svc/data/ping', { key: a.key }))).toBe('no_subscription');
    await setSubscriptionStatus(t.gw.db, a.accountId, 'active');
    expect((await t.api('GET', '/svc/data/ping', { key: a.key })).status).toBe(200);
  });

  it('an account without any subscription row', async () => {
    const a = await newAccount(t.gw.db);
    await t.gw.db('subscriptions').where({ account_id: a.accountId }).delete();
    await expectDenied(a, 'no_subscription');
  });
});

describe('402 no_billing_account', () => {
  it('an account without a billing customer', async () => {
    const a = await newAccount(t.gw.db, { billing: false });
    await expectDenied(a, 'no_billing_account');
  });
});

describe('402 plan_unavailable', () => {
  it('a subscription on a plan with no price on file', async () => {
    const id = `broken_${randomUUID().slice(0, 8)}`;
    await t.gw.db('plans').insert({ id, name: 'Broken', included: 100, hard_cap: 100, price_id: null, product_id: 'prod_api' });
    const { account_id } = await createAccount(t.gw.db, { plan: id });
    const { key, key_id } = await createKey(t.gw.db, { accountId: account_id, rateLimitPerMinute: 10_000 });
    await expectDenied({ accountId: account_id, key, keyId: key_id }, 'plan_unavailable');
  });
});

describe('402 payment_required', () => {
  it.each(['starter', 'pro'])('plan %s without a payment method: served up to included, refused past it', async (planId) => {
    const a = await newAccount(t.gw.db, { plan: planId, paymentMethod: false });
    const { included, hard_cap } = await plan(planId);
    expect(hard_cap === null || hard_cap > included).toBe(true);
    await setUsage(t.gw.db, a.accountId, included - 3);
    // 5 credits would pass included: refused, while 1 credit still fits.
    const five = await t.api('GET', '/events/platforms', { key: a.key });
    expect(five.status).toBe(402);
    expect(gatewayCode(five)).toBe('payment_required');
    for (let i = 0; i < 3; i++) expect((await t.api('GET', '/svc/data/ping', { key: a.key })).status).toBe(200);
    expect(await usedCredits(t.gw.db, a.accountId)).toBe(included);
    const rows = await ledgerRows(t.gw.db, a.accountId);
    expect(rows).toHaveLength(3);
    // At included, every paid request is refused.
    for (const [method, path] of PAID) {
      const r = await t.api(method, path, { key: a.key });
      expect(r.status).toBe(402);
      expect(gatewayCode(r)).toBe('payment_required');
    }
    expect(await usedCredits(t.gw.db, a.accountId)).toBe(included);
    expect(await ledgerRows(t.gw.db, a.accountId)).toHaveLength(3);
  });

  it('the same account with a payment method is served past included', async () => {
    const a = await newAccount(t.gw.db, { plan: 'starter', paymentMethod: true });
    const { included } = await plan('starter');
    await setUsage(t.gw.db, a.accountId, included);
    expect((await t.api('GET', '/events/platforms', { key: a.key })).status).toBe(200);
  });

  it('at the hard cap without a payment method, limit_reached wins', async () => {
    const a = await newAccount(t.gw.db, { plan: 'starter', paymentMethod: false });
    const { hard_cap } = await plan('starter');
    await setUsage(t.gw.db, a.accountId, hard_cap!);
    await expectDenied(a, 'limit_reached');
  });

  it('concurrent requests without a payment method never pass included', async () => {
    const a = await newAccount(t.gw.db, { plan: 'starter', paymentMethod: false });
    const { included } = await plan('starter');
    await setUsage(t.gw.db, a.accountId, included - 4);
    const replies = await Promise.all(Array.from({ length: 15 }, () => t.api('GET', '/svc/data/ping', { key: a.key })));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(4);
    expect(replies.filter((r) => r.status === 402).map((r) => gatewayCode(r))).toEqual(Array(11).fill('payment_required'));
    expect(await usedCredits(t.gw.db, a.accountId)).toBe(included);
  });
});
