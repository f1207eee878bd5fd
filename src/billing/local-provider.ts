// The embedded billing provider: plans, subscriptions and credit metering in PostgreSQL.
// Authorization is one statement (eligibility, hard cap, counter and ledger row together),
// so N concurrent paid requests debit exactly N x cost and never pass the cap.
import type { Db } from '../../db/connection.ts';
import { classifyFailure } from '../gateway/api-error.ts';
import { periodContaining } from './periods.ts';
import {
  BillingUnavailableError,
  type Authorization,
  type BillingProvider,
  type BillingSnapshot,
  type ChargeRequest,
  type Plan,
  type Subscription,
  type SubscriptionStatus,
  isServed,
} from './provider.ts';

const AUTHORIZE_SQL = `
WITH acct AS (
  SELECT a.id, a.customer_id, s.status, s.current_period_start AS ps, s.current_period_end AS pe,
         p.hard_cap, p.price_id
  FROM accounts a
  LEFT JOIN subscriptions s ON s.account_id = a.id
  LEFT JOIN plans p ON p.id = s.plan_id
  WHERE a.id = :accountId
), eligible AS (
  SELECT * FROM acct
  WHERE customer_id IS NOT NULL AND status IN ('active', 'trialing') AND price_id IS NOT NULL
    AND pe > now() AND (hard_cap IS NULL OR :credits <= hard_cap)
), counter AS (
  INSERT INTO usage_counters AS u (account_id, period_start, used)
  SELECT id, ps, :credits FROM eligible
  ON CONFLICT (account_id, period_start) DO UPDATE SET used = u.used + EXCLUDED.used
  WHERE (SELECT hard_cap FROM eligible) IS NULL OR u.used + EXCLUDED.used <= (SELECT hard_cap FROM eligible)
  RETURNING u.used, u.period_start
), ledger AS (
  INSERT INTO credit_ledger (request_id, account_id, key_id, period_start, operation, credits, state)
  SELECT :requestId, :accountId, :keyId, period_start, :operation, :credits, 'reserved' FROM counter
  RETURNING request_id
)
SELECT acct.customer_id IS NOT NULL AS has_billing, acct.status, acct.price_id IS NOT NULL AS priced,
       acct.pe > now() AS in_period, (SELECT used FROM counter) AS used_after,
       (SELECT count(*) FROM ledger) AS ledgered
FROM acct`;

const RELEASE_SQL = `
WITH released AS (
  UPDATE credit_ledger SET state = 'released', status_code = :statusCode, settled_at = now()
  WHERE request_id = :requestId AND state = 'reserved'
  RETURNING account_id, period_start, credits
)
UPDATE usage_counters u SET used = u.used - r.credits
FROM released r WHERE u.account_id = r.account_id AND u.period_start = r.period_start`;

const RELEASE_ORPHANS_SQL = `
WITH released AS (
  UPDATE credit_ledger SET state = 'released', settled_at = now()
  WHERE request_id IN (
    SELECT request_id FROM credit_ledger
    WHERE state = 'reserved' AND created_at < now() - make_interval(secs => :maxAgeSeconds)
    LIMIT 1000 FOR UPDATE SKIP LOCKED)
  RETURNING account_id, period_start, credits
), totals AS (
  SELECT account_id, period_start, sum(credits) AS credits, count(*) AS n FROM released GROUP BY 1, 2
), applied AS (
  UPDATE usage_counters u SET used = u.used - t.credits
  FROM totals t WHERE u.account_id = t.account_id AND u.period_start = t.period_start
  RETURNING 1
)
SELECT coalesce(sum(n), 0) AS released FROM totals`;

interface SubscriptionRow {
  id: string;
  plan_id: string;
  status: SubscriptionStatus;
  current_period_start: Date;
  current_period_end: Date;
  cancel_at_period_end: boolean;
  canceled_at: Date | null;
  trial_end: Date | null;
}

export class LocalBillingProvider implements BillingProvider {
  constructor(
    private readonly db: Db,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async snapshot(accountId: number): Promise<BillingSnapshot> {
    return this.guard(async () => {
      await this.rollPeriod(accountId);
      const row = await this.db('accounts as a')
        .leftJoin('subscriptions as s', 's.account_id', 'a.id')
        .leftJoin('plans as p', 'p.id', 's.plan_id')
        .leftJoin('usage_counters as u', (j) => {
          j.on('u.account_id', '=', 'a.id').andOn('u.period_start', '=', 's.current_period_start');
        })
        .where('a.id', accountId)
        .first(
          'a.customer_id',
          's.id as sub_id',
          's.plan_id',
          's.status',
          's.current_period_start',
          's.current_period_end',
          's.cancel_at_period_end',
          's.canceled_at',
          's.trial_end',
          'p.name as plan_name',
          'p.included',
          'p.hard_cap',
          'p.price_id',
          'p.product_id',
          'u.used',
        );
      if (!row) throw new Error(`account ${accountId} not found`);
      const subscription: Subscription | null = row.sub_id
        ? {
            id: row.sub_id,
            planId: row.plan_id,
            status: row.status,
            periodStart: row.current_period_start,
            periodEnd: row.current_period_end,
            cancelAtPeriodEnd: row.cancel_at_period_end,
            canceledAt: row.canceled_at,
            trialEnd: row.trial_end,
          }
        : null;
      const plan: Plan | null = row.sub_id
        ? {
            id: row.plan_id,
            name: row.plan_name,
            included: row.included,
            hardCap: row.hard_cap,
            priceId: row.price_id,
            productId: row.product_id,
          }
        : null;
      return { accountId, customerId: row.customer_id, subscription, plan, used: Number(row.used ?? 0) };
    });
  }

  async authorize(req: ChargeRequest): Promise<Authorization> {
    return this.guard(async () => {
      for (let attempt = 0; ; attempt++) {
        const { rows } = await this.db.raw(AUTHORIZE_SQL, { ...req });
        const r = rows[0] as
          | { has_billing: boolean; status: SubscriptionStatus | null; priced: boolean; in_period: boolean | null; used_after: number | null }
          | undefined;
        if (!r || !r.has_billing) return { ok: false, denial: 'no_billing_account' };
        if (!r.status || !isServed(r.status)) return { ok: false, denial: 'no_subscription' };
        if (!r.priced) return { ok: false, denial: 'plan_unavailable' };
        if (r.used_after !== null) return { ok: true, usedAfter: Number(r.used_after) };
        if (r.in_period === false && attempt === 0) {
          // The period ended since the last request: move to the current one and try again.
          await this.rollPeriod(req.accountId);
          continue;
        }
        return r.in_period === false ? { ok: false, denial: 'no_subscription' } : { ok: false, denial: 'limit_reached' };
      }
    });
  }

  async capture(requestId: string, statusCode: number): Promise<void> {
    await this.guard(() =>
      this.db('credit_ledger')
        .where({ request_id: requestId, state: 'reserved' })
        .update({ state: 'charged', status_code: statusCode, settled_at: this.db.fn.now() }),
    );
  }

  async release(requestId: string, statusCode: number | null): Promise<void> {
    await this.guard(() => this.db.raw(RELEASE_SQL, { requestId, statusCode }));
  }

  async releaseOrphans(maxAgeMs: number): Promise<number> {
    return this.guard(async () => {
      let total = 0;
      for (;;) {
        const { rows } = await this.db.raw(RELEASE_ORPHANS_SQL, { maxAgeSeconds: maxAgeMs / 1000 });
        const n = Number(rows[0]?.released ?? 0);
        total += n;
        if (n < 1000) return total;
      }
    });
  }

  /** Advances an ended period (or cancels at period end). Guarded on the old end so concurrent rolls agree. */
  private async rollPeriod(accountId: number): Promise<void> {
    const sub = (await this.db('subscriptions').where({ account_id: accountId }).first()) as SubscriptionRow | undefined;
    const now = this.now();
    if (!sub || sub.current_period_end.getTime() > now.getTime()) return;
    const guard = this.db('subscriptions').where({ id: sub.id, current_period_end: sub.current_period_end });
    if (sub.cancel_at_period_end && isServed(sub.status)) {
      await guard.update({ status: 'canceled', canceled_at: sub.current_period_end, updated_at: now });
      return;
    }
    const { start, end } = periodContaining(sub.current_period_start, now);
    await guard.update({ current_period_start: start, current_period_end: end, updated_at: now });
  }

  private async guard<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      // Only an unreachable or timed-out store is "unavailable"; a bug stays a bug (500).
      if (classifyFailure(err) !== 'internal') throw new BillingUnavailableError(err);
      throw err;
    }
  }
}
