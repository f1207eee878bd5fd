// The meter sync activity (workflows/stripe-meter-sync.ts): one run of src/billing/stripe/
// meter-sync.ts. Its progress is in PostgreSQL (batches and their states), not in heartbeat
// details, so a retried or restarted attempt just runs again. Heartbeats go out on a timer,
// a Stripe call in flight included, so a worker that dies mid-send is noticed within the
// heartbeat timeout and another attempt resends the same identifiers.
import { ApplicationFailure, Context } from '@temporalio/activity';
import type Stripe from 'stripe';
import type { Db } from '../db/connection.ts';
import type { Logger } from '../src/logger.ts';
import { MeterSyncRetryable, syncMeter, type MeterSyncResult } from '../src/billing/stripe/meter-sync.ts';

export interface MeterSyncActivities {
  syncStripeMeter(): Promise<MeterSyncResult>;
}

/** Well under the workflow's heartbeat timeout, with room for a busy event loop. */
const HEARTBEAT_EVERY_MS = 1_000;
/** A Retry-After longer than this is not waited out in one go: the next attempt asks again. */
const MAX_RETRY_AFTER_MS = 5 * 60_000;

export function createMeterSyncActivities(deps: { db: Db; stripe: Stripe; eventName: string; log: Logger }): MeterSyncActivities {
  return {
    async syncStripeMeter() {
      const ctx = Context.current();
      const beat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
      try {
        const result = await syncMeter(deps, { progress: () => ctx.heartbeat() });
        if (result.formed || result.sent || result.expired || result.refused) deps.log.info(result, 'Stripe meter synced');
        return result;
      } catch (err) {
        if (!(err instanceof MeterSyncRetryable)) throw err;
        deps.log.warn({ err: err.message, retry_after_ms: err.retryAfterMs }, 'Stripe meter sync interrupted; retrying');
        // Stripe's Retry-After overrides the retry policy's next interval for this attempt.
        throw ApplicationFailure.create({
          type: 'StripeUnavailable',
          message: err.message,
          nextRetryDelay: err.retryAfterMs === null ? undefined : Math.min(Math.max(err.retryAfterMs, 1_000), MAX_RETRY_AFTER_MS),
        });
      } finally {
        clearInterval(beat);
      }
    },
  };
}
