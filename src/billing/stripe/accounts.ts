// `accounts:create` under BILLING_PROVIDER=stripe: the customer and the subscription are made in
// (or, with --customer/--subscription, taken from) Stripe first, then the local account is written
// and the subscription mirrored from a fresh read, exactly as a webhook would mirror it. Stripe is
// the record; the local rows only point at it.
//
// Re-running is safe: creates carry Idempotency-Keys derived from one key per command (printed in
// the error when a step fails, to be passed back with --idempotency-key), so a retried command gets
// the same customer and subscription back from Stripe, and an account already holding that
// customer is reused rather than duplicated.
import { randomUUID } from 'node:crypto';
import Stripe from 'stripe';
import type { Db } from '../../../db/connection.ts';
import { OperationError } from '../../accounts/operations.ts';
import { lookupKeys, pricesByLookupKey } from './catalog.ts';
import { MIRROR_EXPAND, mirrorSubscription, viewOf } from './mirror.ts';
import { subscriptionTerms } from './plan-terms.ts';

export interface StripeAccountResult {
  account_id: number;
  customer_id: string;
  subscription_id: string;
  plan: string;
  status: string;
}

/** A new Stripe customer subscribed to the plan's synced prices, and its local account. */
export async function createStripeAccount(
  db: Db,
  stripe: Stripe,
  opts: { plan: string; name?: string; idempotencyKey?: string },
): Promise<StripeAccountResult> {
  const plan = await db('plans').where({ id: opts.plan }).first('id', 'overage_unit_price');
  if (!plan) throw new OperationError(`no plan ${JSON.stringify(opts.plan)}; see plans:list`);
  const keys = lookupKeys(plan.id);
  const found = await pricesByLookupKey(stripe, [keys.base, keys.overage]);
  const base = found.get(keys.base);
  const overage = found.get(keys.overage);
  const missing = [!base?.active && keys.base, plan.overage_unit_price !== null && !overage?.active && keys.overage].filter(Boolean);
  if (missing.length) {
    throw new OperationError(`plan ${plan.id} has no active Stripe price with lookup key ${missing.join(', ')}: run \`npm run admin -- billing:sync\` first`);
  }

  const key = opts.idempotencyKey ?? randomUUID();
  let sub: Stripe.Subscription;
  let readAt: Date;
  try {
    const customer = await stripe.customers.create(
      { ...(opts.name ? { name: opts.name } : {}), metadata: { tm_plan: plan.id } },
      { idempotencyKey: `${key}:customer` },
    );
    const items: Stripe.SubscriptionCreateParams.Item[] = [{ price: base!.id }];
    if (plan.overage_unit_price !== null) items.push({ price: overage!.id });
    const created = await stripe.subscriptions.create({ customer: customer.id, items }, { idempotencyKey: `${key}:subscription` });
    readAt = new Date();
    sub = await stripe.subscriptions.retrieve(created.id, { expand: MIRROR_EXPAND });
  } catch (err) {
    if (!(err instanceof Stripe.errors.StripeError)) throw err;
    throw new OperationError(`Stripe: ${err.message} (run the same command again with --idempotency-key ${key} to carry on without a second customer)`);
  }
  return attachLocally(db, sub, opts, readAt);
}

/** An existing Stripe customer and its subscription, attached to a new (or the already attached) account. */
export async function attachStripeAccount(
  db: Db,
  stripe: Stripe,
  opts: { customer: string; subscription: string; plan?: string; name?: string },
): Promise<StripeAccountResult> {
  let customer: Stripe.Customer | Stripe.DeletedCustomer;
  let sub: Stripe.Subscription;
  let readAt: Date;
  try {
    customer = await stripe.customers.retrieve(opts.customer);
    readAt = new Date();
    sub = await stripe.subscriptions.retrieve(opts.subscription, { expand: MIRROR_EXPAND });
  } catch (err) {
    if (!(err instanceof Stripe.errors.StripeError)) throw err;
    throw new OperationError(`Stripe: ${err.message}`);
  }
  if ('deleted' in customer && customer.deleted) throw new OperationError(`customer ${opts.customer} is deleted in Stripe`);
  const owner = viewOf(sub).customerId;
  if (owner !== customer.id) throw new OperationError(`subscription ${sub.id} belongs to customer ${owner}, not ${customer.id}`);
  const terms = subscriptionTerms(sub);
  // Attached anyway, it would be mirrored as plan_unavailable: better said now.
  if (!terms) throw new OperationError(`subscription ${sub.id}: its base price has no valid plan terms (tm_plan, included_credits, hard_cap); subscribe it to prices made by billing:sync`);
  if (opts.plan !== undefined && opts.plan !== terms.planId) throw new OperationError(`subscription ${sub.id} is on plan ${terms.planId}, not ${opts.plan}`);
  return attachLocally(db, sub, opts, readAt);
}

async function attachLocally(db: Db, sub: Stripe.Subscription, opts: { name?: string }, readAt: Date): Promise<StripeAccountResult> {
  const view = viewOf(sub);
  const [inserted] = await db('accounts')
    .insert({ name: opts.name ?? null, customer_id: view.customerId, has_payment_method: view.hasPaymentMethod ?? false })
    .onConflict('customer_id')
    .ignore()
    .returning('id');
  const accountId = Number(inserted?.id ?? (await db('accounts').where({ customer_id: view.customerId }).first('id')).id);
  // Cannot be unknown_customer: the account holding the customer was written just above.
  await mirrorSubscription(db, sub, readAt);
  return { account_id: accountId, customer_id: view.customerId, subscription_id: sub.id, plan: view.subscription.planId, status: view.subscription.status };
}
