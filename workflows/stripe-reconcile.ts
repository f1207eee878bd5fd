// stripeReconcile: run by the `stripe-reconcile` Temporal Schedule (src/billing/stripe/schedules.ts).
// Reads every subscription again from Stripe and mirrors it, which repairs whatever a missed or
// failed Stripe webhook left behind. One activity, heartbeating its page cursor, so a worker that
// dies mid-run hands the rest to another without starting over.
import { proxyActivities } from '@temporalio/workflow';
import type { StripeBillingActivities } from '../activities/stripe-billing.ts';

const { reconcileStripeSubscriptions } = proxyActivities<StripeBillingActivities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '5 minutes', maximumAttempts: 5 },
});

export async function stripeReconcile(): Promise<{ read: number; mirrored: number; foreign: number }> {
  return reconcileStripeSubscriptions();
}
