// Webhooks of an account that is not served (issue 25): kept, not sent. A delivery in its retry
// schedule when the account lapses, and one written while it is not served, are parked and reach
// no endpoint; served again, each is delivered exactly once, except one older than the retry
// schedule's span, which fails as expired. The receiver's own record is the ground truth.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepServiceState } from '../../../src/accounts/service-state.ts';
import { deliveryServiceHooks, EXPIRED_WHILE_PARKED } from '../../../src/webhooks/parking.ts';
import { eventually, newAccount, type TestAccount } from '../../support/harness.ts';
import { startReceiver, type Receiver } from '../../support/webhook-receiver.ts';
import { useWebhookStack } from '../../support/webhook-stack.ts';
import { sleep } from '../../stream/helpers.ts';
import { createItem } from '../watchlist/helpers.ts';
import { createWebhook } from './helpers.ts';

const SCHEDULE_MS = [300, 300, 300, 300, 300];
/** Set by a test to run a sweep between a dispatcher's attempt and its record of it. */
let betweenAttemptAndRecord: ((deliveryId: number) => Promise<void>) | null = null;
const stack = useWebhookStack({ scheduleMs: SCHEDULE_MS, timeoutMs: 5_000, roundMaxMs: 200, afterDispatchAttempt: async (id) => betweenAttemptAndRecord?.(id) });
const hooks = [deliveryServiceHooks({ expireAfterMs: 60_000 })];
let acct: TestAccount;
let receiver: Receiver;

beforeAll(async () => {
  acct = await newAccount(stack.db);
  receiver = await startReceiver();
});
afterAll(() => receiver?.close());

const setStatus = (status: string) => stack.db('subscriptions').where({ account_id: acct.accountId }).update({ status });
const delivery = (nid: number) => stack.db('webhook_deliveries').where({ notification_id: nid }).first();
const sentFor = (messageId: string) => receiver.received.filter((r) => r.headers['webhook-id'] === messageId);

describe('webhooks of an account that is not served', { timeout: 120_000 }, () => {
  it('are parked, not sent, then sent once each when it is served again (the stale one expires)', async () => {
    const hook = await createWebhook(stack.gateway.url, acct.key, { url: receiver.url });
    receiver.secrets = [hook.secret as string];
    const item = await createItem(stack.gateway.url, acct.key, { webhook_setting_id: hook.id });
    expect((await sweepServiceState(stack.db, hooks)).suspended).toEqual([]);

    // One delivery failing (in its retry schedule) when the account lapses.
    receiver.script = [{ status: 500 }];
    receiver.fallback = { status: 503 };
    const retrying = await stack.notify(acct.accountId, item.id);
    await eventually(async () => ((await delivery(retrying))?.attempt_count >= 1 ? true : undefined));
    await setStatus('past_due');
    expect(await sweepServiceState(stack.db, hooks)).toEqual({ suspended: [acct.accountId], resumed: [] });
    receiver.fallback = { status: 204 };
    // Written while not served (a poll in flight at the lapse), and one as old as three days.
    const late = await stack.notify(acct.accountId, item.id);
    const stale = await stack.notify(acct.accountId, item.id);
    await stack.db('webhook_deliveries').where({ notification_id: stale }).update({ created_at: new Date(Date.now() - 3 * 86_400_000) });

    const all = [retrying, late, stale];
    await eventually(async () => {
      const rows = await Promise.all(all.map(delivery));
      return rows.every((d) => d.parked_at !== null) ? true : undefined;
    }, 30_000);
    const before = receiver.received.length;
    // Several schedule steps: a delivery that was not parked would have been sent by now.
    await sleep(SCHEDULE_MS[0]! * 8);
    expect(receiver.received.length).toBe(before);
    for (const nid of all) expect(await delivery(nid)).toMatchObject({ state: 'pending', parked_at: expect.any(Date) });

    await setStatus('active');
    expect(await sweepServiceState(stack.db, hooks)).toEqual({ suspended: [], resumed: [acct.accountId] });
    for (const nid of [retrying, late]) {
      const d = await eventually(async () => {
        const row = await delivery(nid);
        return row.state !== 'pending' ? row : undefined;
      }, 30_000);
      expect(d).toMatchObject({ state: 'delivered', parked_at: null });
      const sent = sentFor(d.message_id);
      expect(sent.filter((r) => r.verified[0])).toHaveLength(sent.length);
      // The retrying one: its failed attempt before the lapse, then exactly one more.
      expect(sent).toHaveLength(nid === retrying ? 2 : 1);
    }
    const expired = await delivery(stale);
    expect(expired).toMatchObject({ state: 'failed', failure_reason: EXPIRED_WHILE_PARKED, parked_at: null });
    expect(sentFor(expired.message_id)).toEqual([]);
  });

  it('a sweep and an attempt racing: the delivery is never left parked while the account is served', async () => {
    const { other, item, flip } = await unservedAccount();
    // Deliveries written while not served, then resumed while their attempts run.
    const nids: number[] = [];
    for (let i = 0; i < 20; i++) nids.push(await stack.notify(other.accountId, item.id));
    await flip('active');
    await sweepServiceState(stack.db, hooks);
    for (const nid of nids) {
      const d = await settled(nid);
      expect(d.state).toBe('delivered');
      expect(sentFor(d.message_id)).toHaveLength(1);
    }
  });

  it('parked by an attempt, resumed before the dispatcher records that attempt: still sent, once', async () => {
    // The interleaving a full run once met (CI of 2026-11-29): the dispatcher's record of a parking
    // attempt ("done") landed after the sweep had handed the delivery back, and left it pending,
    // marked dispatched, with no time to send it: lost.
    const { other, item, flip } = await unservedAccount();
    let resumedInGap = false;
    betweenAttemptAndRecord = async (id) => {
      const row = await stack.db('webhook_deliveries').where({ id }).first('account_id', 'parked_at');
      if (resumedInGap || Number(row.account_id) !== other.accountId || row.parked_at === null) return;
      resumedInGap = true;
      await flip('active');
      expect((await sweepServiceState(stack.db, hooks)).resumed).toEqual([other.accountId]);
    };
    try {
      const nid = await stack.notify(other.accountId, item.id);
      const d = await settled(nid, 20_000);
      // Not a pass by default: the gap this case is about was really met.
      expect(resumedInGap).toBe(true);
      expect(d.state).toBe('delivered');
      expect(sentFor(d.message_id)).toHaveLength(1);
    } finally {
      betweenAttemptAndRecord = null;
    }
  });
});

/** A new account with a webhook and an item sending to it, suspended by a sweep; `flip` sets its subscription's status. */
async function unservedAccount() {
  const other = await newAccount(stack.db);
  const hook = await createWebhook(stack.gateway.url, other.key, { url: receiver.url });
  receiver.secrets = [hook.secret as string];
  receiver.fallback = { status: 204 };
  const item = await createItem(stack.gateway.url, other.key, { webhook_setting_id: hook.id });
  const flip = (status: string) => stack.db('subscriptions').where({ account_id: other.accountId }).update({ status });
  await flip('unpaid');
  expect((await sweepServiceState(stack.db, hooks)).suspended).toEqual([other.accountId]);
  return { other, item, flip };
}

/** The delivery once it is no longer pending; on a time-out, the row as it was, for the reason. */
async function settled(nid: number, timeoutMs = 30_000): Promise<Awaited<ReturnType<typeof delivery>>> {
  let last: Record<string, unknown> | undefined;
  try {
    return await eventually(async () => {
      const row = (last = await delivery(nid));
      return row.state !== 'pending' ? row : undefined;
    }, timeoutMs);
  } catch (err) {
    const { state, attempt_count, parked_at, dispatched, claimed_until, next_attempt_at } = last ?? {};
    throw new Error(`delivery of notification ${nid} still pending: ${JSON.stringify({ state, attempt_count, parked_at, dispatched, claimed_until, next_attempt_at })}`, { cause: err });
  }
}
