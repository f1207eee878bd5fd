// webhookDelivery: the retries of one message to one webhook, durably, until it is delivered,
// refused for good or its retry schedule is spent (its first attempt is the dispatcher's, which
// starts this workflow only when a retry is needed: src/webhooks/dispatcher.ts). Each attempt is
// an activity that sends and records the outcome and says how long to wait before the next one
// (the schedule, with its jitter and Retry-After, lives in src/webhooks/retry-schedule.ts); the
// wait is a durable timer, so a worker crash or restart loses nothing. A crash during a send re-runs the attempt: at-least-once,
// under the same webhook-id.
import { continueAsNew, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities/webhooks.ts';

export interface WebhookDeliveryInput {
  deliveryId: number;
  /**
   * History events after which the run continues as new (default HISTORY_LIMIT). A delivery to
   * a saturated endpoint is put off every few seconds for as long as it stays saturated, and
   * each put-off adds events; the state is all in the database, so a new run loses nothing.
   */
  historyLimit?: number;
  /** What the dispatcher's first attempt said to wait before the next one. */
  firstDelayMs?: number;
  /** Put-offs in a row so far (the endpoint had its share of attempts in flight). */
  putOffs?: number;
}

/**
 * The wait after the n-th put-off in a row: the attempt's own short delay, doubled each time up
 * to a minute, so messages piling up behind a hanging endpoint cost Temporal less and less
 * instead of an activity and a timer every few seconds each.
 */
export function putOffDelayMs(putOffs: number, delayMs: number): number {
  return Math.min(60_000, delayMs * 2 ** Math.min(Math.max(putOffs - 1, 0), 6));
}

/** About 100 put-offs or attempts; far under Temporal's own warning at 10,240 events. */
export const HISTORY_LIMIT = 1_000;

export function webhookDeliveryId(deliveryId: number, generation: number): string {
  return `webhook-delivery-${deliveryId}-${generation}`;
}

const { attemptWebhookDelivery } = proxyActivities<WebhookActivities>({
  // A send is bounded at 10 s; the rest is two short statements.
  startToCloseTimeout: '30 seconds',
  // The attempt heartbeats every second while its send is out: a worker that dies mid-send has
  // the attempt run again (same webhook-id) after this, not after the 30 s above.
  heartbeatTimeout: '5 seconds',
  // Only the activity's own failures (the database unreachable, a crash) are retried here; an
  // endpoint's failures are outcomes, paced by the schedule.
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

export async function webhookDelivery(input: WebhookDeliveryInput): Promise<void> {
  const limit = input.historyLimit ?? HISTORY_LIMIT;
  let putOffs = input.putOffs ?? 0;
  if (input.firstDelayMs) await sleep(input.firstDelayMs);
  for (;;) {
    const outcome = await attemptWebhookDelivery(input.deliveryId);
    if (outcome.done) return;
    putOffs = outcome.putOff ? putOffs + 1 : 0;
    await sleep(outcome.putOff ? putOffDelayMs(putOffs, outcome.delayMs) : outcome.delayMs);
    const info = workflowInfo();
    if (info.historyLength >= limit || info.continueAsNewSuggested) {
      await continueAsNew<typeof webhookDelivery>({ deliveryId: input.deliveryId, historyLimit: input.historyLimit, putOffs });
    }
  }
}
