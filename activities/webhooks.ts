// The webhook delivery activity: a retry of one delivery (its first attempt is the
// dispatcher's), made by src/webhooks/attempt.ts and heartbeating while its send is out.
import { Context } from '@temporalio/activity';
import type { AttemptOutcome, DeliveryAttempts } from '../src/webhooks/attempt.ts';

export type { AttemptOutcome } from '../src/webhooks/attempt.ts';

export interface WebhookActivities {
  attemptWebhookDelivery(deliveryId: number): Promise<AttemptOutcome>;
}

export function createWebhookActivities(attempts: DeliveryAttempts): WebhookActivities {
  return {
    attemptWebhookDelivery(deliveryId) {
      const ctx = Context.current();
      return attempts.attempt(deliveryId, { heartbeat: () => ctx.heartbeat() });
    },
  };
}
