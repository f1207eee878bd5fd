// The local mirror of Stripe subscriptions that admission reads (admission never calls Stripe):
// a Stripe subscription, as last read from Stripe, becomes the account's `subscriptions` row and
// its plan's `plans` row, and the customer's payment defaults the account's has_payment_method:
// the same tables the local provider uses, so the gateway's one-statement admission
// (gateway_admit) serves both providers. Written only from a fresh read of the
// subscription (never from a webhook's payload), so events arriving out of order cannot leave an
// older state behind.
import type Stripe from 'stripe';
import type { Db } from '../../../db/connection.ts';
import { SUBSCRIPTION_STATUSES, type Plan, type Subscription, type SubscriptionStatus } from '../provider.ts';
import { basePrice, subscriptionTerms } from './plan-terms.ts';

/** The subscription and its plan as our billing types see them; a misconfigured price has no priceId. */
export interface StripeSubscriptionView {
  customerId: string;
  subscription: Subscription;
  plan: Plan;
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
      ? { id: terms.planId, name: price!.nickname ?? product?.name ?? terms.planId, included: terms.included, hardCap: terms.hardCap, priceId: price!.id, productId }
      : { id: unpricedPlanId(price), name: 'misconfigured Stripe price', included: 0, hardCap: 0, priceId: null, productId },
  };
}

/** A plan row for a price without valid terms: price_id NULL makes admission answer plan_unavailable. */
function unpricedPlanId(price: Stripe.Price | null): string {
  return `unpriced:${price?.id ?? 'none'}`;
}

export type MirrorResult = 'mirrored' | 'unknown_customer';

/** Writes the subscription (as just read from Stripe) into the mirror of the account that owns its customer. */
export async function mirrorSubscription(db: Db, sub: Stripe.Subscription): Promise<MirrorResult> {
  const view = viewOf(sub);
  return db.transaction(async (trx) => {
    const account = await trx('accounts').where({ customer_id: view.customerId }).first('id');
    if (!account) return 'unknown_customer';
    const { plan, subscription: s } = view;
    if (view.hasPaymentMethod !== null) await trx('accounts').where({ id: account.id }).update({ has_payment_method: view.hasPaymentMethod });
    await trx('plans')
      .insert({ id: plan.id, name: plan.name, included: plan.included, hard_cap: plan.hardCap, price_id: plan.priceId, product_id: plan.productId })
      .onConflict('id')
      .merge(['name', 'included', 'hard_cap', 'price_id', 'product_id']);
    await trx('subscriptions')
      .insert({
        id: s.id,
        account_id: account.id,
        plan_id: s.planId,
        status: s.status,
        current_period_start: s.periodStart,
        current_period_end: s.periodEnd,
        cancel_at_period_end: s.cancelAtPeriodEnd,
        canceled_at: s.canceledAt,
        trial_end: s.trialEnd,
        updated_at: trx.fn.now(),
      })
      .onConflict('account_id')
      .merge(['id', 'plan_id', 'status', 'current_period_start', 'current_period_end', 'cancel_at_period_end', 'canceled_at', 'trial_end', 'updated_at']);
    return 'mirrored';
  });
}
