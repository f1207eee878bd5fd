// A slow endpoint holds at most its share of the worker (issue 15): with the per-endpoint bound
// at 2, a receiver that takes 4 s per answer never sees more than 2 requests at once, every
// message still arrives, and another endpoint's delivery goes through meanwhile; the busy
// endpoint's backlog waits for a slot in its webhook's one retry workflow.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, newAccount, type TestAccount } from '../../support/harness.ts';
import { startReceiver, type Receiver } from '../../support/webhook-receiver.ts';
import { useWebhookStack } from '../../support/webhook-stack.ts';
import { createItem } from '../watchlist/helpers.ts';
import { webhookRetriesId } from '../../../workflows/webhook-retries.ts';
import { createWebhook } from './helpers.ts';

const stack = useWebhookStack({ perEndpointConcurrency: 2 });
let acct: TestAccount;
let slow: Receiver;
let fast: Receiver;

beforeAll(async () => {
  acct = await newAccount(stack.db);
  slow = await startReceiver();
  fast = await startReceiver();
});

afterAll(async () => {
  await slow?.close();
  await fast?.close();
});

/** The slow endpoint's answer time: what another endpoint's delivery would wait were it held up. */
const SLOW_MS = 4_000;

describe('per-endpoint concurrency', () => {
  // Six slow deliveries two at a time take three answers' time (12 s) plus the waits for a slot.
  it('bounds a slow endpoint and does not hold up another', { timeout: 60_000 }, async () => {
    slow.fallback = { status: 204, delayMs: SLOW_MS };
    const slowHook = await createWebhook(stack.gateway.url, acct.key, { url: slow.url });
    const fastHook = await createWebhook(stack.gateway.url, acct.key, { url: fast.url });
    const slowItem = await createItem(stack.gateway.url, acct.key, { webhook_setting_id: slowHook.id });
    const fastItem = await createItem(stack.gateway.url, acct.key, { webhook_setting_id: fastHook.id });
    const slowIds: number[] = [];
    for (let i = 0; i < 6; i++) slowIds.push(await stack.notify(acct.accountId, slowItem.id));
    await eventually(async () => (slow.inFlight >= 2 ? true : undefined), 20_000, 20);
    const sent = Date.now();
    await stack.notify(acct.accountId, fastItem.id);
    await eventually(async () => (fast.received.length === 1 ? true : undefined), 20_000, 20);
    // Not behind the slow answers (SLOW_MS), with room for a loaded machine.
    expect(Date.now() - sent).toBeLessThan(SLOW_MS - 1_000);
    await eventually(async () => {
      const row = await stack.db('webhook_deliveries').whereIn('notification_id', slowIds).where({ state: 'delivered' }).count('* as n').first();
      return Number(row?.n) === 6 ? true : undefined;
    }, 60_000);
    expect(slow.maxInFlight).toBe(2);
    expect(new Set(slow.received.map((r) => r.headers['webhook-id'])).size).toBe(6);
    // Put-off attempts are not attempts: each delivery has exactly its one successful attempt.
    const attempts = await stack.db('webhook_attempts as a').join('webhook_deliveries as d', 'd.id', 'a.delivery_id').whereIn('d.notification_id', slowIds).count('* as n').first();
    expect(Number(attempts?.n)).toBe(6);
    // The ones that found the endpoint busy waited for a slot in the slow webhook's one retry
    // workflow; the fast endpoint never needed one.
    const slowRuns = await stack.client.workflow.getHandle(webhookRetriesId(Number(slowHook.id))).describe();
    expect(slowRuns.taskQueue).toBe(stack.taskQueue);
    await expect(stack.client.workflow.getHandle(webhookRetriesId(Number(fastHook.id))).describe()).rejects.toThrow(/not found/i);
  });
});
