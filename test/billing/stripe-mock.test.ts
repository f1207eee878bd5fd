// The Stripe test setup itself: the official client, pointed at the recording proxy in front of
// the run's stripe-mock, gets Stripe's validation (a missing parameter is stripe-mock's 400) and
// the state and faults the proxy adds (meter dedupe, subscription overrides, the object store,
// 429, refusal).
import Stripe from 'stripe';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type StripeProxy, startStripeProxy } from '../support/stripe-mock.ts';

let proxy: StripeProxy;
let stripe: Stripe;

beforeAll(async () => {
  proxy = await startStripeProxy();
  // No retries: each call here is one request, so what the proxy recorded is what the call did.
  stripe = new Stripe('sk_test_123', { ...proxy.clientOptions, maxNetworkRetries: 0 });
});

afterAll(async () => {
  await proxy?.close();
});

beforeEach(() => {
  proxy.requests.length = 0;
});

describe('stripe-mock behind the recording proxy', () => {
  it('creates a customer through stripe-mock and records the request', async () => {
    const customer = await stripe.customers.create({ email: 'a@example.com', metadata: { account_id: '42' } });
    expect(customer.id).toMatch(/^cus_/);
    expect(proxy.requests).toEqual([
      {
        method: 'POST',
        path: '/v1/customers',
        form: { email: 'a@example.com', 'metadata[account_id]': '42' },
        idempotencyKey: expect.stringMatching(/.+/),
        status: 200,
        injected: false,
      },
    ]);
  });

  it("passes stripe-mock's 400 back unchanged for a request Stripe's API would refuse", async () => {
    const call = stripe.billing.meterEvents.create({ payload: { stripe_customer_id: 'cus_1', value: '1' } } as unknown as Stripe.Billing.MeterEventCreateParams);
    await expect(call).rejects.toMatchObject({
      type: 'StripeInvalidRequestError',
      statusCode: 400,
      raw: { type: 'invalid_request_error', message: expect.stringContaining("'event_name' is required") },
    });
    expect(proxy.requests.map((r) => r.status)).toEqual([400]);
    expect(proxy.meterEvents.filter((e) => e.customer === 'cus_1')).toEqual([]);
  });

  it('counts a meter event once per identifier, totalled per customer and event name', async () => {
    const timestamp = Math.floor(Date.now() / 1000);
    const send = (identifier: string, customer: string, value: number, event_name = 'api_requests') =>
      stripe.billing.meterEvents.create({ event_name, identifier, timestamp, payload: { stripe_customer_id: customer, value: String(value) } });
    await send('ev-1', 'cus_meter', 3);
    await send('ev-1', 'cus_meter', 3); // a retried report: Stripe ignores it
    await send('ev-2', 'cus_meter', 4);
    await send('ev-3', 'cus_other', 10);
    await send('ev-4', 'cus_meter', 100, 'other_meter');
    expect(proxy.requests.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(proxy.meterTotal('cus_meter', 'api_requests')).toBe(7);
    expect(proxy.meterTotal('cus_other', 'api_requests')).toBe(10);
    expect(proxy.meterTotal('cus_meter', 'other_meter')).toBe(100);
    expect(proxy.meterEvents.filter((e) => e.identifier === 'ev-1')).toEqual([
      { eventName: 'api_requests', customer: 'cus_meter', value: 3, identifier: 'ev-1', timestamp },
    ]);
  });

  it("merges a test's subscription override into stripe-mock's fixture", async () => {
    proxy.setSubscription('sub_pastdue', {
      status: 'past_due',
      customer: 'cus_sub',
      items: { data: [{ current_period_end: 1_900_000_000, price: { id: 'price_pro', metadata: { plan: 'pro' } } }] },
    });
    const sub = await stripe.subscriptions.retrieve('sub_pastdue');
    expect(sub).toMatchObject({ id: 'sub_pastdue', status: 'past_due', customer: 'cus_sub' });
    expect(sub.items.data).toHaveLength(1);
    // The fixture's other fields survive the merge.
    expect(sub.items.data[0]).toMatchObject({ object: 'subscription_item', current_period_end: 1_900_000_000, price: { id: 'price_pro', object: 'price', metadata: { plan: 'pro' } } });
    // Another id still gets the plain fixture.
    expect((await stripe.subscriptions.retrieve('sub_plain')).status).not.toBe('past_due');
  });

  it('keeps what is created: a lookup key is moved only with transfer_lookup_key; an Idempotency-Key replays its answer', async () => {
    const product = await stripe.products.create({ name: 'Store test' });
    const price = (lookup_key: string, transfer_lookup_key?: boolean) =>
      stripe.prices.create({ currency: 'usd', product: product.id, unit_amount: 100, lookup_key, ...(transfer_lookup_key ? { transfer_lookup_key } : {}) });
    const first = await price('store_key');
    await expect(price('store_key')).rejects.toMatchObject({ statusCode: 400, raw: { param: 'lookup_key' } });
    const second = await price('store_key', true);
    expect((await stripe.prices.list({ lookup_keys: ['store_key'] })).data.map((p) => p.id)).toEqual([second.id]);
    expect(proxy.store.prices.get(first.id)?.lookup_key).toBeNull();
    await expect(stripe.products.retrieve('prod_never_made')).rejects.toMatchObject({ statusCode: 404 });

    const again = { idempotencyKey: 'store-replay' };
    const customer = await stripe.customers.create({ name: 'once' }, again);
    expect((await stripe.customers.create({ name: 'once' }, again)).id).toBe(customer.id);
    await expect(stripe.customers.create({ name: 'other' }, again)).rejects.toMatchObject({ statusCode: 400 });
  });

  it('failNext answers with the status and Retry-After without forwarding, then forwards again', async () => {
    proxy.failNext(1, 429, { retryAfter: 2 });
    const limited = await stripe.customers.create({ email: 'b@example.com' }).catch((err: unknown) => err);
    expect(limited).toBeInstanceOf(Stripe.errors.StripeRateLimitError);
    expect(limited).toMatchObject({ statusCode: 429, headers: { 'retry-after': '2' } });
    await expect(stripe.customers.create({ email: 'b@example.com' })).resolves.toMatchObject({ object: 'customer' });
    expect(proxy.requests.map((r) => [r.status, r.injected])).toEqual([
      [429, true],
      [200, false],
    ]);
  });

  it('a 500 is retried by the client with the same Idempotency-Key', async () => {
    proxy.failNext(1, 500);
    const retrying = new Stripe('sk_test_123', { ...proxy.clientOptions, maxNetworkRetries: 1 });
    await expect(retrying.customers.create({ email: 'c@example.com' })).resolves.toMatchObject({ object: 'customer' });
    const [first, second] = proxy.requests;
    expect([first?.status, second?.status]).toEqual([500, 200]);
    expect(second?.idempotencyKey).toBe(first?.idempotencyKey);
  });

  it('down() refuses connections until up(), on the same port', async () => {
    await stripe.customers.create({ email: 'd@example.com' }); // leaves a pooled keep-alive socket
    await proxy.down();
    await expect(stripe.customers.create({ email: 'd@example.com' })).rejects.toBeInstanceOf(Stripe.errors.StripeConnectionError);
    await proxy.up();
    await expect(stripe.customers.create({ email: 'd@example.com' })).resolves.toMatchObject({ object: 'customer' });
    expect(proxy.url).toBe(`http://127.0.0.1:${proxy.port}`);
  });
});
