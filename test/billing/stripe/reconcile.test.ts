// The reconcile Schedule (issue 16), on the run's Temporal server with a real worker serving
// BILLING_TASK_QUEUE and stripe-mock as Stripe: ensureStripeSchedules creates the Schedules
// (reconcile and meter sync) and brings them up to date when run again; a triggered run lists every subscription at Stripe and
// mirrors the ones whose customer is ours, which is how a missed webhook is repaired.
import Stripe from 'stripe';
import { afterAll, describe, expect, it } from 'vitest';
import { viewOf } from '../../../src/billing/stripe/mirror.ts';
import { ensureStripeSchedules, meterSyncScheduleId, reconcileScheduleId } from '../../../src/billing/stripe/schedules.ts';
import { createLogger } from '../../../src/logger.ts';
import { eventually } from '../../support/harness.ts';
import { stripeMockUrl } from '../../support/stripe-mock.ts';
import { uniqueTaskQueue } from '../../support/temporal.ts';
import { useWorkerStack, type WorkerStack } from '../../support/worker-stack.ts';

const STRIPE_ENV = { BILLING_PROVIDER: 'stripe', STRIPE_SECRET_KEY: 'sk_test_reconcile', STRIPE_WEBHOOK_SECRET: 'whsec_cmVjb25jaWxl', STRIPE_API_BASE: stripeMockUrl() };

const stack = useWorkerStack<WorkerStack>({
  database: 'tm_stripe_reconcile',
  env: { ...STRIPE_ENV, BILLING_TASK_QUEUE: uniqueTaskQueue('billing') },
  queues: (config) => [config.BILLING_TASK_QUEUE],
  childEnv: () => ({}),
  build: async (s) => s,
});

afterAll(async () => {
  for (const id of [reconcileScheduleId(stack.config.BILLING_TASK_QUEUE), meterSyncScheduleId(stack.config.BILLING_TASK_QUEUE)]) {
    await stack.client?.schedule
      .getHandle(id)
      .delete()
      .catch(() => {});
  }
});

describe('the Stripe reconcile schedule', { timeout: 60_000 }, () => {
  it('is created once and updated after; a run mirrors every subscription of our customers', async () => {
    const taskQueue = stack.config.BILLING_TASK_QUEUE;
    const log = createLogger('silent');
    await ensureStripeSchedules(stack.client, { taskQueue, reconcileEveryMs: 3_600_000, meterSyncEveryMs: 3_600_000, log });
    // Again, with other intervals: updated in place, not refused as already running.
    await ensureStripeSchedules(stack.client, { taskQueue, reconcileEveryMs: 1_800_000, meterSyncEveryMs: 2_700_000, log });
    const meter = await stack.client.schedule.getHandle(meterSyncScheduleId(taskQueue)).describe();
    expect(meter.spec.intervals?.map((i) => i.every)).toEqual([2_700_000]);
    expect(meter.policies.overlap).toBe('SKIP');
    expect(meter.action).toMatchObject({ type: 'startWorkflow', workflowType: 'stripeMeterSync', taskQueue });
    const handle = stack.client.schedule.getHandle(reconcileScheduleId(taskQueue));
    const described = await handle.describe();
    expect(described.spec.intervals?.map((i) => i.every)).toEqual([1_800_000]);
    expect(described.policies.overlap).toBe('SKIP');
    expect(described.action).toMatchObject({ type: 'startWorkflow', workflowType: 'stripeReconcile', taskQueue });

    // What Stripe lists, read the way the run reads it; its customer becomes one of our accounts.
    const stripe = new Stripe(STRIPE_ENV.STRIPE_SECRET_KEY, { host: '127.0.0.1', port: Number(new URL(STRIPE_ENV.STRIPE_API_BASE).port), protocol: 'http' });
    const listed = (await stripe.subscriptions.list({ status: 'all', limit: 100, expand: ['data.items.data.price'] })).data;
    expect(listed.length).toBeGreaterThan(0);
    const sub = listed[0]!;
    const expected = viewOf(sub);
    const [account] = await stack.db('accounts').insert({ name: 'reconciled', customer_id: expected.customerId }).returning('id');

    await handle.trigger();
    const row = await eventually(async () => stack.db('subscriptions').where({ account_id: account.id }).first(), 45_000);
    expect(row).toMatchObject({
      id: sub.id,
      plan_id: expected.subscription.planId,
      status: expected.subscription.status,
      current_period_start: expected.subscription.periodStart,
      current_period_end: expected.subscription.periodEnd,
      cancel_at_period_end: expected.subscription.cancelAtPeriodEnd,
    });
    expect(await stack.db('plans').where({ id: expected.plan.id }).first()).toMatchObject({ price_id: expected.plan.priceId, included: expected.plan.included });
  });
});
