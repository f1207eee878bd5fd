// The hand-over from the dispatcher to a webhook's retry workflow (src/webhooks/hand-over.ts),
// on the real database and Temporal server: a signal only when the run would look too late or
// not at all (webhooks.retry_wake_at); a sweep at start for deliveries no run knows of (a lost
// Temporal server); and a delivery whose failed first attempt was recorded by a dispatcher that
// died before handing it over is handed over, not sent again ahead of its schedule.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/logger.ts';
import { startHandOvers, type HandOvers } from '../../../src/webhooks/hand-over.ts';
import { enqueuePing } from '../../../src/webhooks/outbox.ts';
import { webhookRetriesId } from '../../../workflows/webhook-retries.ts';
import { eventually, newAccount, type TestAccount } from '../../support/harness.ts';
import { startReceiver, type Receiver } from '../../support/webhook-receiver.ts';
import { useWebhookStack } from '../../support/webhook-stack.ts';
import { createWebhook } from './helpers.ts';

const stack = useWebhookStack();
let acct: TestAccount;
const receivers: Receiver[] = [];
const handOvers: HandOvers[] = [];

beforeAll(async () => {
  acct = await newAccount(stack.db);
});

afterAll(async () => {
  for (const h of handOvers) h.stop();
  await Promise.all(receivers.map((r) => r.close()));
});

async function webhook(): Promise<{ hookId: number; rx: Receiver }> {
  const rx = await startReceiver();
  receivers.push(rx);
  const hook = await createWebhook(stack.gateway.url, acct.key, { url: rx.url });
  rx.secrets = [hook.secret as string];
  return { hookId: Number(hook.id), rx };
}

/** A ping to the webhook, left where the test puts it: neither attempted nor dispatched. */
async function ping(hookId: number, columns: Record<string, unknown> = {}): Promise<number> {
  return stack.db.transaction(async (trx) => {
    const id = await enqueuePing(trx, acct.accountId, hookId);
    // Claimed for a minute, so the file's own dispatcher leaves it alone.
    await trx('webhook_deliveries')
      .where({ id })
      .update({ claimed_until: new Date(Date.now() + 60_000), ...columns });
    return id;
  });
}

const signals = async (hookId: number): Promise<number> => {
  const history = await stack.client.workflow.getHandle(webhookRetriesId(hookId)).fetchHistory();
  return (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes).length;
};

const wakeOf = async (hookId: number): Promise<number | null> => {
  const row = await stack.db('webhooks').where({ id: hookId }).first('retry_wake_at');
  return row.retry_wake_at ? (row.retry_wake_at as Date).getTime() : null;
};

/** Another dispatcher's hand-overs, its start sweep done (it would signal what the test leaves waiting). */
async function newHandOvers(): Promise<HandOvers> {
  const h = startHandOvers({ db: stack.db, client: stack.client, taskQueue: stack.taskQueue, log: createLogger('warn') });
  handOvers.push(h);
  await h.firstSweep;
  return h;
}

describe('handing a delivery over', () => {
  it('signals only when the run would look too late or not at all', async () => {
    const { hookId } = await webhook();
    const h = await newHandOvers();
    const now = Date.now();

    // A run that means to look in 30 s: a delivery due in 40 s needs no signal, and none starts one.
    await stack.db('webhooks').where({ id: hookId }).update({ retry_wake_at: new Date(now + 30_000) });
    const later = await ping(hookId);
    await h.handOver([{ id: String(later), webhookId: hookId, dueAt: now + 40_000 }]);
    await expect(stack.client.workflow.getHandle(webhookRetriesId(hookId)).describe()).rejects.toThrow(/not found/i);
    expect(await stack.db('webhook_deliveries').where({ id: later }).first()).toMatchObject({ dispatched: true, claimed_until: null });
    expect(await wakeOf(hookId)).toBe(now + 30_000);

    // Within a second of it: still none. Well before it: a signal, and the wake time moves up.
    const near = await ping(hookId);
    await h.handOver([{ id: String(near), webhookId: hookId, dueAt: now + 29_500 }]);
    await expect(stack.client.workflow.getHandle(webhookRetriesId(hookId)).describe()).rejects.toThrow(/not found/i);
    const sooner = await ping(hookId);
    await h.handOver([{ id: String(sooner), webhookId: hookId, dueAt: now + 20_000 }]);
    expect((await stack.client.workflow.getHandle(webhookRetriesId(hookId)).describe()).status.name).toBe('RUNNING');
    expect(await signals(hookId)).toBe(1);
    expect(await wakeOf(hookId)).toBe(now + 20_000);
    await stack.client.workflow.getHandle(webhookRetriesId(hookId)).terminate('test done');
  });

  it('hand-overs at once of the same deliveries of several webhooks, each in its own order, all go through (no deadlock)', async () => {
    const hooks = [(await webhook()).hookId, (await webhook()).hookId, (await webhook()).hookId];
    const h = await newHandOvers();
    // Far in the future: the runs mean to look before, so no signal is sent and only the locks are exercised.
    for (const id of hooks) await stack.db('webhooks').where({ id }).update({ retry_wake_at: new Date(Date.now() + 600_000) });
    const deliveries: { id: string; webhookId: number }[] = [];
    for (const webhookId of hooks) for (let i = 0; i < 4; i++) deliveries.push({ id: String(await ping(webhookId)), webhookId });
    const failures: unknown[] = [];
    for (let round = 0; round < 15; round++) {
      await Promise.all(
        Array.from({ length: 8 }, async (_, k) => {
          // Each hand-over in an order of its own: reversed, rotated.
          const rows = [...deliveries].sort(() => Math.random() - 0.5).map((d) => ({ ...d, dueAt: Date.now() + 700_000 + k }));
          await h.handOver(rows).catch((err: unknown) => failures.push(err));
        }),
      );
    }
    expect(failures.map(String)).toEqual([]);
    for (const id of hooks) await expect(stack.client.workflow.getHandle(webhookRetriesId(id)).describe()).rejects.toThrow(/not found/i);
  });

  it('signals when no run will look (retry_wake_at null), and the run delivers everything waiting', async () => {
    const { hookId, rx } = await webhook();
    const h = await newHandOvers();
    const ids = [await ping(hookId), await ping(hookId), await ping(hookId)];
    await h.handOver(ids.map((id) => ({ id: String(id), webhookId: hookId, dueAt: Date.now() })));
    await eventually(async () => ((await stack.db('webhook_deliveries').whereIn('id', ids).where({ state: 'delivered' })).length === 3 ? true : undefined), 20_000);
    expect(new Set(rx.received.map((r) => r.headers['webhook-id'])).size).toBe(3);
    // One signal for the three; the run ends once nothing waits, and says so.
    await stack.client.workflow.getHandle(webhookRetriesId(hookId)).result();
    expect(await signals(hookId)).toBe(1);
    expect(await wakeOf(hookId)).toBeNull();
  });
});

describe('a round', () => {
  it('keeps attempting as retries fall due within a minute: a failing endpoint\'s whole schedule is one activity', async () => {
    const { hookId, rx } = await webhook();
    rx.fallback = { status: 503 };
    const h = await newHandOvers();
    const ids = [await ping(hookId), await ping(hookId)];
    await h.handOver(ids.map((id) => ({ id: String(id), webhookId: hookId, dueAt: Date.now() })));
    const handle = stack.client.workflow.getHandle(webhookRetriesId(hookId));
    await handle.result();
    // The stack's schedule (0.3 s to 4.8 s): six attempts each, then failed.
    const rows = await stack.db('webhook_deliveries').whereIn('id', ids);
    expect(rows.map((r) => [r.state, r.attempt_count])).toEqual([
      ['failed', 6],
      ['failed', 6],
    ]);
    expect(rx.received).toHaveLength(12);
    const history = await handle.fetchHistory();
    expect((history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes)).toHaveLength(1);
  });
});

describe('deliveries no run knows of', () => {
  it('a dispatcher starting sweeps them up: the lost run is started again and delivers', async () => {
    const { hookId, rx } = await webhook();
    // Handed over long ago to a run the Temporal server no longer has: its wake time says a run
    // will look, so no hand-over would signal.
    const id = await ping(hookId, { dispatched: true, claimed_until: null, next_attempt_at: new Date(Date.now() - 60_000) });
    await stack.db('webhooks').where({ id: hookId }).update({ retry_wake_at: new Date(Date.now() - 60_000) });
    await newHandOvers();
    await eventually(async () => ((await stack.db('webhook_deliveries').where({ id }).first()).state === 'delivered' ? true : undefined), 20_000);
    expect(rx.received).toHaveLength(1);
  });

  it('a failed first attempt recorded by a dispatcher that died before the hand-over is handed over, not sent again early', async () => {
    const { hookId, rx } = await webhook();
    const due = Date.now() + 2_000;
    // As attempt.ts leaves it: one attempt on record, the next due, not yet dispatched; the claim lapsed.
    const id = await ping(hookId, { attempt_count: 1, next_attempt_at: new Date(due), claimed_until: new Date(Date.now() - 1_000) });
    await stack.db.raw(`SELECT pg_notify('webhook_deliveries', '')`);
    const d = await eventually(async () => {
      const row = await stack.db('webhook_deliveries').where({ id }).first();
      return row.state === 'delivered' ? row : undefined;
    }, 20_000);
    expect(d.attempt_count).toBe(2);
    expect(rx.received).toHaveLength(1);
    expect(rx.received[0]!.at).toBeGreaterThanOrEqual(due - 50);
  });
});
