// The Temporal Schedules of Stripe billing, made to match the configuration at every worker
// start (created when missing, updated when the interval or queue changed): a Schedule rather
// than a timer loop in a workflow, so operators see, pause and trigger it in the Temporal UI.
//   - stripe-reconcile: every subscription read again into the mirror (workflows/stripe-reconcile.ts);
//   - stripe-meter-sync: charged credits reported to the Billing Meter (workflows/stripe-meter-sync.ts).
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { Logger } from '../../logger.ts';

/** Per task queue: deployments (and test files) sharing a namespace keep their own. */
export function reconcileScheduleId(taskQueue: string): string {
  return `stripe-reconcile:${taskQueue}`;
}

export function meterSyncScheduleId(taskQueue: string): string {
  return `stripe-meter-sync:${taskQueue}`;
}

export async function ensureStripeSchedules(
  client: Client,
  opts: { taskQueue: string; reconcileEveryMs: number; meterSyncEveryMs: number; log: Logger },
): Promise<void> {
  await ensureSchedule(client, opts, reconcileScheduleId(opts.taskQueue), 'stripeReconcile', opts.reconcileEveryMs);
  await ensureSchedule(client, opts, meterSyncScheduleId(opts.taskQueue), 'stripeMeterSync', opts.meterSyncEveryMs);
}

async function ensureSchedule(client: Client, opts: { taskQueue: string; log: Logger }, scheduleId: string, workflowType: string, everyMs: number): Promise<void> {
  const spec = { intervals: [{ every: everyMs }] };
  const action = { type: 'startWorkflow' as const, workflowType, taskQueue: opts.taskQueue, args: [] };
  // One pass at a time: a slow pass is not doubled by the next tick.
  const policies = { overlap: ScheduleOverlapPolicy.SKIP };
  try {
    await client.schedule.create({ scheduleId, spec, action, policies });
    opts.log.info({ schedule: scheduleId, every_ms: everyMs }, 'Stripe schedule created');
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await client.schedule.getHandle(scheduleId).update((prev) => ({ ...prev, spec, action, policies: { ...prev.policies, ...policies } }));
  }
}
