// The local mirror of Stripe subscriptions that admission reads (admission never calls Stripe):
// a Stripe subscription, as last read from Stripe, becomes the account's `subscriptions` row and
// its plan's `plans` row, and the customer's payment defaults the account's has_payment_method:
// the same tables the local provider uses, so the gateway's one-statement admission
// (gateway_admit) serves both providers. Written only from a fresh read of the
// subscription (never from a webhook's payload), so events arriving out of order cannot leave an
// older state behind.
//
// One current subscription per customer (issue 25): every subscription read is kept in
// stripe_subscriptions, a read older than the one stored for the same subscription changes
// nothing, and the account's `subscriptions` row is the best of them: a served status (active,
// trialing) first, then the newest. A customer who canceled and subscribed again stays served
// whichever of the two was read last.
import type Stripe from 'stripe';
import type { Db } from '../../../db/connection.ts';
import { SUBSCRIPTION_STATUSES, type Plan, type Subscription, type SubscriptionStatus } from '../provider.ts';
import { basePrice, subscriptionTerms } from './plan-terms.ts';

/** A plan as mirrored: our billing type plus the limits the gateway reads with the key. */
export interface MirroredPlan extends Plan {
  /** null: the service default (SCRAPE_REQUESTS_PER_PLATFORM_PER_MINUTE). */
  scrapeRequestsPerPlatformPerMinute: number | null;
}

/** The subscription and its plan as our billing types see them; a misconfigured price has no priceId. */
export interface StripeSubscriptionView {
  customerId: string;
  subscription: Subscription;
  plan: MirroredPlan;
  /**
   * Whether Stripe can charge the customer for overage without asking (admission refuses usage
   * past the included credits without it); null when the customer was not expanded in the read,
   * and the mirrored value stands.
   */
  hasPaymentMethod: boolean | null;
}

/** What a subscription read for the mirror expands: the plan terms (price, product) and the customer's payment defaults. */
export const MIRROR_EXPAND = ['items.data.price.product', 'customer'];

const seconds = (s: number | null | undefined): Date | null => (typeof s === 'number' ? new Date(s * 1000) : null);

function status(s: string): SubscriptionStatus {
  // A status Stripe adds later is not served: refusing is the safe reading.
  return (SUBSCRIPTION_STATUSES as readonly string[]).includes(s) ? (s as SubscriptionStatus) : 'unpaid';
}

/**
 * A default payment method or source on the subscription, or on the customer for its invoices:
 * what Stripe charges an invoice with when nobody is asked. Anything else (a card attached but not
 * the default) leaves the invoice open, so it does not count.
 */
export function paymentMethodOf(sub: Stripe.Subscription): boolean | null {
  if (sub.default_payment_method || sub.default_source) return true;
  const customer = sub.customer;
  if (typeof customer === 'string') return null;
  if ('deleted' in customer) return false;
  return Boolean(customer.invoice_settings?.default_payment_method || customer.default_source);
}

export function viewOf(sub: Stripe.Subscription): StripeSubscriptionView {
  const price = basePrice(sub);
  const terms = subscriptionTerms(sub);
  const item = sub.items.data.find((i) => i.price.id === price?.id);
  // Since API 2025-03-31 the period lives on the items; older objects carry it on the subscription.
  const legacy = sub as unknown as { current_period_start?: number; current_period_end?: number };
  const periodStart = seconds(item?.current_period_start ?? legacy.current_period_start) ?? new Date(sub.created * 1000);
  const periodEnd = seconds(item?.current_period_end ?? legacy.current_period_end) ?? periodStart;
  const product = price && typeof price.product === 'object' ? (price.product as Stripe.Product) : null;
  const productId = price ? (typeof price.product === 'string' ? price.product : price.product.id) : null;
  return {
    customerId: typeof sub.customer === 'string' ? sub.customer : sub.customer.id,
    hasPaymentMethod: paymentMethodOf(sub),
    subscription: {
      id: sub.id,
      planId: terms?.planId ?? unpricedPlanId(price),
      status: status(sub.status),
      periodStart,
      periodEnd,
      cancelAtPeriodEnd: sub.cancel_at_period_end,
      canceledAt: seconds(sub.canceled_at),
      trialEnd: seconds(sub.trial_end),
    },
    // One product holds every plan (billing:sync), so the price's nickname is the plan's name.
    plan: terms
      ? {
          id: terms.planId,
          name: price!.nickname ?? product?.name ?? terms.planId,
          included: terms.included,
          hardCap: terms.hardCap,
          priceId: price!.id,
          productId,
          scrapeRequestsPerPlatformPerMinute: terms.scrapeRequestsPerPlatformPerMinute ?? null,
        }
      : { id: unpricedPlanId(price), name: 'misconfigured Stripe price', included: 0, hardCap: 0, priceId: null, productId, scrapeRequestsPerPlatformPerMinute: null },
  };
}

/** A plan row for a price without valid terms: price_id NULL makes admission answer plan_unavailable. */
function unpricedPlanId(price: Stripe.Price | null): string {
  return `unpriced:${price?.id ?? 'none'}`;
}

/** `stale`: a read older than the one already stored for the same subscription. */
export type MirrorResult = 'mirrored' | 'unknown_customer' | 'stale';

/** The columns of a subscription, in stripe_subscriptions and in the account's `subscriptions` row. */
const SUBSCRIPTION_COLUMNS = ['plan_id', 'status', 'current_period_start', 'current_period_end', 'cancel_at_period_end', 'canceled_at', 'trial_end'] as const;

/**
 * Writes the subscription, as read from Stripe by a request sent at `readAt`, into the mirror of
 * the account that owns its customer, and makes the account's current subscription the best it
 * has. A read older than the one stored for the same subscription is `stale` and changes nothing.
 */
export async function mirrorSubscription(db: Db, sub: Stripe.Subscription, readAt: Date): Promise<MirrorResult> {
  const view = viewOf(sub);
  return db.transaction(async (trx) => {
    // Locked: two reads of one customer's subscriptions (a webhook racing the reconcile run)
    // derive its current subscription one after the other.
    const account = await trx('accounts').where({ customer_id: view.customerId }).forUpdate().first('id');
    if (!account) return 'unknown_customer';
    const { plan, subscription: s } = view;
    const columns = {
      plan_id: s.planId,
      status: s.status,
      current_period_start: s.periodStart,
      current_period_end: s.periodEnd,
      cancel_at_period_end: s.cancelAtPeriodEnd,
      canceled_at: s.canceledAt,
      trial_end: s.trialEnd,
    };
    await trx('plans')
      .insert({
        id: plan.id,
        name: plan.name,
        included: plan.included,
        hard_cap: plan.hardCap,
        price_id: plan.priceId,
        product_id: plan.productId,
        scrape_requests_per_platform_per_minute: plan.scrapeRequestsPerPlatformPerMinute,
      })
      .onConflict('id')
      .merge(['name', 'included', 'hard_cap', 'price_id', 'product_id', 'scrape_requests_per_platform_per_minute']);
    const applied = await trx.raw(
      `? ON CONFLICT (id) DO UPDATE SET ${[...SUBSCRIPTION_COLUMNS, 'account_id', 'read_at'].map((c) => `${c} = EXCLUDED.${c}`).join(', ')}
       WHERE stripe_subscriptions.read_at <= EXCLUDED.read_at RETURNING id`,
      [trx('stripe_subscriptions').insert({ id: s.id, account_id: account.id, ...columns, stripe_created_at: new Date(sub.created * 1000), read_at: readAt })],
    );
    if ((applied as { rows: unknown[] }).rows.length === 0) return 'stale';
    if (view.hasPaymentMethod !== null) await trx('accounts').where({ id: account.id }).update({ has_payment_method: view.hasPaymentMethod });
    const current = await trx('stripe_subscriptions')
      .where({ account_id: account.id })
      .orderByRaw("(status IN ('active', 'trialing')) DESC, stripe_created_at DESC, id DESC")
      .first('id', ...SUBSCRIPTION_COLUMNS);
    const { id, ...values } = current as Record<string, unknown>;
    await trx('subscriptions')
      .insert({ id, account_id: account.id, ...values, updated_at: trx.fn.now() })
      .onConflict('account_id')
      .merge(['id', ...SUBSCRIPTION_COLUMNS, 'updated_at']);
    return 'mirrored';
  });
}
