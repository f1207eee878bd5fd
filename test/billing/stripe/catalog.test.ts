// The admin CLI under BILLING_PROVIDER=stripe, run as a real subprocess against the run's database
// and stripe-mock behind the recording proxy (its object store lets a second run find what the
// first made; test/support/stripe-mock.ts says what only it checks):
//   - billing:sync creates the meter, the product and per plan a base and a graduated metered
//     overage price carrying the plan terms, finds them again (a second run sends no create or
//     update), replaces a price whose amount changed (transfer_lookup_key, old one deactivated)
//     and only updates the metadata when only the terms changed;
//   - accounts:create makes the customer and the subscription (Idempotency-Keys: a retried command
//     gets the same ones back) and mirrors it; --customer/--subscription attaches existing ones;
//   - the refusals: billing:sync under local, --status, --no-billing and --no-payment-method under Stripe, a plan whose
//     prices were never synced, a subscription of another customer.
import { randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../../db/connection.ts';
import { canonicalDecimal, usdToCents } from '../../../src/billing/stripe/catalog.ts';
import { PLAN_METADATA, planTerms } from '../../../src/billing/stripe/plan-terms.ts';
import { databaseUrl, runTs, type ProcessResult } from '../../support/harness.ts';
import { startStripeProxy, type RecordedStripeRequest, type StripeProxy } from '../../support/stripe-mock.ts';

let proxy: StripeProxy;
let db: Db;
let stripe: Stripe;
// This file's own plans: other files share the database (and may add plans billing:sync skips).
const suffix = randomBytes(4).toString('hex');
const METERED = `cat_${suffix}`;
const CAPPED = `catfree_${suffix}`;

beforeAll(async () => {
  proxy = await startStripeProxy();
  db = createDb({ connectionString: databaseUrl(), poolMax: 2 });
  stripe = new Stripe('sk_test_catalog', { ...proxy.clientOptions, maxNetworkRetries: 0 });
  await db('plans').insert([
    { id: METERED, name: 'Catalog Metered', included: 5_000, hard_cap: null, overage_unit_price: '0.002', monthly_price: '19.50' },
    { id: CAPPED, name: 'Catalog Capped', included: 100, hard_cap: 100, overage_unit_price: null, monthly_price: '0' },
  ]);
});

afterAll(async () => {
  await proxy?.close();
  await db?.destroy();
});

function admin(args: string[], env: Record<string, string> = {}, base = proxy): Promise<ProcessResult> {
  return runTs('src/admin/cli.ts', args, {
    ...process.env,
    DATABASE_URL: databaseUrl(),
    BILLING_PROVIDER: 'stripe',
    STRIPE_API_BASE: base.url,
    STRIPE_SECRET_KEY: 'sk_test_catalog',
    STRIPE_WEBHOOK_SECRET: 'whsec_catalog',
    ...env,
  });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function adminOk(args: string[], env: Record<string, string> = {}, base = proxy): Promise<any> {
  const r = await admin(args, env, base);
  expect(r.code, `admin ${args.join(' ')}\n${r.stderr}`).toBe(0);
  return JSON.parse(r.stdout);
}

async function adminFails(args: string[], env: Record<string, string> = {}, base = proxy): Promise<string> {
  const r = await admin(args, env, base);
  expect(r.code, `admin ${args.join(' ')} should fail\n${r.stdout}`).toBe(1);
  expect(r.stdout).toBe('');
  expect(r.stderr).not.toMatch(/^\s+at /m);
  return r.stderr;
}

/** The requests made while `run` ran. */
async function during<T>(run: () => Promise<T>): Promise<{ result: T; requests: RecordedStripeRequest[] }> {
  const from = proxy.requests.length;
  const result = await run();
  return { result, requests: proxy.requests.slice(from) };
}

const writes = (requests: RecordedStripeRequest[]) => requests.filter((r) => r.method !== 'GET');
const priceCreate = (requests: RecordedStripeRequest[], lookupKey: string) =>
  requests.filter((r) => r.method === 'POST' && r.path === '/v1/prices' && r.form.lookup_key === lookupKey);
const metadataOf = (form: Record<string, string>) =>
  Object.fromEntries(Object.entries(form).flatMap(([k, v]) => (k.startsWith('metadata[') ? [[k.slice(9, -1), v]] : [])));

describe('amounts', () => {
  it('USD from PostgreSQL in cents, exactly (no binary floating point)', () => {
    expect(['0.002000', '0.0015', '49.00', '1999', '0.1', '0.000001', '19.50'].map(usdToCents)).toEqual(['0.2', '0.15', '4900', '199900', '10', '0.0001', '1950']);
    expect(['0.200', '007', '0', '10.0'].map(canonicalDecimal)).toEqual(['0.2', '7', '0', '10']);
    expect(() => usdToCents('-1')).toThrow();
  });
});

describe.sequential('billing:sync', () => {
  let meterId: string;

  it('creates the meter, the product and per plan a base price and a graduated metered overage price', async () => {
    const { result: report, requests } = await during(() => adminOk(['billing:sync']));
    // Every request valid for Stripe's API; the one 404 is the product looked up before it exists.
    expect(requests.filter((r) => r.status !== 200).map((r) => [r.method, r.path, r.status])).toEqual([['GET', '/v1/products/ticket_market_api', 404]]);

    const meter = requests.find((r) => r.method === 'POST' && r.path === '/v1/billing/meters');
    expect(meter?.form).toMatchObject({
      event_name: 'api_credits',
      'default_aggregation[formula]': 'sum',
      'customer_mapping[type]': 'by_id',
      'customer_mapping[event_payload_key]': 'stripe_customer_id',
      'value_settings[event_payload_key]': 'value',
    });
    meterId = report.meter.id;
    expect(report.meter).toEqual({ id: expect.stringMatching(/^mtr_/), event_name: 'api_credits', action: 'created' });
    expect(requests.find((r) => r.method === 'POST' && r.path === '/v1/products')?.form).toMatchObject({ id: 'ticket_market_api' });
    expect(report.product).toEqual({ id: 'ticket_market_api', action: 'created' });

    const [base] = priceCreate(requests, `tm_${METERED}_base`);
    expect(base?.form).toMatchObject({
      currency: 'usd',
      product: 'ticket_market_api',
      unit_amount: '1950',
      'recurring[interval]': 'month',
      'recurring[usage_type]': 'licensed',
      nickname: 'Catalog Metered',
    });
    const [overage] = priceCreate(requests, `tm_${METERED}_overage`);
    expect(overage?.form).toMatchObject({
      currency: 'usd',
      product: 'ticket_market_api',
      'recurring[interval]': 'month',
      'recurring[usage_type]': 'metered',
      'recurring[meter]': meterId,
      billing_scheme: 'tiered',
      tiers_mode: 'graduated',
      'tiers[0][up_to]': '5000',
      'tiers[0][unit_amount_decimal]': '0',
      'tiers[1][up_to]': 'inf',
      'tiers[1][unit_amount_decimal]': '0.2', // $0.002 a credit, in cents
    });
    for (const r of [base!, overage!]) expect(planTerms(metadataOf(r.form))).toEqual({ planId: METERED, included: 5_000, hardCap: null });

    // A plan whose hard cap is its included credits bills no overage: a base price only.
    const [capped] = priceCreate(requests, `tm_${CAPPED}_base`);
    expect(capped?.form.unit_amount).toBe('0');
    expect(planTerms(metadataOf(capped!.form))).toEqual({ planId: CAPPED, included: 100, hardCap: 100 });
    expect(priceCreate(requests, `tm_${CAPPED}_overage`)).toEqual([]);
    // The default plans too, with the monthly prices of migration 014.
    expect(priceCreate(requests, 'tm_pro_base')[0]?.form.unit_amount).toBe('29900');
    expect(priceCreate(requests, 'tm_free_overage')).toEqual([]);

    const mine = report.prices.filter((p: { plan: string }) => p.plan === METERED);
    expect(mine).toEqual([
      { plan: METERED, role: 'base', lookup_key: `tm_${METERED}_base`, id: expect.stringMatching(/^price_/), action: 'created' },
      { plan: METERED, role: 'overage', lookup_key: `tm_${METERED}_overage`, id: expect.stringMatching(/^price_/), action: 'created' },
    ]);
  });

  it('run again, it finds everything by lookup key, product id and event name and changes nothing', async () => {
    const { result: report, requests } = await during(() => adminOk(['billing:sync']));
    expect(writes(requests)).toEqual([]);
    expect(report.meter).toMatchObject({ id: meterId, action: 'unchanged' });
    expect(report.product.action).toBe('unchanged');
    expect(report.prices.length).toBeGreaterThan(0);
    expect(report.prices.every((p: { action: string }) => p.action === 'unchanged')).toBe(true);
    // Tiers are only in a list answer when expanded: compared, they must have been asked for.
    expect(requests.some((r) => r.path === '/v1/prices' && Object.values(r.form).includes('data.tiers'))).toBe(true);
  });

  it('a changed overage price is a new price taking the lookup key over; the old one is deactivated', async () => {
    const before = [...proxy.store.prices.values()].find((p) => p.lookup_key === `tm_${METERED}_overage`)!;
    await db('plans').where({ id: METERED }).update({ overage_unit_price: '0.0025' });
    const { result: report, requests } = await during(() => adminOk(['billing:sync']));
    const [created] = priceCreate(requests, `tm_${METERED}_overage`);
    expect(created?.form).toMatchObject({ transfer_lookup_key: 'true', 'tiers[1][unit_amount_decimal]': '0.25', 'recurring[meter]': meterId });
    expect(writes(requests).filter((r) => r.path === `/v1/prices/${before.id}`).map((r) => r.form)).toEqual([{ active: 'false' }]);
    expect(report.prices.find((p: { lookup_key: string }) => p.lookup_key === `tm_${METERED}_overage`)).toMatchObject({ action: 'replaced', replaced: before.id });
    expect(proxy.store.prices.get(before.id)).toMatchObject({ active: false, lookup_key: null });
    // Only that price changed.
    expect(writes(requests)).toHaveLength(2);
    expect(writes((await during(() => adminOk(['billing:sync']))).requests)).toEqual([]);
  });

  it('changed terms alone (the hard cap) update both prices’ metadata in place', async () => {
    await db('plans').where({ id: METERED }).update({ hard_cap: 50_000 });
    const { result: report, requests } = await during(() => adminOk(['billing:sync']));
    expect(writes(requests).map((r) => [r.path.split('/')[2], metadataOf(r.form).hard_cap])).toEqual([
      ['prices', '50000'],
      ['prices', '50000'],
    ]);
    expect(report.prices.filter((p: { plan: string }) => p.plan === METERED).map((p: { action: string }) => p.action)).toEqual(['updated', 'updated']);
    await db('plans').where({ id: METERED }).update({ hard_cap: null });
    await adminOk(['billing:sync']);
  });

  it('a plan’s scrape limit (issue 36) is written as its optional metadata key, and cleared when the plan drops it', async () => {
    const key = PLAN_METADATA.scrapeRequestsPerPlatformPerMinute;
    const stored = () => [...proxy.store.prices.values()].filter((p) => p.lookup_key?.startsWith(`tm_${METERED}_`)).map((p) => p.metadata?.[key]);
    await db('plans').where({ id: METERED }).update({ scrape_requests_per_platform_per_minute: 25 });
    const set = await during(() => adminOk(['billing:sync']));
    expect(writes(set.requests).map((r) => metadataOf(r.form)[key])).toEqual(['25', '25']);
    expect(stored()).toEqual(['25', '25']);
    for (const r of writes(set.requests)) expect(planTerms(metadataOf(r.form))).toMatchObject({ planId: METERED, scrapeRequestsPerPlatformPerMinute: 25 });
    expect(writes((await during(() => adminOk(['billing:sync']))).requests)).toEqual([]);

    await db('plans').where({ id: METERED }).update({ scrape_requests_per_platform_per_minute: null });
    const cleared = await during(() => adminOk(['billing:sync']));
    // Stripe deletes a metadata key sent empty: the prices go back to the service default.
    expect(writes(cleared.requests).map((r) => metadataOf(r.form)[key])).toEqual(['', '']);
    expect(stored()).toEqual([undefined, undefined]);
    expect(writes((await during(() => adminOk(['billing:sync']))).requests)).toEqual([]);
  });
});

describe.sequential('accounts:create under Stripe', () => {
  it('creates the customer and a subscription to the plan’s base and overage prices, and mirrors it', async () => {
    const base = [...proxy.store.prices.values()].find((p) => p.lookup_key === `tm_${METERED}_base`)!;
    const overage = [...proxy.store.prices.values()].find((p) => p.lookup_key === `tm_${METERED}_overage`)!;
    const { result: out, requests } = await during(() => adminOk(['accounts:create', '--plan', METERED, '--name', 'acme']));
    expect(out).toEqual({ account_id: expect.any(Number), customer_id: expect.stringMatching(/^cus_/), subscription_id: expect.stringMatching(/^sub_/), plan: METERED, status: 'active' });

    const [customer, subscription] = writes(requests);
    expect(customer).toMatchObject({ path: '/v1/customers', form: { name: 'acme' }, idempotencyKey: expect.stringMatching(/:customer$/) });
    expect(subscription).toMatchObject({
      path: '/v1/subscriptions',
      form: { customer: out.customer_id, 'items[0][price]': base.id, 'items[1][price]': overage.id },
      idempotencyKey: expect.stringMatching(/:subscription$/),
    });
    expect(subscription!.form['items[1][quantity]']).toBeUndefined(); // a metered item has none
    expect(requests.some((r) => r.method === 'GET' && r.path === `/v1/subscriptions/${out.subscription_id}` && Object.values(r.form).includes('items.data.price.product'))).toBe(true);

    expect(await db('accounts').where({ id: out.account_id }).first()).toMatchObject({ name: 'acme', customer_id: out.customer_id });
    expect(await db('subscriptions').where({ account_id: out.account_id }).first()).toMatchObject({ id: out.subscription_id, plan_id: METERED, status: 'active' });
    expect(await db('plans').where({ id: METERED }).first()).toMatchObject({ name: 'Catalog Metered', included: 5_000, hard_cap: null, price_id: base.id, product_id: 'ticket_market_api' });
  });

  it('a plan without overage gets the base price only', async () => {
    const out = await adminOk(['accounts:create', '--plan', CAPPED]);
    const sub = proxy.store.subscriptions.get(out.subscription_id)!;
    expect(sub.items.data.map((i: { price: { lookup_key: string } }) => i.price.lookup_key)).toEqual([`tm_${CAPPED}_base`]);
    expect(await db('subscriptions').where({ account_id: out.account_id }).first()).toMatchObject({ plan_id: CAPPED, status: 'active' });
  });

  it('retried with the same --idempotency-key, it gets the same customer and account back', async () => {
    const key = `retry-${suffix}`;
    const customers = proxy.store.customers.size;
    const first = await adminOk(['accounts:create', '--plan', METERED, '--idempotency-key', key]);
    const again = await adminOk(['accounts:create', '--plan', METERED, '--idempotency-key', key]);
    expect(again).toEqual(first);
    expect(proxy.store.customers.size).toBe(customers + 1);
    expect(await db('accounts').where({ customer_id: first.customer_id })).toHaveLength(1);
  });

  it('--customer/--subscription attaches existing ones; a subscription of another customer is refused', async () => {
    const [base] = (await stripe.prices.list({ lookup_keys: [`tm_${METERED}_base`] })).data;
    const customer = await stripe.customers.create({ name: 'made in the dashboard' });
    const sub = await stripe.subscriptions.create({ customer: customer.id, items: [{ price: base!.id }] });
    const other = await stripe.customers.create({ name: 'someone else' });

    expect(await adminFails(['accounts:create', '--customer', other.id, '--subscription', sub.id])).toMatch(new RegExp(`belongs to customer ${customer.id}`));
    expect(await db('accounts').where({ customer_id: other.id })).toEqual([]);
    expect(await adminFails(['accounts:create', '--customer', customer.id, '--subscription', sub.id, '--plan', CAPPED])).toMatch(/is on plan/);

    const { result: out, requests } = await during(() => adminOk(['accounts:create', '--customer', customer.id, '--subscription', sub.id]));
    expect(writes(requests)).toEqual([]); // nothing made in Stripe to attach them
    expect(out).toMatchObject({ customer_id: customer.id, subscription_id: sub.id, plan: METERED, status: 'active' });
    expect(await db('subscriptions').where({ account_id: out.account_id }).first()).toMatchObject({ id: sub.id, plan_id: METERED });
    // Three runs of the admin CLI, each a process loading the project (4-8 s each beside a full
    // suite on two cores: one full run took it past 30 s), as the refusals below get 90 s.
  }, 90_000);
});

describe.concurrent('refusals', { timeout: 90_000 }, () => {
  it('billing:sync under BILLING_PROVIDER=local', async () => {
    expect(await adminFails(['billing:sync'], { BILLING_PROVIDER: 'local' })).toMatch(/^error: billing:sync .*BILLING_PROVIDER=stripe/);
  });

  it('--status, --no-billing and --no-payment-method under Stripe, before anything is created', async () => {
    const from = proxy.requests.length;
    expect(await adminFails(['accounts:create', '--plan', METERED, '--status', 'trialing'])).toMatch(/--status/);
    expect(await adminFails(['accounts:create', '--plan', METERED, '--no-billing'])).toMatch(/--no-billing/);
    expect(await adminFails(['accounts:create', '--plan', METERED, '--no-payment-method'])).toMatch(/--no-payment-method.*read from Stripe/);
    expect(proxy.requests.slice(from).filter((r) => r.path === '/v1/customers')).toEqual([]);
  });

  it('a plan whose prices were never synced: run billing:sync first; no customer is created', async () => {
    const empty = await startStripeProxy();
    try {
      expect(await adminFails(['accounts:create', '--plan', 'pro'], {}, empty)).toMatch(/tm_pro_base.*billing:sync/);
      expect(writes(empty.requests)).toEqual([]);
    } finally {
      await empty.close();
    }
  });

  it('--customer without --subscription', async () => {
    const r = await admin(['accounts:create', '--customer', 'cus_x']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--customer and --subscription/);
  });
});
