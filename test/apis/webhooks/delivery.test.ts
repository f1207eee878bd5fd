// Delivery of standard webhooks end to end (issue 15): a notification of an item naming a
// webhook reaches a real loopback receiver that verifies it with the `standardwebhooks` package;
// retries keep the webhook-id; 429 Retry-After is honoured; other 4xx but 408/409/425/429 are
// final; rotation signs with both secrets; the deliveries list, the test ping and the retry.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streamMessage } from '../../../src/notifications/log.ts';
import { enqueuePing } from '../../../src/webhooks/outbox.ts';
import { webhookRetries, webhookRetriesId } from '../../../workflows/webhook-retries.ts';
import { call, eventually, newAccount, type TestAccount } from '../../support/harness.ts';
import { startReceiver, type Receiver } from '../../support/webhook-receiver.ts';
import { useWebhookStack } from '../../support/webhook-stack.ts';
import { createItem } from '../watchlist/helpers.ts';
import { createWebhook } from './helpers.ts';

// Rounds of 200 ms: each retry its own round, so a run's history grows as it would over days.
// The per-attempt time-out is what a scripted hang waits out; an answered attempt must come in
// well inside it on a loaded machine too, or it would be counted as timed out and sent again.
const stack = useWebhookStack({ scheduleMs: [300, 300, 300, 300, 300], timeoutMs: 5_000, roundMaxMs: 200 });
let acct: TestAccount;
let receiver: Receiver;

beforeAll(async () => {
  acct = await newAccount(stack.db);
});

afterAll(async () => {
  await receiver?.close();
});

/** A receiver, a webhook pointing at it (its secret given to the receiver) and an item naming it. */
async function setup(): Promise<{ hook: Record<string, unknown>; itemId: number; receiver: Receiver }> {
  receiver = await startReceiver();
  const hook = await createWebhook(stack.gateway.url, acct.key, { url: receiver.url });
  receiver.secrets = [hook.secret as string];
  const item = await createItem(stack.gateway.url, acct.key, { webhook_setting_id: hook.id });
  return { hook, itemId: item.id, receiver };
}

async function deliveryOf(notificationId: number) {
  return stack.db('webhook_deliveries').where({ notification_id: notificationId }).first();
}

async function settled(notificationId: number, ms = 30_000) {
  return eventually(async () => {
    const d = await deliveryOf(notificationId);
    return d && d.state !== 'pending' ? d : undefined;
  }, ms);
}

describe('standard delivery', () => {
  it('delivers the notification as the stream sends it, signed, verified by the reference implementation', async () => {
    const { hook, itemId, receiver: rx } = await setup();
    const nid = await stack.notify(acct.accountId, itemId);
    const d = await settled(nid);
    expect(d.state).toBe('delivered');
    expect(rx.received).toHaveLength(1);
    const got = rx.received[0]!;
    expect(got.verified).toEqual([true]);
    expect(got.headers['webhook-id']).toBe(d.message_id);
    expect(got.headers['content-type']).toBe('application/json');
    const body = JSON.parse(got.body);
    expect(Object.keys(body)).toEqual(['type', 'timestamp', 'data']);
    const row = await stack.db('notifications').where({ id: nid }).first();
    expect(body).toEqual({ type: 'notification', timestamp: row.created_at.toISOString(), data: streamMessage({ id: nid, kind: row.kind, payload: row.payload }) });
    const list = await call(stack.gateway.url, 'GET', `/webhooks/${hook.id}/deliveries`, { key: acct.key });
    expect(list.status).toBe(200);
    expect(list.body.data[0]).toMatchObject({ notification_id: nid, state: 'delivered', message_id: d.message_id, type: 'notification' });
    expect(list.body.data[0].attempts).toHaveLength(1);
    expect(list.body.data[0].attempts[0]).toMatchObject({ status_code: 204, error: null });
  });

  it('retries 5xx, timeouts and 408 under the same webhook-id until delivered; each attempt verifies', async () => {
    const { itemId, receiver: rx } = await setup();
    rx.script = [{ status: 500 }, 'hang', { status: 408 }, { status: 503 }];
    const nid = await stack.notify(acct.accountId, itemId);
    const d = await settled(nid, 45_000);
    expect(d.state).toBe('delivered');
    expect(rx.received).toHaveLength(5);
    expect(new Set(rx.received.map((r) => r.headers['webhook-id']))).toEqual(new Set([d.message_id]));
    expect(rx.received.every((r) => r.verified[0])).toBe(true);
    expect(new Set(rx.received.map((r) => r.body)).size).toBe(1);
    const attempts = await stack.db('webhook_attempts').where({ delivery_id: d.id }).orderBy('id');
    expect(attempts.map((a) => a.status_code)).toEqual([500, null, 408, 503, 204]);
    expect(attempts[1].error).toMatch(/timed out/);
  });

  it('honours Retry-After on 429', async () => {
    const { itemId, receiver: rx } = await setup();
    rx.script = [{ status: 429, headers: { 'retry-after': '2' } }];
    const nid = await stack.notify(acct.accountId, itemId);
    const d = await settled(nid);
    expect(d.state).toBe('delivered');
    expect(rx.received).toHaveLength(2);
    expect(rx.received[1]!.at - rx.received[0]!.at).toBeGreaterThanOrEqual(1_900);
  });

  it('stops at a permanent 4xx, and the retry endpoint sends the same message again', async () => {
    const { hook, itemId, receiver: rx } = await setup();
    rx.script = [{ status: 410 }];
    const nid = await stack.notify(acct.accountId, itemId);
    const d = await settled(nid);
    expect(d.state).toBe('failed');
    expect(d.failure_reason).toMatch(/410/);
    expect(rx.received).toHaveLength(1);
    const retried = await call(stack.gateway.url, 'POST', `/webhooks/${hook.id}/deliveries/${d.id}/retry`, { key: acct.key });
    expect(retried.status, retried.text).toBe(202);
    expect(retried.body.state).toBe('pending');
    await eventually(async () => ((await deliveryOf(nid)).state === 'delivered' ? true : undefined));
    expect(rx.received).toHaveLength(2);
    expect(rx.received[1]!.headers['webhook-id']).toBe(d.message_id);
    expect(rx.received[1]!.verified).toEqual([true]);
  });

  it('gives up when the schedule is spent', async () => {
    const { itemId, receiver: rx } = await setup();
    rx.fallback = { status: 500 };
    const nid = await stack.notify(acct.accountId, itemId);
    const d = await settled(nid);
    expect(d.state).toBe('failed');
    expect(d.failure_reason).toMatch(/6 attempts/);
    expect(rx.received).toHaveLength(6);
  });

  it('signs with both secrets for 24 h after a rotation: a receiver holding either verifies', async () => {
    const { hook, itemId, receiver: rx } = await setup();
    const rotated = await call(stack.gateway.url, 'POST', `/webhooks/${hook.id}/rotate-secret`, { key: acct.key });
    rx.secrets = [hook.secret as string, rotated.body.secret as string];
    const nid = await stack.notify(acct.accountId, itemId);
    await settled(nid);
    expect(rx.received[0]!.verified).toEqual([true, true]);
    expect(String(rx.received[0]!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    // Past the overlap, only the new secret signs.
    await stack.db('webhooks').where({ id: hook.id }).update({ previous_secret_expires_at: new Date(Date.now() - 1000) });
    const later = await stack.notify(acct.accountId, itemId);
    await settled(later);
    expect(rx.received[1]!.verified).toEqual([false, true]);
  });

  it('enqueues nothing for an inactive webhook or an item naming none', async () => {
    const { hook, itemId } = await setup();
    await call(stack.gateway.url, 'PATCH', `/webhooks/${hook.id}`, { key: acct.key, body: { active: false } });
    const nid = await stack.notify(acct.accountId, itemId);
    const plain = await createItem(stack.gateway.url, acct.key);
    const other = await stack.notify(acct.accountId, plain.id);
    expect(await deliveryOf(nid)).toBeUndefined();
    expect(await deliveryOf(other)).toBeUndefined();
  });
});

describe('retries', () => {
  it('one workflow per webhook carries every message waiting for a retry, and ends when none waits', async () => {
    const { hook, itemId, receiver: rx } = await setup();
    // The endpoint fails until every message has been retried at least once, then answers.
    rx.fallback = { status: 503 };
    const nids: number[] = [];
    for (let i = 0; i < 5; i++) nids.push(await stack.notify(acct.accountId, itemId));
    const handle = stack.client.workflow.getHandle(webhookRetriesId(hook.id as number));
    await eventually(async () => {
      const rows = await stack.db('webhook_deliveries').whereIn('notification_id', nids).where('attempt_count', '>=', 2);
      return rows.length === 5 ? true : undefined;
    });
    expect((await handle.describe()).status.name).toBe('RUNNING');
    rx.fallback = { status: 204 };
    const ds = [];
    for (const nid of nids) ds.push(await settled(nid));
    expect(ds.map((d) => d.state)).toEqual(Array(5).fill('delivered'));
    // Every copy of a message carries its one webhook-id, one per recorded attempt.
    for (const d of ds) expect(rx.received.filter((r) => r.headers['webhook-id'] === d.message_id)).toHaveLength(d.attempt_count);
    expect(rx.received).toHaveLength(ds.reduce((n, d) => n + d.attempt_count, 0));
    expect(rx.received.every((r) => r.verified[0] === true)).toBe(true);
    // One run (or a chain of them) of one workflow for all five, done once nothing waits.
    await handle.result();
    const runs = [];
    for await (const w of stack.client.workflow.list({ query: `WorkflowId = '${handle.workflowId}'` })) runs.push(w);
    expect(runs.length).toBeGreaterThanOrEqual(1);
    expect(runs.every((w) => w.taskQueue === stack.taskQueue)).toBe(true);
  });

  it('continues as new past its history limit and loses nothing: one webhook-id, delivered once the endpoint answers', async () => {
    const { hook, receiver: rx } = await setup();
    rx.script = [{ status: 503 }, { status: 503 }, { status: 503 }, { status: 503 }];
    // A ping whose first attempt is on record as failed (as the dispatcher leaves it), so only
    // the run started here sends it, with a history limit a few rounds long.
    const deliveryId = await stack.db.transaction(async (trx) => {
      const id = await enqueuePing(trx, acct.accountId, hook.id as number);
      await trx('webhook_deliveries').where({ id }).update({ dispatched: true, attempt_count: 1, next_attempt_at: new Date() });
      return id;
    });
    const handle = await stack.client.workflow.start(webhookRetries, {
      workflowId: webhookRetriesId(hook.id as number),
      taskQueue: stack.taskQueue,
      args: [{ webhookId: hook.id as number, historyLimit: 10 }],
    });
    await handle.result();
    const d = await stack.db('webhook_deliveries').where({ id: deliveryId }).first();
    expect(d).toMatchObject({ state: 'delivered', attempt_count: 6 });
    expect(rx.received.map((r) => r.headers['webhook-id'])).toEqual(Array(5).fill(d.message_id));
    expect(rx.received.every((r) => r.verified[0] === true)).toBe(true);
    // The first run handed over to a second (or more), each continuing from the database.
    expect((await stack.client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId).describe()).status.name).toBe('CONTINUED_AS_NEW');
  });
});

describe('an endpoint failing for 5 days', () => {
  it('is turned off with a disabled_reason; a success before that ends the failing run', async () => {
    const { hook, itemId, receiver: rx } = await setup();
    rx.script = [{ status: 500 }];
    const first = await stack.notify(acct.accountId, itemId);
    await settled(first);
    // Failing since the first 500, then the success cleared it.
    expect((await stack.db('webhooks').where({ id: hook.id }).first()).failing_since).toBeNull();

    rx.fallback = { status: 503 };
    await stack.db('webhooks').where({ id: hook.id }).update({ failing_since: new Date(Date.now() - 5 * 24 * 3600e3 - 60_000) });
    const nid = await stack.notify(acct.accountId, itemId);
    const d = await settled(nid);
    expect(d.state).toBe('failed');
    expect(d.failure_reason).toBe('the webhook is not active');
    expect(rx.received).toHaveLength(3);
    const got = await call(stack.gateway.url, 'GET', `/webhooks/${hook.id}`, { key: acct.key });
    expect(got.body.active).toBe(false);
    expect(got.body.disabled_reason).toMatch(/failed for 5 days .*HTTP 503/);
    // The owner turns it back on: reason and failing run cleared.
    const on = await call(stack.gateway.url, 'PATCH', `/webhooks/${hook.id}`, { key: acct.key, body: { active: true } });
    expect(on.body).toMatchObject({ active: true, disabled_reason: null });
    expect((await stack.db('webhooks').where({ id: hook.id }).first()).failing_since).toBeNull();
  });
});

describe('POST /webhooks/{id}/test and the deliveries list', () => {
  it('sends a ping now and answers its delivery', async () => {
    const { hook, receiver: rx } = await setup();
    const r = await call(stack.gateway.url, 'POST', `/webhooks/${hook.id}/test`, { key: acct.key });
    expect(r.status, r.text).toBe(201);
    expect(r.body).toMatchObject({ type: 'ping', notification_id: null });
    expect(r.body.attempts.length).toBeGreaterThanOrEqual(1);
    expect(rx.received[0]!.verified).toEqual([true]);
    const body = JSON.parse(rx.received[0]!.body);
    expect(body).toMatchObject({ type: 'ping', data: { webhook_id: hook.id } });
  });

  it('pages newest first with next_before, and is 404 for another account', async () => {
    const { hook, itemId } = await setup();
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await stack.notify(acct.accountId, itemId));
    await eventually(async () => {
      const row = await stack.db('webhook_deliveries').where({ webhook_id: hook.id, state: 'delivered' }).count('* as n').first();
      return Number(row?.n) === 5 ? true : undefined;
    });
    const seen: number[] = [];
    let before: number | null = null;
    do {
      const r = await call(stack.gateway.url, 'GET', `/webhooks/${hook.id}/deliveries?limit=2${before ? `&before=${before}` : ''}`, { key: acct.key });
      expect(r.status, r.text).toBe(200);
      seen.push(...r.body.data.map((d: { notification_id: number }) => d.notification_id));
      before = r.body.next_before;
    } while (before !== null);
    expect(seen).toEqual([...ids].reverse());
    for (const q of ['limit=0', 'limit=101', 'limit=x', 'before=-1', 'other=1']) {
      const bad = await call(stack.gateway.url, 'GET', `/webhooks/${hook.id}/deliveries?${q}`, { key: acct.key });
      expect(bad.status, q).toBe(400);
      expect(Object.keys(bad.body)).toEqual(['error']);
    }
    const stranger = await newAccount(stack.db);
    expect((await call(stack.gateway.url, 'GET', `/webhooks/${hook.id}/deliveries`, { key: stranger.key })).status).toBe(404);
    expect((await call(stack.gateway.url, 'POST', `/webhooks/${hook.id}/test`, { key: stranger.key })).status).toBe(404);
    expect((await call(stack.gateway.url, 'POST', `/webhooks/${hook.id}/deliveries/1/retry`, { key: stranger.key })).status).toBe(404);
    expect((await call(stack.gateway.url, 'POST', `/webhooks/${hook.id}/deliveries/abc/retry`, { key: acct.key })).body).toEqual({ error: 'no delivery with that id' });
  });
});
