// The gateway with BILLING_PROVIDER=stripe, against stripe-mock behind the recording proxy
// (test/support/stripe-mock.ts; what only that stand-in checks is said there and in docs/testing.md):
//   - POST /billing/stripe/webhook: signed events (the `stripe` library's test header) mirror the
//     subscription as Stripe has it now; a tampered body, a stale timestamp, another secret or no
//     signature get 400 and change nothing; a duplicate event changes nothing; events out of
//     order end in Stripe's current state; Stripe unreachable while applying: 503, applied on
//     Stripe's redelivery; the customer's default payment method (read with the subscription,
//     and again on a customer event) decides whether overage is admitted;
//   - GET /usage reads Stripe live (terms and period from Stripe, used from our ledger), answers
//     502 bad_plan_pricing for a price without valid terms (paid requests 402 plan_unavailable)
//     and 502 billing_unavailable when Stripe cannot be read, while paid requests are still
//     served and billed from the mirror.
import { randomBytes, randomUUID } from 'node:crypto';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLAN_METADATA } from '../../../src/billing/stripe/plan-terms.ts';
import { STRIPE_WEBHOOK_PATH } from '../../../src/billing/stripe/webhook-endpoint.ts';
import { usedCredits } from '../../support/gateway-helpers.ts';
import { call, newAccount, startTestGateway, type TestAccount, type TestGateway } from '../../support/harness.ts';
import { startStripeProxy, type StripeProxy } from '../../support/stripe-mock.ts';

const SECRET = `whsec_${randomBytes(24).toString('base64')}`;
// The current period in whole seconds, as Stripe has it (an ended one would be rolled forward locally).
const PERIOD = (() => {
  const start = Math.floor(Date.now() / 1000) - 86_400;
  return { start, end: start + 30 * 86_400 };
})();
const signer = new Stripe('sk_test_signer');

let proxy: StripeProxy;
let gw: TestGateway;

beforeAll(async () => {
  proxy = await startStripeProxy();
  gw = await startTestGateway({
    env: { BILLING_PROVIDER: 'stripe', STRIPE_SECRET_KEY: 'sk_test_gateway', STRIPE_WEBHOOK_SECRET: SECRET, STRIPE_API_BASE: proxy.url },
  });
});

afterAll(async () => {
  await gw?.close();
  await proxy?.close();
});

const terms = (plan: string, included: number, hardCap: number | 'unlimited') => ({
  [PLAN_METADATA.plan]: plan,
  [PLAN_METADATA.included]: String(included),
  [PLAN_METADATA.hardCap]: String(hardCap),
});

interface Billed extends TestAccount {
  customerId: string;
  subscriptionId: string;
}

/** An account whose customer and subscription ids are the ones the proxy will answer for. */
async function account(): Promise<Billed> {
  const acct = await newAccount(gw.db, { plan: 'starter' });
  const row = await gw.db('accounts as a').join('subscriptions as s', 's.account_id', 'a.id').where('a.id', acct.accountId).first('a.customer_id', 's.id');
  return { ...acct, customerId: row.customer_id, subscriptionId: row.id };
}

/** What Stripe holds for the account's subscription from now on. */
function atStripe(a: Billed, status: string, metadata: Record<string, string> = terms('starter', 20_000, 25_000)): void {
  proxy.setSubscription(a.subscriptionId, {
    customer: a.customerId,
    status,
    cancel_at_period_end: false,
    canceled_at: status === 'canceled' ? PERIOD.start + 60 : null,
    trial_end: null,
    items: { data: [{ price: { metadata, recurring: { usage_type: 'licensed' } }, current_period_start: PERIOD.start, current_period_end: PERIOD.end }] },
  });
}

function event(subscriptionId: string, type = 'customer.subscription.updated', created = Math.floor(Date.now() / 1000)) {
  return {
    id: `evt_${randomUUID().replace(/-/g, '')}`,
    object: 'event',
    api_version: '2026-10-28.endive',
    created,
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
    // Only the id counts: the state is read again from Stripe.
    data: { object: { id: subscriptionId, object: 'subscription', status: 'active' } },
  };
}

async function deliver(evt: object, opts: { secret?: string; timestamp?: number; tamper?: boolean; signature?: string | null } = {}) {
  const payload = JSON.stringify(evt);
  const header = signer.webhooks.generateTestHeaderString({ payload, secret: opts.secret ?? SECRET, timestamp: opts.timestamp });
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.signature !== null) headers['stripe-signature'] = opts.signature ?? header;
  const body = opts.tamper ? payload.replace('"livemode":false', '"livemode":true') : payload;
  const res = await fetch(`${gw.url}${STRIPE_WEBHOOK_PATH}`, { method: 'POST', headers, body });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const mirrored = (a: Billed) => gw.db('subscriptions').where({ account_id: a.accountId }).first();
const ping = (a: Billed) => call(gw.url, 'GET', '/svc/data/ping', { key: a.key });

describe('POST /billing/stripe/webhook', () => {
  it('a signed event mirrors the subscription as Stripe has it now, and paid requests follow', async () => {
    const a = await account();
    atStripe(a, 'past_due');
    const r = await deliver(event(a.subscriptionId));
    expect(r).toEqual({ status: 200, body: { received: true, outcome: 'mirrored' } });
    expect(await mirrored(a)).toMatchObject({
      id: a.subscriptionId,
      status: 'past_due',
      plan_id: 'starter',
      current_period_start: new Date(PERIOD.start * 1000),
      current_period_end: new Date(PERIOD.end * 1000),
    });
    const refused = await ping(a);
    expect(refused.status).toBe(402);
    expect(refused.body.error.code).toBe('no_subscription');

    atStripe(a, 'active');
    expect((await deliver(event(a.subscriptionId))).body.outcome).toBe('mirrored');
    expect((await ping(a)).status).toBe(200);
  });

  it('mirrors every Stripe status, incomplete ones included (not served)', async () => {
    const a = await account();
    for (const status of ['incomplete', 'incomplete_expired', 'paused', 'unpaid', 'trialing']) {
      atStripe(a, status);
      expect((await deliver(event(a.subscriptionId))).body.outcome, status).toBe('mirrored');
      expect((await mirrored(a)).status).toBe(status);
      expect((await ping(a)).status, status).toBe(status === 'trialing' ? 200 : 402);
    }
  });

  it('refuses a tampered body, a stale timestamp, another secret and a missing signature: 400, nothing applied', async () => {
    const a = await account();
    atStripe(a, 'canceled');
    const before = await mirrored(a);
    const events = Number((await gw.db('stripe_events').count({ n: '*' }).first())!.n);
    const stale = Math.floor(Date.now() / 1000) - 600;
    const other = `whsec_${randomBytes(24).toString('base64')}`;
    for (const opts of [{ tamper: true }, { timestamp: stale }, { secret: other }, { signature: null }, { signature: 't=1,v1=00' }]) {
      const r = await deliver(event(a.subscriptionId), opts);
      expect(r.status, JSON.stringify(opts)).toBe(400);
      expect(typeof r.body.error).toBe('string');
    }
    expect(await mirrored(a)).toEqual(before);
    expect(Number((await gw.db('stripe_events').count({ n: '*' }).first())!.n)).toBe(events);
  });

  it('applies an event once: delivered again, it changes nothing', async () => {
    const a = await account();
    atStripe(a, 'active');
    const evt = event(a.subscriptionId);
    expect((await deliver(evt)).body.outcome).toBe('mirrored');
    atStripe(a, 'unpaid');
    expect(await deliver(evt)).toEqual({ status: 200, body: { received: true, outcome: 'duplicate' } });
    expect((await mirrored(a)).status).toBe('active');
  });

  it('events out of order end in the state Stripe has now', async () => {
    const a = await account();
    const now = Math.floor(Date.now() / 1000);
    const older = event(a.subscriptionId, 'customer.subscription.updated', now - 30);
    const newer = event(a.subscriptionId, 'customer.subscription.deleted', now);
    atStripe(a, 'canceled');
    // The newer arrives first, the older after it: the older must not bring `active` back.
    expect((await deliver(newer)).body.outcome).toBe('mirrored');
    expect((await deliver(older)).body.outcome).toBe('mirrored');
    expect(await mirrored(a)).toMatchObject({ status: 'canceled', canceled_at: new Date((PERIOD.start + 60) * 1000) });
    expect((await ping(a)).status).toBe(402);
  });

  it('Stripe unreachable while applying: 503 and nothing recorded, so its redelivery applies the event', async () => {
    const a = await account();
    atStripe(a, 'past_due');
    const evt = event(a.subscriptionId);
    await proxy.down();
    try {
      expect((await deliver(evt)).status).toBe(503);
    } finally {
      await proxy.up();
    }
    expect(await gw.db('stripe_events').where({ id: evt.id })).toEqual([]);
    expect((await mirrored(a)).status).toBe('active');
    expect((await deliver(evt)).body.outcome).toBe('mirrored');
    expect((await mirrored(a)).status).toBe('past_due');
  });

  it('is not an API route: other methods are 404, and no API key is needed or counted', async () => {
    const r = await call(gw.url, 'GET', STRIPE_WEBHOOK_PATH);
    expect(r.status).toBe(404);
  });
});

describe('the payment method, from Stripe', () => {
  /** Stripe's subscription with its customer expanded as the mirror reads it, and that customer's invoice default. */
  function withCustomer(a: Billed, defaultPaymentMethod: string | null): void {
    proxy.setSubscription(a.subscriptionId, {
      customer: { id: a.customerId, object: 'customer', default_source: null, invoice_settings: { default_payment_method: defaultPaymentMethod } },
      status: 'active',
      default_payment_method: null,
      default_source: null,
      // No credits included: every paid credit is overage, which needs a payment method.
      items: { data: [{ price: { metadata: terms('overage-only', 0, 1_000), recurring: { usage_type: 'licensed' } }, current_period_start: PERIOD.start, current_period_end: PERIOD.end }] },
    });
  }
  const customerEvent = (customerId: string, type = 'customer.updated') => ({
    ...event(customerId, type),
    data: { object: { id: customerId, object: 'customer' } },
  });
  const hasPaymentMethod = async (a: Billed) => (await gw.db('accounts').where({ id: a.accountId }).first('has_payment_method')).has_payment_method;

  it("follows the customer's invoice default: without one, overage is refused 402 payment_required; a customer.updated event restores it", async () => {
    const a = await account();
    withCustomer(a, null);
    expect((await deliver(event(a.subscriptionId))).body.outcome).toBe('mirrored');
    expect(await hasPaymentMethod(a)).toBe(false);
    const refused = await ping(a);
    expect(refused.status).toBe(402);
    expect(refused.body.error.code).toBe('payment_required');

    withCustomer(a, 'pm_card_visa');
    // The customer's event names no subscription: the account's one is read again.
    expect((await deliver(customerEvent(a.customerId))).body.outcome).toBe('mirrored');
    expect(await hasPaymentMethod(a)).toBe(true);
    expect((await ping(a)).status).toBe(200);

    withCustomer(a, null);
    expect((await deliver(customerEvent(a.customerId))).body.outcome).toBe('mirrored');
    expect(await hasPaymentMethod(a)).toBe(false);
  });

  it("a customer event for a customer with no account here is recorded and changes nothing", async () => {
    const r = await deliver(customerEvent('cus_nobody_here'));
    expect(r).toEqual({ status: 200, body: { received: true, outcome: 'ignored' } });
  });
});

describe('GET /usage under Stripe', () => {
  it('reads Stripe live: terms and period from Stripe, credits used from our ledger', async () => {
    const a = await account();
    atStripe(a, 'active');
    await deliver(event(a.subscriptionId));
    expect((await ping(a)).status).toBe(200);
    expect((await ping(a)).status).toBe(200);
    const used = await usedCredits(gw.db, a.accountId);
    expect(used).toBeGreaterThan(0);
    const r = await call(gw.url, 'GET', '/usage', { key: a.key });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({
      customer_id: a.customerId,
      plan: 'starter',
      status: 'active',
      plan_ids: { subscription_id: a.subscriptionId },
      period: { start: new Date(PERIOD.start * 1000).toISOString(), end: new Date(PERIOD.end * 1000).toISOString() },
      credits: { included: 20_000, used, hard_cap: 25_000 },
    });
    expect(r.body.plan_ids.price_id).toMatch(/^price_/);
    // Changed at Stripe with no webhook yet: /usage already shows it (read live on every call).
    atStripe(a, 'active', terms('starter', 30_000, 'unlimited'));
    expect((await call(gw.url, 'GET', '/usage', { key: a.key })).body.credits).toMatchObject({ included: 30_000, hard_cap: 'unlimited' });
  });

  it('a price without valid terms: /usage 502 bad_plan_pricing, paid requests 402 plan_unavailable once mirrored', async () => {
    const a = await account();
    atStripe(a, 'active', {});
    const r = await call(gw.url, 'GET', '/usage', { key: a.key });
    expect(r.status).toBe(502);
    expect(r.body).toEqual({ detail: 'bad_plan_pricing' });
    await deliver(event(a.subscriptionId));
    const paid = await ping(a);
    expect(paid.status).toBe(402);
    expect(paid.body.error.code).toBe('plan_unavailable');
  });

  it('Stripe down or failing: /usage 502 billing_unavailable; paid requests are still served and billed', async () => {
    const a = await account();
    atStripe(a, 'active');
    await deliver(event(a.subscriptionId));
    const before = await usedCredits(gw.db, a.accountId);
    proxy.failNext(1, 500);
    expect(await call(gw.url, 'GET', '/usage', { key: a.key })).toMatchObject({ status: 502, body: { detail: 'billing_unavailable' } });
    await proxy.down();
    try {
      expect(await call(gw.url, 'GET', '/usage', { key: a.key })).toMatchObject({ status: 502, body: { detail: 'billing_unavailable' } });
      expect((await ping(a)).status).toBe(200);
      expect(await usedCredits(gw.db, a.accountId)).toBeGreaterThan(before);
    } finally {
      await proxy.up();
    }
    expect((await call(gw.url, 'GET', '/usage', { key: a.key })).status).toBe(200);
  });
});
