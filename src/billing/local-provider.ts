// The embedded billing provider: plans, subscriptions and credit metering in PostgreSQL.
// Authorization is one statement (eligibility, hard cap, counter and ledger row together),
// so N concurrent paid requests debit exactly N x cost and never pass the cap.
import type { Db } from '../../db/connection.ts';
import { classifyFailure } from '../gateway/api-error.ts';
import { rollForward } from './periods.ts';
import type { Pool } from '../../db/pool.ts';
import { AdmissionGroups } from '../gateway/admissions.ts';
import { CaptureQueue } from './capture-queue.ts';
import {
  BillingUnavailableError,
  type Admission,
  type AdmissionRequest,
  type Denial,
  type BillingProvider,
  type BillingSnapshot,
  type Plan,
  type Subscription,
  type SubscriptionStatus,
  isServed,
} from './provider.ts';

const RELEASE_SQL = `
WITH released AS (
  UPDATE credit_ledger SET state = 'released', status_code = $2, settled_at = now()
  WHERE request_id = $1 AND state = 'reserved'
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

const DENIALS = new Set<string>(['limit_reached', 'no_subscription', 'no_billing_account', 'plan_unavailable', 'payment_required']);

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
  private readonly captures: CaptureQueue;
  private readonly admissions: AdmissionGroups;
  private readonly now: () => Date;

  /**
   * `db` serves the occasional statements; `pool` the per-request ones (see db/pool.ts).
   * Admissions share `opts.admissions` with the rate limiter when given (one group in flight).
   */
  constructor(
    private readonly db: Db,
    private readonly pool: Pool,
    opts: { admissions?: AdmissionGroups; now?: () => Date } = {},
  ) {
    this.captures = new CaptureQueue(pool);
    this.admissions = opts.admissions ?? new AdmissionGroups(pool);
    this.now = opts.now ?? (() => new Date());
  }

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

  /** One gateway_admit call, plus a retry after moving an ended billing period forward. */
  async admit(req: AdmissionRequest): Promise<Admission> {
    return this.guard(async () => {
      let subject: string | null = req.rate.subject;
      let hits = 0;
      for (let rolled = false; ; rolled = true) {
        const r = await this.admissions.admit({
          lane: req.accountId,
          subject,
          windowStart: subject ? req.rate.windowStart : null,
          limit: subject ? req.rate.limit : null,
          accountId: req.accountId,
          credits: req.credits,
          requestId: req.requestId,
          keyId: req.keyId,
          operation: req.operation,
        });
        if (subject) hits = r.hits;
        if (r.outcome === 'rate_limited') return { hits, rateLimited: true };
        if (r.outcome === 'reserved') return { hits, rateLimited: false, authorization: { ok: true, usedAfter: Number(r.used_after) } };
        if (r.outcome === 'period_ended' && !rolled) {
          // The period ended since the last request: move to the current one and try again,
          // without counting the request in its rate window a second time.
          await this.rollPeriod(req.accountId);
          subject = null;
          continue;
        }
        const denial = (DENIALS.has(r.outcome) ? r.outcome : 'no_subscription') as Denial;
        return { hits, rateLimited: false, authorization: { ok: false, denial } };
      }
    });
  }

  async capture(requestId: string, statusCode: number): Promise<void> {
    await this.guard(() => this.captures.capture(requestId, statusCode));
  }

  flush(): Promise<void> {
    return this.captures.flush();
  }

  async release(requestId: string, statusCode: number | null): Promise<void> {
    await this.guard(() => this.pool.query(RELEASE_SQL, [requestId, statusCode]));
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
    const sub = (await this.db('subscriptions')
      .where({ account_id: accountId })
      .first('*', this.db.raw('current_period_end::text AS end_text'))) as (SubscriptionRow & { end_text: string }) | undefined;
    const now = this.now();
    if (!sub || sub.current_period_end.getTime() > now.getTime()) return;
    // Guard on the stored value exactly (as text: a JS Date drops microseconds), so of two
    // concurrent rolls only one applies.
    const guard = this.db('subscriptions').where({ id: sub.id }).whereRaw('current_period_end = ?::timestamptz', [sub.end_text]);
    if (sub.cancel_at_period_end && isServed(sub.status)) {
      await guard.update({ status: 'canceled', canceled_at: sub.current_period_end, updated_at: now });
      return;
    }
    const { start, end } = rollForward({ start: sub.current_period_start, end: sub.current_period_end }, now);
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
