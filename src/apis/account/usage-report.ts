// The usage report of spec 2.7, computed from a billing snapshot. Pure: every number here is
// covered by unit tests at each usage_status boundary.
import { isServed, type BillingSnapshot } from '../../billing/provider.ts';
import type { UsageReport } from './schema.ts';

const DAY_MS = 86_400_000;
/** Pace is measured over at least an hour so a request in a period's first seconds does not project millions. */
const MIN_PACE_WINDOW_MS = 3_600_000;

function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

export function usageStatus(used: number, included: number, hardCap: number | null): UsageReport['usage_status'] {
  if (hardCap !== null && used >= hardCap) return 'at_hard_cap';
  if (used > included) return 'over_included';
  if (used >= 0.8 * included) return 'approaching_limit';
  return 'ok';
}

/**
 * Whether the snapshot describes an account that paid requests are served for: an active or
 * trialing subscription on a billing account. Without a billing account every paid request
 * answers 402 no_billing_account, so the report must not claim a served subscription either.
 */
export function isServedSnapshot(s: BillingSnapshot): boolean {
  return s.subscription !== null && s.plan !== null && s.customerId !== null && isServed(s.subscription.status);
}

export function buildUsageReport(s: BillingSnapshot, now: Date): UsageReport {
  const sub = s.subscription;
  const served = isServedSnapshot(s);
  const nowMs = now.getTime();
  const period = sub
    ? (() => {
        const start = sub.periodStart.getTime();
        const end = sub.periodEnd.getTime();
        return {
          start: sub.periodStart.toISOString(),
          end: sub.periodEnd.toISOString(),
          days_remaining: Math.max(0, Math.ceil((end - nowMs) / DAY_MS)),
          elapsed_fraction: end > start ? round(Math.min(1, Math.max(0, (nowMs - start) / (end - start))), 6) : 1,
        };
      })()
    : { start: null, end: null, days_remaining: 0, elapsed_fraction: 0 };

  const base = {
    customer_id: s.customerId,
    plan: null as string | null,
    plan_ids: {
      subscription_id: sub?.id ?? null,
      price_id: s.plan?.priceId ?? null,
      product_id: s.plan?.productId ?? null,
    },
    status: 'none' as UsageReport['status'],
    usage_status: 'none' as UsageReport['usage_status'],
    cancel_at_period_end: sub?.cancelAtPeriodEnd ?? false,
    canceled_at: sub?.canceledAt?.toISOString() ?? null,
    trial_end: sub?.trialEnd?.toISOString() ?? null,
    unit: 'credits' as const,
    as_of: now.toISOString(),
    period,
  };

  if (!served || !sub || !s.plan) {
    return {
      ...base,
      plan: null,
      status: 'none',
      usage_status: 'none',
      credits: { included: 0, used: 0, remaining: 0, overage: 0, percent_used: 0, projected_used: 0, hard_cap: 0, in_overage: false },
    };
  }

  const { included, hardCap } = s.plan;
  const used = s.used;
  const start = sub.periodStart.getTime();
  const end = sub.periodEnd.getTime();
  const paceWindow = Math.max(nowMs - start, MIN_PACE_WINDOW_MS);
  let projected = Math.round(used * ((end - start) / paceWindow));
  // An operator may set any safe integer as used: keep the extrapolation an exact integer too.
  projected = Math.max(used, Math.min(projected, hardCap ?? Number.MAX_SAFE_INTEGER));
  return {
    ...base,
    plan: s.plan.id,
    status: sub.status as 'active' | 'trialing',
    usage_status: usageStatus(used, included, hardCap),
    credits: {
      included,
      used,
      remaining: Math.max(0, Math.min(included, hardCap ?? Number.POSITIVE_INFINITY) - used),
      overage: Math.max(0, used - included),
      percent_used: included > 0 ? round((used / included) * 100, 2) : used > 0 ? 100 : 0,
      projected_used: projected,
      hard_cap: hardCap ?? 'unlimited',
      in_overage: used > included,
    },
  };
}
