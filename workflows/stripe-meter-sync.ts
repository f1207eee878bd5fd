// stripeMeterSync: run by the `stripe-meter-sync` Temporal Schedule (src/billing/stripe/schedules.ts)
// every STRIPE_METER_SYNC_INTERVAL_MS, overlapping runs skipped. Reports the credits charged
// since the last run to the Stripe Billing Meter (src/billing/stripe/meter-sync.ts says why
// nothing is lost or doubled). While Stripe is down or rate-limiting, the activity retries with
// backoff (Retry-After honoured); after the last attempt the run fails and the next tick starts
// over from what PostgreSQL holds, so an outage of any length is caught up when Stripe returns.
import { proxyActivities } from '@temporalio/workflow';
import type { MeterSyncActivities } from '../activities/meter-sync.ts';
import type { MeterSyncResult } from '../src/billing/stripe/meter-sync.ts';

const { syncStripeMeter } = proxyActivities<MeterSyncActivities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 10 },
});

export async function stripeMeterSync(): Promise<MeterSyncResult> {
  return syncStripeMeter();
}
