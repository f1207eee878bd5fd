// POST /webhooks/{id}/test is free, so it is bounded (issue 38), all real (gateway, dispatcher,
// retry workflow, a loopback receiver): a webhook has at most TEST_DELIVERIES_PENDING_MAX pings
// pending; past that a test, and a retry of a ping, is 400 in the Watchlist envelope and stores
// nothing, and once a pending ping is delivered a test goes again. An account that is not served
// is refused a test at once (nothing would be sent); a ping that an attempt parks anyway (the
// account lapsed between the check and the attempt) answers at once, not after 12 s.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepServiceState } from '../../../src/accounts/service-state.ts';
import { TEST_DELIVERIES_PENDING_MAX } from '../../../src/apis/webhooks/deliveries.ts';
import { deliveryServiceHooks } from '../../../src/webhooks/parking.ts';
import { call, eventually, newAccount, type TestAccount } from '../../support/harness.ts';
import { startReceiver, type Receiver } from '../../support/webhook-receiver.ts';
import { useWebhookStack } from '../../support/webhook-stack.ts';
import { createWebhook, expectError } from './helpers.ts';

// One retry, 5 s (±20%) after the first attempt: a ping answered 503 stays pending that long.
const stack = useWebhookStack({ scheduleMs: [5_000], timeoutMs: 5_000, roundMaxMs: 200 });
const hooks = [deliveryServiceHooks({ expireAfterMs: 60_000 })];
/** The documented bound (docs/webhooks.md), written out so that a change of it is a change of this test too. */
const BOUND = 3;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(() => receiver?.close());

const test = (acct: TestAccount, webhookId: unknown) => call(stack.gateway.url, 'POST', `/webhooks/${webhookId}/test`, { key: acct.key });
/** Requests the shared receiver got for this webhook (a ping's data names it): other tests' late retries are not this one's. */
const sentTo = (webhookId: unknown) =>
  receiver.received.filter((r) => {
    try {
      return (JSON.parse(r.body) as { data?: { webhook_id?: unknown } }).data?.webhook_id === Number(webhookId);
    } catch {
      return false;
    }
  }).length;

const pings = (webhookId: unknown) => stack.db('webhook_deliveries').where({ webhook_id: webhookId, type: 'ping' }).orderBy('id').select('id', 'state', 'parked_at');

describe('POST /webhooks/{id}/test is bounded per webhook', { timeout: 60_000 }, () => {
  it('the bound is the documented one', () => {
    expect(TEST_DELIVERIES_PENDING_MAX).toBe(BOUND);
  });

  it(`holds at most ${BOUND} pings pending; past that a test or a ping's retry is 400 and stores nothing`, async () => {
    const acct = await newAccount(stack.db);
    const hook = await createWebhook(stack.gateway.url, acct.key, { url: receiver.url });
    const other = await createWebhook(stack.gateway.url, acct.key, { url: receiver.url });
    receiver.secrets = [hook.secret as string, other.secret as string];
    // A ping failed for good (400), then three the endpoint refuses for now (503): pending, retried in 5 s.
    receiver.script = [{ status: 400 }];
    receiver.fallback = { status: 503 };
    const failed = await test(acct, hook.id);
    expect(failed.status, failed.text).toBe(201);
    expect(failed.body).toMatchObject({ state: 'failed' });
    const pending: number[] = [];
    for (let i = 0; i < BOUND; i++) {
      const r = await test(acct, hook.id);
      expect(r.status, r.text).toBe(201);
      expect(r.body).toMatchObject({ type: 'ping', state: 'pending', attempts: [{ status_code: 503 }] });
      pending.push(r.body.id);
    }

    const refused = await test(acct, hook.id);
    expect(expectError(refused, 400)).toBe(
      `the webhook has 3 test deliveries pending already (${pending.join(', ')}), each retried on its schedule; test again once one is delivered or failed`,
    );
    const retried = await call(stack.gateway.url, 'POST', `/webhooks/${hook.id}/deliveries/${failed.body.id}/retry`, { key: acct.key });
    expect(expectError(retried, 400)).toMatch(/^the webhook has 3 test deliveries pending already/);
    expect((await pings(hook.id)).map((d) => d.state)).toEqual(['failed', 'pending', 'pending', 'pending']);
    // The bound is the webhook's, not the account's.
    expect((await test(acct, other.id)).status).toBe(201);

    // The endpoint recovers: the pending pings are delivered at their retry, and tests go again.
    receiver.fallback = { status: 204 };
    await eventually(async () => ((await pings(hook.id)).every((d) => d.state !== 'pending') ? true : undefined), 30_000);
    const again = await call(stack.gateway.url, 'POST', `/webhooks/${hook.id}/deliveries/${failed.body.id}/retry`, { key: acct.key });
    expect(again.status, again.text).toBe(202);
    const next = await test(acct, hook.id);
    expect(next.status, next.text).toBe(201);
    expect(next.body).toMatchObject({ state: 'delivered' });
  });

  it('many tests at once never leave more than the bound pending', async () => {
    const acct = await newAccount(stack.db);
    const hook = await createWebhook(stack.gateway.url, acct.key, { url: receiver.url });
    receiver.script = [];
    receiver.fallback = { status: 503 };
    const replies = await Promise.all(Array.from({ length: 10 }, () => test(acct, hook.id)));
    expect(replies.filter((r) => r.status === 201)).toHaveLength(BOUND);
    for (const r of replies.filter((x) => x.status !== 201)) expect(expectError(r, 400)).toMatch(/^the webhook has 3 test deliveries pending already/);
    expect(await pings(hook.id)).toHaveLength(BOUND);
    receiver.fallback = { status: 204 };
  });
});

describe('POST /webhooks/{id}/test of an account that is not served', { timeout: 60_000 }, () => {
  it('is refused at once and stores nothing', async () => {
    const acct = await newAccount(stack.db);
    const hook = await createWebhook(stack.gateway.url, acct.key, { url: receiver.url });
    await stack.db('subscriptions').where({ account_id: acct.accountId }).update({ status: 'past_due' });
    expect((await sweepServiceState(stack.db, hooks)).suspended).toContain(acct.accountId);
    const started = Date.now();
    const r = await test(acct, hook.id);
    expect(expectError(r, 400)).toBe('the account is not served (no active or trialing subscription): nothing is sent to its webhooks, so a test cannot be sent');
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await pings(hook.id)).toEqual([]);
    expect(sentTo(hook.id)).toBe(0);

    // Served again: a test goes.
    await stack.db('subscriptions').where({ account_id: acct.accountId }).update({ status: 'active' });
    expect((await sweepServiceState(stack.db, hooks)).resumed).toContain(acct.accountId);
    receiver.fallback = { status: 204 };
    const ok = await test(acct, hook.id);
    expect(ok.status, ok.text).toBe(201);
    expect(ok.body).toMatchObject({ state: 'delivered' });
    // What sentTo counts is there to count: the delivered ping reached the receiver, once.
    expect(sentTo(hook.id)).toBe(1);
  });

  it('a ping parked by its attempt (the account lapsed just after the check) is answered at once, pending, not after 12 s', async () => {
    const acct = await newAccount(stack.db);
    const hook = await createWebhook(stack.gateway.url, acct.key, { url: receiver.url });
    expect((await sweepServiceState(stack.db, hooks)).suspended).not.toContain(acct.accountId);
    // The lapse lands between the test's check and the dispatcher's attempt: recorded by a trigger
    // in the very transaction that enqueues this webhook's ping, after the check has read the state.
    const fn = `lapse_on_ping_${hook.id}`;
    await stack.db.raw(`CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN UPDATE account_service SET served = false WHERE account_id = NEW.account_id; RETURN NEW; END $$`);
    await stack.db.raw(`CREATE TRIGGER ${fn} AFTER INSERT ON webhook_deliveries FOR EACH ROW WHEN (NEW.webhook_id = ${Number(hook.id)}) EXECUTE FUNCTION ${fn}()`);
    try {
      const started = Date.now();
      const r = await test(acct, hook.id);
      expect(r.status, r.text).toBe(201);
      expect(r.body).toMatchObject({ type: 'ping', state: 'pending', attempts: [] });
      expect(Date.now() - started).toBeLessThan(5_000);
      expect((await pings(hook.id))[0]!.parked_at).toBeInstanceOf(Date);
      expect(sentTo(hook.id)).toBe(0);
    } finally {
      await stack.db.raw(`DROP TRIGGER ${fn} ON webhook_deliveries`);
      await stack.db.raw(`DROP FUNCTION ${fn}()`);
    }
  });
});
