// The delivery side's activities (WORKER_ROLE=deliver, or all): webhook retries and Stripe
// billing's reconcile and meter sync. The only activities that need a secret (WEBHOOK_SECRET_KEY,
// STRIPE_SECRET_KEY), and none of them loads the scrapers or the browser: a delivery worker
// imports this module alone (temporal/runtime.ts), never activities/index.ts.
import type { Config } from '../src/config.ts';
import type { Logger } from '../src/logger.ts';
import type { Db } from '../db/connection.ts';
import { createWebhookActivities } from './webhooks.ts';
import { createDeliveryAttempts, type DeliveryAttempts } from '../src/webhooks/attempt.ts';
import { createStripeBillingActivities } from './stripe-billing.ts';
import { createMeterSyncActivities } from './meter-sync.ts';
import { createStripeClient } from '../src/billing/stripe/client.ts';
import { SecretBox } from '../src/webhooks/secret-box.ts';
import { DEFAULT_SCHEDULE_MS } from '../src/webhooks/retry-schedule.ts';

export interface DeliveryActivities {
  activities: Record<string, (...args: never[]) => Promise<unknown>>;
  /** First attempts for this process's webhook dispatcher; absent without WEBHOOK_SECRET_KEY. */
  webhookAttempts?: DeliveryAttempts;
}

export function createDeliveryActivities(deps: { config: Config; log: Logger; db: Db }): DeliveryActivities {
  const { config, log, db } = deps;
  // Without a key (a process that never stores webhooks) deliveries cannot open their secrets.
  // One instance for the activity (retries) and this process's dispatcher (first attempts), so
  // the per-endpoint bound holds across both.
  const webhookAttempts = config.WEBHOOK_SECRET_KEY
    ? createDeliveryAttempts({
        db,
        box: new SecretBox(config.WEBHOOK_SECRET_KEY),
        log,
        allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
        scheduleMs: config.WEBHOOK_RETRY_SCHEDULE_MS ?? DEFAULT_SCHEDULE_MS,
        perEndpointConcurrency: config.WEBHOOK_PER_ENDPOINT_CONCURRENCY,
      })
    : undefined;
  const webhooks = webhookAttempts ? createWebhookActivities(db, webhookAttempts) : {};
  // Background calls may take longer than a request's live read; Temporal retries them.
  const stripe = config.BILLING_PROVIDER === 'stripe' ? createStripeClient(config, { timeoutMs: 30_000 }) : null;
  const billing = stripe
    ? {
        ...createStripeBillingActivities({ db, stripe, log }),
        ...createMeterSyncActivities({ db, stripe, eventName: config.STRIPE_METER_EVENT_NAME, log }),
      }
    : {};
  return { activities: { ...billing, ...webhooks }, webhookAttempts };
}
