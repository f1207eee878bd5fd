// Operator actions on accounts, keys, subscriptions and usage: used by the admin CLI, by the
// demo account on first start, and by tests to arrange billing states.
import type { Db } from '../../db/connection.ts';
import { addMonths } from '../billing/periods.ts';
import { SUBSCRIPTION_STATUSES, type SubscriptionStatus } from '../billing/provider.ts';
import { API_NAMES, type ApiName } from '../gateway/catalog.ts';
import { generateApiKey, generateKeyId, generateOpaqueId } from '../gateway/keys.ts';

export class OperationError extends Error {}

export interface PlanView {
  id: string;
  name: string;
  included: number;
  hard_cap: number | 'unlimited';
  overage_unit_price: string | null;
  /** USD per month; null: not sold through the billing provider (billing:sync leaves it out). */
  monthly_price: string | null;
  price_id: string | null;
  product_id: string | null;
}

export async function listPlans(db: Db): Promise<PlanView[]> {
  const rows = await db('plans').orderBy('included');
  return rows.map((p) => ({
    id: p.id,
    name: p.name,
    included: p.included,
    hard_cap: p.hard_cap ?? 'unlimited',
    overage_unit_price: p.overage_unit_price,
    monthly_price: p.monthly_price ?? null,
    price_id: p.price_id,
    product_id: p.product_id,
  }));
}

function assertStatus(status: string): asserts status is SubscriptionStatus {
  if (!(SUBSCRIPTION_STATUSES as readonly string[]).includes(status)) {
    throw new OperationError(`status must be one of ${SUBSCRIPTION_STATUSES.join(', ')}`);
  }
}

export async function createAccount(
  db: Db,
  opts: { plan: string; status?: string; billing?: boolean; paymentMethod?: boolean; name?: string; now?: Date },
): Promise<{ account_id: number }> {
  const status = opts.status ?? 'active';
  assertStatus(status);
  const now = opts.now ?? new Date();
  return db.transaction(async (trx) => {
    const plan = await trx('plans').where({ id: opts.plan }).first();
    if (!plan) throw new OperationError(`no plan ${JSON.stringify(opts.plan)}; see plans:list`);
    const [account] = await trx('accounts')
      .insert({
        name: opts.name ?? null,
        customer_id: opts.billing === false ? null : generateOpaqueId('cus'),
        has_payment_method: opts.paymentMethod ?? true,
      })
      .returning('id');
    await trx('subscriptions').insert({
      id: generateOpaqueId('sub'),
      account_id: account.id,
      plan_id: plan.id,
      status,
      current_period_start: now,
      current_period_end: addMonths(now, 1),
      trial_end: status === 'trialing' ? new Date(now.getTime() + 14 * 86_400_000) : null,
      canceled_at: status === 'canceled' ? now : null,
    });
    return { account_id: Number(account.id) };
  });
}

export async function createKey(
  db: Db,
  opts: { accountId: number; apis?: readonly string[]; rateLimitPerMinute?: number; streamConnectionLimit?: number; expiresAt?: Date },
): Promise<{ key_id: string; key: string }> {
  const apis = opts.apis ?? API_NAMES;
  const unknown = apis.filter((a) => !(API_NAMES as readonly string[]).includes(a));
  if (unknown.length) throw new OperationError(`unknown API ${unknown.join(', ')}; one of ${API_NAMES.join(', ')}`);
  if (opts.rateLimitPerMinute !== undefined && (!Number.isInteger(opts.rateLimitPerMinute) || opts.rateLimitPerMinute < 1)) {
    throw new OperationError('rate limit must be a positive integer');
  }
  if (opts.streamConnectionLimit !== undefined && (!Number.isInteger(opts.streamConnectionLimit) || opts.streamConnectionLimit < 1)) {
    throw new OperationError('stream connection limit must be a positive integer');
  }
  const account = await db('accounts').where({ id: opts.accountId }).first('id');
  if (!account) throw new OperationError(`no account ${opts.accountId}`);
  const { key, hash, prefix } = generateApiKey();
  const keyId = generateKeyId();
  await db('api_keys').insert({
    id: keyId,
    account_id: opts.accountId,
    hash,
    prefix,
    apis: [...new Set(apis)] as ApiName[],
    rate_limit_per_minute: opts.rateLimitPerMinute ?? null,
    stream_connection_limit: opts.streamConnectionLimit ?? null,
    expires_at: opts.expiresAt ?? null,
  });
  return { key_id: keyId, key };
}

export async function revokeKey(db: Db, keyId: string): Promise<{ key_id: string; revoked_at: string }> {
  const [row] = await db('api_keys').where({ id: keyId }).update({ revoked_at: db.raw('coalesce(revoked_at, now())') }).returning('revoked_at');
  if (!row) throw new OperationError(`no key ${keyId}`);
  return { key_id: keyId, revoked_at: (row.revoked_at as Date).toISOString() };
}

export async function setSubscriptionStatus(db: Db, accountId: number, status: string): Promise<{ account_id: number; status: string }> {
  assertStatus(status);
  const n = await db('subscriptions')
    .where({ account_id: accountId })
    .update({
      status,
      canceled_at: status === 'canceled' ? db.raw('coalesce(canceled_at, now())') : null,
      updated_at: db.fn.now(),
    });
  if (n === 0) throw new OperationError(`account ${accountId} has no subscription`);
  return { account_id: accountId, status };
}

/** Sets the credits used in the subscription's current period. */
export async function setUsage(db: Db, accountId: number, used: number): Promise<{ account_id: number; used: number }> {
  if (!Number.isSafeInteger(used) || used < 0) throw new OperationError('used must be a non-negative integer');
  const sub = await db('subscriptions').where({ account_id: accountId }).first('current_period_start');
  if (!sub) throw new OperationError(`account ${accountId} has no subscription`);
  await db('usage_counters')
    .insert({ account_id: accountId, period_start: sub.current_period_start, used })
    .onConflict(['account_id', 'period_start'])
    .merge({ used });
  return { account_id: accountId, used };
}
