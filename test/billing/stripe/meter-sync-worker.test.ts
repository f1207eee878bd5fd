// The meter sync on its Temporal Schedule (stripe-meter-sync:<BILLING_TASK_QUEUE>, every 2 s
// here), run by the production worker entry (temporal/worker-main.ts) in a child process with
// BILLING_PROVIDER=stripe, against stripe-mock behind the recording proxy. Credits come from
// real paid requests through the gateway. Whatever happens, the proxy's total per customer ends
// equal to the ledger's charged credits:
//   - the worker SIGKILLed while a meter event is in flight (held open at the proxy, then let
//     through to Stripe after the kill, so Stripe has it and our mark does not): the restarted
//     worker resends the same identifier and Stripe counts it once;
//   - Stripe down: captures accumulate (billing:sync-status shows the lag), and the sync catches
//     up when it returns; 500 and 429 are retried under the same identifier, counted once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { meterSyncScheduleId, reconcileScheduleId } from '../../../src/billing/stripe/schedules.ts';
import { meterSyncStatus } from '../../../src/billing/stripe/meter-sync.ts';
import { call, eventually, newAccount, TEST_WEBHOOK_KEY, type TestAccount } from '../../support/harness.ts';
import { startStripeProxy, type StripeProxy } from '../../support/stripe-mock.ts';
import { uniqueTaskQueue } from '../../support/temporal.ts';
import { useWorkerStack, type WorkerStack } from '../../support/worker-stack.ts';

const EVENT = 'api_credits';
let proxy: StripeProxy;

// Before the stack's own beforeAll: the worker's environment names the proxy.
beforeAll(async () => {
  proxy = await startStripeProxy();
});
afterAll(async () => {
  await proxy?.close();
});

const stack = useWorkerStack<WorkerStack>({
  database: 'tm_meter_worker',
  env: {
    SCRAPE_TASK_QUEUE: uniqueTaskQueue('scrapes'),
    MONITOR_TASK_QUEUE: uniqueTaskQueue('monitors'),
    WEBHOOK_TASK_QUEUE: uniqueTaskQueue('webhooks'),
    BILLING_TASK_QUEUE: uniqueTaskQueue('billing'),
  },
  worker: 'child-process',
  queues: (config) => [config.BILLING_TASK_QUEUE],
  childEnv: ({ config }) => ({
    BILLING_PROVIDER: 'stripe',
    STRIPE_SECRET_KEY: 'sk_test_meterworker',
    STRIPE_WEBHOOK_SECRET: 'whsec_meterworker',
    STRIPE_API_BASE: proxy.url,
    STRIPE_METER_EVENT_NAME: EVENT,
    STRIPE_METER_SYNC_INTERVAL_MS: '2000',
    BILLING_TASK_QUEUE: config.BILLING_TASK_QUEUE,
    WEBHOOK_TASK_QUEUE: config.WEBHOOK_TASK_QUEUE,
    WEBHOOK_SECRET_KEY: TEST_WEBHOOK_KEY,
  }),
  build: async (s, { onClose }) => {
    // The worker made both Schedules; the run's Temporal server outlives this file.
    onClose(async () => {
      for (const id of [meterSyncScheduleId(s.config.BILLING_TASK_QUEUE), reconcileScheduleId(s.config.BILLING_TASK_QUEUE)]) {
        await s.client.schedule.getHandle(id).delete().catch(() => {});
      }
    });
    return s;
  },
});

interface Billed extends TestAccount {
  customerId: string;
}

async function account(): Promise<Billed> {
  const a = await newAccount(stack.db, { plan: 'pro' });
  const row = await stack.db('accounts').where({ id: a.accountId }).first('customer_id');
  return { ...a, customerId: row.customer_id };
}

async function pings(a: Billed, n: number): Promise<void> {
  for (let i = 0; i < n; i++) expect((await call(stack.gateway.url, 'GET', '/svc/data/ping', { key: a.key })).status).toBe(200);
}

async function charged(a: Billed): Promise<number> {
  const row = await stack.db('credit_ledger').where({ account_id: a.accountId, state: 'charged' }).sum({ n: 'credits' }).first();
  return Number(row?.n ?? 0);
}

/**
 * Until the ledger holds the `expected` credits the test's own pings charged, the proxy's total
 * for the customer equals it, and every batch is sent. The expected total is the test's: a
 * charge still on its way to the ledger (captures are written after the answer) must not pass
 * for "caught up" on the older total, with no send made at all.
 */
async function caughtUp(a: Billed, expected: number, timeoutMs = 60_000): Promise<number> {
  return eventually(async () => {
    const want = await charged(a);
    const pending = await stack.db('meter_batches').where({ account_id: a.accountId, state: 'pending' });
    const unbatched = await stack.db('credit_ledger').where({ account_id: a.accountId, state: 'charged' }).whereNull('meter_batch');
    return want === expected && pending.length === 0 && unbatched.length === 0 && proxy.meterTotal(a.customerId, EVENT) === want ? want : undefined;
  }, timeoutMs, 250);
}

const sendsOf = (a: Billed) => proxy.requests.filter((r) => r.path === '/v1/billing/meter_events' && r.form['payload[stripe_customer_id]'] === a.customerId);

describe('meter sync on the Schedule', { timeout: 180_000 }, () => {
  it('reports what the gateway charged', async () => {
    const a = await account();
    await pings(a, 4);
    expect(await caughtUp(a, 4)).toBe(4);
  });

  it('a worker killed while a meter event is in flight: resent under the same identifier, counted once', async () => {
    const a = await account();
    proxy.holdMeterEvents(1);
    await pings(a, 5);
    await eventually(async () => (proxy.heldCount() === 1 ? true : undefined), 30_000);
    // The held send's batch: the first one (a tick may have fallen between the pings).
    const batch = await stack.db('meter_batches').where({ account_id: a.accountId }).orderBy('id').first();
    expect(batch.state).toBe('pending');
    expect(Number(batch.credits)).toBeGreaterThan(0);

    await stack.restartWorker({
      whileDown: async () => {
        // Stripe gets the event after its sender died: accepted there, never marked here.
        proxy.releaseHeld();
        await eventually(async () => (proxy.meterTotal(a.customerId, EVENT) === Number(batch.credits) ? true : undefined), 30_000);
        expect((await stack.db('meter_batches').where({ id: batch.id }).first()).state).toBe('pending');
      },
    });
    await pings(a, 2);
    expect(await caughtUp(a, 7, 90_000)).toBe(7);
    const sends = sendsOf(a).filter((r) => r.form.identifier === batch.identifier);
    expect(sends.length).toBeGreaterThanOrEqual(2);
    expect(proxy.meterEvents.filter((e) => e.identifier === batch.identifier)).toHaveLength(1);
    expect(await stack.db('meter_batches').where({ id: batch.id }).first()).toMatchObject({ state: 'sent' });
  });

  it('Stripe down: captures accumulate and are caught up when it returns; 500 and 429 retried, nothing doubled', async () => {
    const a = await account();
    await pings(a, 1);
    await caughtUp(a, 1);

    await proxy.down();
    try {
      await pings(a, 6);
      // The sync tried and failed: the credits wait in a pending batch, visible as lag.
      const status = await eventually(async () => {
        const s = (await meterSyncStatus(stack.db)).find((x) => x.account_id === a.accountId);
        return s?.pending_batches && s.last_error ? s : undefined;
      }, 30_000);
      expect(status).toMatchObject({ unreported_credits: 6 });
      expect(status.lag_seconds).toBeGreaterThanOrEqual(0);
    } finally {
      await proxy.up();
    }
    expect(await caughtUp(a, 7, 90_000)).toBe(7);

    let expected = 7;
    for (const fault of [{ status: 500, n: 2 }, { status: 429, n: 1, retryAfter: 1 }]) {
      const before = proxy.requests.length;
      // At the meter events only: the reconcile Schedule's own calls (any moment) must not take them.
      proxy.failNext(fault.n, fault.status, { retryAfter: fault.retryAfter, path: '/v1/billing/meter_events' });
      await pings(a, 3);
      expected += 3;
      const total = await caughtUp(a, expected, 90_000);
      const sends = proxy.requests.slice(before).filter((r) => r.path === '/v1/billing/meter_events');
      const failed = sends.filter((r) => r.injected);
      // Every request since the fault was set, to tell who took it if the meter events did not.
      const trace = JSON.stringify(proxy.requests.slice(before).map((r) => [r.method, r.path, r.status, r.injected]));
      expect(failed.map((r) => r.status), trace).toEqual(Array(fault.n).fill(fault.status));
      // The retry carried the identifier the failed send did, and Stripe counted it once.
      const id = failed[0]!.form.identifier!;
      expect(sends.filter((r) => !r.injected && r.form.identifier === id)).toHaveLength(1);
      expect(proxy.meterEvents.filter((e) => e.identifier === id)).toHaveLength(1);
      expect(proxy.meterTotal(a.customerId, EVENT)).toBe(total);
    }
    expect(proxy.meterTotal(a.customerId, EVENT)).toBe(13);
  });
});
