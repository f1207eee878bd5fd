// The Stripe billing activities: the reconcile pass over every subscription (workflows/
// stripe-reconcile.ts). Stripe's list is paged by cursor; the cursor goes into each heartbeat, so
// a retried attempt resumes after the last page it finished.
import { Context } from '@temporalio/activity';
import type Stripe from 'stripe';
import type { Db } from '../db/connection.ts';
import type { Logger } from '../src/logger.ts';
import { mirrorSubscription } from '../src/billing/stripe/mirror.ts';

export interface StripeBillingActivities {
  reconcileStripeSubscriptions(): Promise<{ read: number; mirrored: number; foreign: number; stale: number }>;
}

const PAGE = 100;

export function createStripeBillingActivities(deps: { db: Db; stripe: Stripe; log: Logger }): StripeBillingActivities {
  return {
    async reconcileStripeSubscriptions() {
      const ctx = Context.current();
      const resumed = ctx.info.heartbeatDetails as { after?: string; read: number; mirrored: number; foreign: number; stale?: number } | undefined;
      const totals = { read: resumed?.read ?? 0, mirrored: resumed?.mirrored ?? 0, foreign: resumed?.foreign ?? 0, stale: resumed?.stale ?? 0 };
      let after = resumed?.after;
      for (;;) {
        // `all` includes canceled ones: an account whose subscription ended must see it ended.
        // Four levels of expansion at most: the price, not its product (terms are on the price);
        // the customer for its payment defaults.
        // Sent now: a webhook's read of the same subscription sent later wins over this page's.
        const readAt = new Date();
        const page = await deps.stripe.subscriptions.list({
          status: 'all',
          limit: PAGE,
          expand: ['data.items.data.price', 'data.customer'],
          ...(after ? { starting_after: after } : {}),
        });
        for (const sub of page.data) {
          totals.read++;
          const result = await mirrorSubscription(deps.db, sub, readAt);
          if (result === 'mirrored') totals.mirrored++;
          else if (result === 'stale') totals.stale++;
          else totals.foreign++;
        }
        after = page.data.at(-1)?.id ?? after;
        ctx.heartbeat({ after, ...totals });
        if (!page.has_more || page.data.length === 0) break;
      }
      deps.log.info(totals, 'Stripe subscriptions reconciled');
      return totals;
    },
  };
}
