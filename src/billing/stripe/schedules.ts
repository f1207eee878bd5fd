// The Temporal Schedules of Stripe billing, made to match the configuration at every worker
// start (created when missing, updated when the interval or queue changed): a Schedule rather
// than a timer loop in a workflow, so operators see, pause and trigger it in the Temporal UI.
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { Logger } from '../../logger.ts';

/** Per task queue: deployments (and test files) sharing a namespace keep their own. */
export function reconcileScheduleId(taskQueue: string): string {
  return `stripe-reconcile:${taskQueue}`;
}

export async function ensureStripeSchedules(client: Client, opts: { taskQueue: string; reconcileEveryMs: number; log: Logger }): Promise<void> {
  const spec = { intervals: [{ every: opts.reconcileEveryMs }] };
  const action = { type: 'startWorkflow' as const, workflowType: 'stripeReconcile', taskQueue: opts.taskQueue, args: [] };
  // One pass at a time: a slow pass is not doubled by the next tick.
  const policies = { overlap: ScheduleOverlapPolicy.SKIP };
  const scheduleId = reconcileScheduleId(opts.taskQueue);
  try {
    await client.schedule.create({ scheduleId, spec, action, policies });
    opts.log.info({ schedule: scheduleId, every_ms: opts.reconcileEveryMs }, 'Stripe reconcile schedule created');
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await client.schedule.getHandle(scheduleId).update((prev) => ({ ...prev, spec, action, policies: { ...prev.policies, ...policies } }));
  }
}
