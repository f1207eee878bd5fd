// Behind a busy endpoint, its backlog waits for a slot about as long as the endpoint's sends take
// (issue 15's isolation): a hanging endpoint's deliveries wait, in its webhook's retry workflow,
// until a send in flight to it times out, not asked about again every half second (that asking
// cost the database and Temporal work the other endpoints then waited behind), while a quick
// endpoint's are looked at again soon. Per-endpoint bound 2, time-out 6 s (long enough that the
// time it takes to notice the sends in flight on a loaded machine leaves most of it to measure);
// retries wait a minute so none takes a slot here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, newAccount, type TestAccount } from '../../support/harness.ts';
import { startReceiver, type Receiver } from '../../support/webhook-receiver.ts';
import { useWebhookStack } from '../../support/webhook-stack.ts';
import { createItem } from '../watchlist/helpers.ts';
import { webhookRetriesId } from '../../../workflows/webhook-retries.ts';
import { createWebhook } from './helpers.ts';

const TIMEOUT_MS = 6_000;
const ANSWER_MS = 300;
const stack = useWebhookStack({ perEndpointConcurrency: 2, timeoutMs: TIMEOUT_MS, scheduleMs: [60_000] });
let acct: TestAccount;
const receivers: Receiver[] = [];

beforeAll(async () => {
  acct = await newAccount(stack.db);
});

afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
});

/** A webhook on a receiver of its own (its in-flight count is this endpoint's alone). */
async function endpoint(rx: Receiver): Promise<{ hookId: number; itemId: number }> {
  const hook = await createWebhook(stack.gateway.url, acct.key, { url: rx.url });
  rx.secrets = [hook.secret as string];
  const item = await createItem(stack.gateway.url, acct.key, { webhook_setting_id: hook.id });
  return { hookId: Number(hook.id), itemId: Number(item.id) };
}

const notifyMany = async (itemId: number, n: number) => {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) ids.push(await stack.notify(acct.accountId, itemId));
  return ids;
};

describe('waiting for a slot', () => {
  it('a quick endpoint: its backlog is looked at again within about one send', async () => {
    const rx = await startReceiver();
    receivers.push(rx);
    rx.fallback = { status: 204, delayMs: ANSWER_MS };
    const { hookId, itemId } = await endpoint(rx);
    expect(stack.attempts.slotFreeInMs!(hookId)).toBe(0);
    const first = await notifyMany(itemId, 2);
    await eventually(async () => (rx.inFlight === 2 ? true : undefined), 20_000, 10);
    // Nothing known about the endpoint yet: the caller's own short backoff.
    expect(stack.attempts.slotFreeInMs!(hookId)).toBe(1);
    await eventually(async () => ((await stack.db('webhook_deliveries').whereIn('notification_id', first).where({ state: 'delivered' })).length === 2 ? true : undefined), 20_000);

    await notifyMany(itemId, 2);
    await eventually(async () => (rx.inFlight === 2 ? true : undefined), 20_000, 10);
    const wait = stack.attempts.slotFreeInMs!(hookId);
    expect(wait).toBeGreaterThanOrEqual(1);
    // About one send (ANSWER_MS, plus what the last send's round trip took on a loaded machine),
    // far from the time-out a hanging endpoint's backlog waits for.
    expect(wait).toBeLessThanOrEqual(ANSWER_MS + 500);
  });

  it('a hanging endpoint: its backlog is deferred until a send to it times out', { timeout: 60_000 }, async () => {
    const rx = await startReceiver();
    receivers.push(rx);
    rx.fallback = 'hang';
    const { hookId, itemId } = await endpoint(rx);
    // One send times out, so the endpoint's sends are known to take the whole time-out.
    const [probe] = await notifyMany(itemId, 1);
    await eventually(async () => {
      const row = await stack.db('webhook_attempts as a').join('webhook_deliveries as d', 'd.id', 'a.delivery_id').where('d.notification_id', probe).first('a.error');
      return row ? row : undefined;
    }, 20_000);

    await notifyMany(itemId, 2);
    await eventually(async () => (rx.inFlight === 2 ? true : undefined), 20_000, 10);
    const wait = stack.attempts.slotFreeInMs!(hookId);
    expect(wait).toBeGreaterThan(TIMEOUT_MS / 2);
    expect(wait).toBeLessThanOrEqual(TIMEOUT_MS);

    // The backlog behind the two hanging sends: handed to the webhook's retry workflow to go
    // about when a slot frees (0.8-1.2 of the wait), not the half second an unknown endpoint's
    // put-off waits, and out of the outbox the dispatcher claims from.
    const backlog = await notifyMany(itemId, 4);
    const waiting = await eventually(async () => {
      const rows = await stack.db('webhook_deliveries')
        .whereIn('notification_id', backlog)
        .select('dispatched', 'attempt_count', stack.db.raw('extract(epoch from next_attempt_at - clock_timestamp()) * 1000 AS ahead_ms'));
      return rows.every((r) => r.dispatched) ? rows : undefined;
    }, 20_000, 10);
    for (const r of waiting) {
      expect(r.attempt_count).toBe(0);
      expect(Number(r.ahead_ms)).toBeGreaterThan(600);
    }
    expect((await stack.client.workflow.getHandle(webhookRetriesId(hookId)).describe()).status.name).toBe('RUNNING');
  });
});
