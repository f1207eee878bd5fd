// webhookDelivery: one message to one webhook, durably, until it is delivered, refused for good
// or its retry schedule is spent. Each attempt is an activity that sends and records the
// outcome and says how long to wait before the next one (the schedule, with its jitter and
// Retry-After, lives in src/webhooks/retry-schedule.ts); the wait is a durable timer, so a
// worker crash or restart loses nothing. A crash during a send re-runs the attempt: at-least-once,
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
  for (;;) {
    const outcome = await attemptWebhookDelivery(input.deliveryId);
    if (outcome.done) return;
    await sleep(outcome.delayMs);
    const info = workflowInfo();
    if (info.historyLength >= limit || info.continueAsNewSuggested) await continueAsNew<typeof webhookDelivery>(input);
  }
}
