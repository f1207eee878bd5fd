// The webhook retry activity: one round of a webhook's due retries (src/webhooks/due-retries.ts;
// first attempts are the dispatcher's), heartbeating while it runs so a dead worker's round is
// run again within the heartbeat timeout.
import { Context } from '@temporalio/activity';
import type { Db } from '../db/connection.ts';
import type { DeliveryAttempts } from '../src/webhooks/attempt.ts';
import { attemptDueRetries, type DueRunResult } from '../src/webhooks/due-retries.ts';

export interface WebhookActivities {
  attemptDueWebhookRetries(webhookId: number): Promise<DueRunResult>;
}

const HEARTBEAT_EVERY_MS = 1_000;

/** `roundMaxMs`: how long a round takes new deliveries (ROUND_MAX_MS); tests shorten it to see many rounds. */
export function createWebhookActivities(db: Db, attempts: DeliveryAttempts, opts: { roundMaxMs?: number } = {}): WebhookActivities {
  return {
    async attemptDueWebhookRetries(webhookId) {
      const ctx = Context.current();
      const beat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
      try {
        return await attemptDueRetries(db, attempts, webhookId, { concurrency: attempts.perEndpointConcurrency, maxMs: opts.roundMaxMs, signal: ctx.cancellationSignal });
      } finally {
        clearInterval(beat);
      }
    },
  };
}
