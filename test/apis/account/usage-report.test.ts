// Unit tests of the usage report (spec 2.7, 3.2; design brief "Hard cap"): every number of
// buildUsageReport at each usage_status boundary, plus invariants over random inputs.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addMonths } from '../../../src/billing/periods.ts';
import { SUBSCRIPTION_STATUSES, type BillingSnapshot, type SubscriptionStatus } from '../../../src/billing/provider.ts';
import { usageReportSchema, type UsageReport } from '../../../src/apis/account/schema.ts';
import { buildUsageReport, usageStatus } from '../../../src/apis/account/usage-report.ts';

const DAY = 86_400_000;
const HOUR = 3_600_000;
const START = new Date('2026-01-01T00:00:00.000Z');
const END = new Date('2026-01-31T00:00:00.000Z'); // a 30-day period keeps the arithmetic readable

interface SnapOpts {
  status?: SubscriptionStatus;
  included?: number;
  hardCap?: number | null;
  used?: number;
  start?: Date;
  end?: Date;
  customerId?: string | null;
  priceId?: string | null;
  cancelAtPeriodEnd?: boolean;
  canceledAt?: Date | null;
  trialEnd?: Date | null;
  noSubscription?: boolean;
}

function snap(o: SnapOpts = {}): BillingSnapshot {
  const hasSub = !o.noSubscription;
  return {
    accountId: 1,
    customerId: o.customerId === undefined ? 'cus_test' : o.customerId,
    subscription: hasSub
      ? {
          id: 'sub_test',
          planId: 'plan_x',
          status: o.status ?? 'active',
          periodStart: o.start ?? START,
          periodEnd: o.end ?? END,
          cancelAtPeriodEnd: o.cancelAtPeriodEnd ?? false,
          canceledAt: o.canceledAt ?? null,
          trialEnd: o.trialEnd ?? null,
        }
      : null,
    plan: hasSub
      ? {
          id: 'plan_x',
          name: 'Plan X',
          included: o.included ?? 1000,
          hardCap: o.hardCap === undefined ? 1500 : o.hardCap,
          priceId: o.priceId === undefined ? 'price_x' : o.priceId,
          productId: 'prod_x',
        }
      : null,
    used: o.used ?? 0,
  };
}

/** Builds the report and checks it against the published schema before anything else. */
function report(o: SnapOpts = {}, now: Date = new Date(START.getTime() + 10 * DAY)): UsageReport {
  const r = buildUsageReport(snap(o), now);
  const parsed = usageReportSchema.safeParse(r);
  if (!parsed.success) throw new Error(`report does not match the schema: ${parsed.error.message}\n${JSON.stringify(r)}`);
  return r;
}

const NON_SERVED = SUBSCRIPTION_STATUSES.filter((s) => s !== 'active' && s !== 'trialing');

describe('usage_status boundaries (included 1000, hard cap 1500)', () => {
  it.each([
    [0, 'ok'],
    [799, 'ok'], // just under 80%
    [800, 'approaching_limit'], // exactly 80%
    [999, 'approaching_limit'],
    [1000, 'approaching_limit'], // == included: not past it yet
    [1001, 'over_included'],
    [1499, 'over_included'],
    [1500, 'at_hard_cap'], // == hard cap
    [1600, 'at_hard_cap'], // past the cap (set by an operator): still at it
  ] as const)('used %i -> %s', (used, expected) => {
    expect(usageStatus(used, 1000, 1500)).toBe(expected);
    expect(report({ used }).usage_status).toBe(expected);
  });

  it('80% is exact for included values that are not multiples of 5', () => {
    // 80% of 7 is 5.6: 5 is under it, 6 is at or above it.
    expect(usageStatus(5, 7, null)).toBe('ok');
    expect(usageStatus(6, 7, null)).toBe('approaching_limit');
  });

  it('an unlimited plan is never at_hard_cap, however much is used', () => {
    for (const used of [0, 1000, 1001, 1_000_000, Number.MAX_SAFE_INTEGER]) {
      const r = report({ used, hardCap: null });
      expect(r.usage_status).not.toBe('at_hard_cap');
      expect(r.credits.hard_cap).toBe('unlimited');
    }
    expect(report({ used: 5_000_000, hardCap: null }).usage_status).toBe('over_included');
  });

  it('a plan whose cap equals included goes straight from approaching_limit to at_hard_cap', () => {
    expect(report({ used: 999, included: 1000, hardCap: 1000 }).usage_status).toBe('approaching_limit');
    expect(report({ used: 1000, included: 1000, hardCap: 1000 }).usage_status).toBe('at_hard_cap');
  });
});

describe('credits', () => {
  it('a fresh period: everything included is remaining', () => {
    const r = report({ used: 0 });
    expect(r.credits).toEqual({
      included: 1000,
      used: 0,
      remaining: 1000,
      overage: 0,
      percent_used: 0,
      projected_used: 0,
      hard_cap: 1500,
      in_overage: false,
    });
    expect(r.unit).toBe('credits');
  });

  it('remaining counts down to 0 at included and never goes negative in overage', () => {
    expect(report({ used: 250 }).credits.remaining).toBe(750);
    expect(report({ used: 1000 }).credits.remaining).toBe(0);
    const over = report({ used: 1200 }).credits;
    expect(over.remaining).toBe(0);
    expect(over.overage).toBe(200);
    expect(over.in_overage).toBe(true);
  });

  it('used == included is not overage yet', () => {
    const c = report({ used: 1000 }).credits;
    expect(c.overage).toBe(0);
    expect(c.in_overage).toBe(false);
    expect(c.percent_used).toBe(100);
  });

  it('remaining is clamped to the hard cap when the cap is below included', () => {
    // included 1000 but a ceiling of 600: only 600 are ever spendable.
    const fresh = report({ included: 1000, hardCap: 600, used: 0 });
    expect(fresh.credits.remaining).toBe(600);
    const mid = report({ included: 1000, hardCap: 600, used: 450 });
    expect(mid.credits.remaining).toBe(150);
    const capped = report({ included: 1000, hardCap: 600, used: 600 });
    expect(capped.credits.remaining).toBe(0);
    expect(capped.usage_status).toBe('at_hard_cap');
    expect(capped.credits.overage).toBe(0);
    expect(capped.credits.in_overage).toBe(false);
  });

  it('remaining on an unlimited plan is included - used', () => {
    expect(report({ hardCap: null, used: 10 }).credits.remaining).toBe(990);
    expect(report({ hardCap: null, used: 10_000 }).credits.remaining).toBe(0);
  });

  it('percent_used is rounded to two decimals', () => {
    expect(report({ included: 3, hardCap: null, used: 1 }).credits.percent_used).toBe(33.33);
    expect(report({ included: 3, hardCap: null, used: 2 }).credits.percent_used).toBe(66.67);
    expect(report({ included: 1000, used: 1250 }).credits.percent_used).toBe(125);
  });

  it('a plan with nothing included reports 0% when unused and 100% once anything is used', () => {
    expect(report({ included: 0, hardCap: null, used: 0 }).credits.percent_used).toBe(0);
    const r = report({ included: 0, hardCap: null, used: 5 });
    expect(r.credits.percent_used).toBe(100);
    expect(r.credits.overage).toBe(5);
    expect(r.usage_status).toBe('over_included');
  });
});

describe('projected_used', () => {
  it('extrapolates the current pace to the period end', () => {
    // 100 used after 10 of 30 days: 300 at this pace.
    expect(report({ used: 100, hardCap: null }, new Date(START.getTime() + 10 * DAY)).credits.projected_used).toBe(300);
    // 100 used after 15 of 30 days: 200.
    expect(report({ used: 100, hardCap: null }, new Date(START.getTime() + 15 * DAY)).credits.projected_used).toBe(200);
  });

  it('is capped at the hard cap', () => {
    const r = report({ used: 900, included: 1000, hardCap: 1500 }, new Date(START.getTime() + 10 * DAY));
    expect(r.credits.projected_used).toBe(1500);
  });

  it('is not capped on an unlimited plan', () => {
    const r = report({ used: 900, hardCap: null }, new Date(START.getTime() + 10 * DAY));
    expect(r.credits.projected_used).toBe(2700);
  });

  it('is never below used (after the period end, or used past the cap)', () => {
    expect(report({ used: 700, hardCap: null }, new Date(END.getTime() + DAY)).credits.projected_used).toBe(700);
    expect(report({ used: 1600, hardCap: 1500 }).credits.projected_used).toBe(1600);
    expect(report({ used: 0 }).credits.projected_used).toBe(0);
  });

  it('measures pace over at least one hour so the first seconds of a period do not explode', () => {
    // 10 used one minute into a 30-day (720-hour) period: paced over an hour, 7200; over a
    // minute it would have been 432000.
    const r = report({ used: 10, hardCap: null }, new Date(START.getTime() + 60_000));
    expect(r.credits.projected_used).toBe(7200);
    // Before the period start (clock skew) the same one-hour window applies.
    expect(report({ used: 10, hardCap: null }, new Date(START.getTime() - 60_000)).credits.projected_used).toBe(7200);
    // Two hours in, the real elapsed time is used: 10 * 360.
    expect(report({ used: 10, hardCap: null }, new Date(START.getTime() + 2 * HOUR)).credits.projected_used).toBe(3600);
  });
});

describe('period', () => {
  it('days_remaining rounds up and elapsed_fraction is the share of the period gone', () => {
    const r = report({}, new Date(START.getTime() + 10 * DAY));
    expect(r.period).toEqual({ start: START.toISOString(), end: END.toISOString(), days_remaining: 20, elapsed_fraction: 0.333333 });
    // One millisecond later a part day still counts as a day.
    expect(report({}, new Date(START.getTime() + 10 * DAY + 1)).period.days_remaining).toBe(20);
    expect(report({}, new Date(START.getTime() + 10 * DAY + 12 * HOUR)).period.days_remaining).toBe(20);
    expect(report({}, new Date(START.getTime() + 11 * DAY)).period.days_remaining).toBe(19);
  });

  it('is clamped at both ends', () => {
    const atStart = report({}, START).period;
    expect(atStart.elapsed_fraction).toBe(0);
    expect(atStart.days_remaining).toBe(30);
    const before = report({}, new Date(START.getTime() - DAY)).period;
    expect(before.elapsed_fraction).toBe(0);
    const atEnd = report({}, END).period;
    expect(atEnd).toMatchObject({ days_remaining: 0, elapsed_fraction: 1 });
    const after = report({}, new Date(END.getTime() + 5 * DAY)).period;
    expect(after).toMatchObject({ days_remaining: 0, elapsed_fraction: 1 });
  });

  it('a real monthly period from the billing arithmetic', () => {
    const start = new Date('2026-02-10T12:00:00.000Z');
    const end = addMonths(start, 1); // 28 days in February
    const r = report({ start, end }, new Date('2026-02-24T12:00:00.000Z'));
    expect(r.period.days_remaining).toBe(14);
    expect(r.period.elapsed_fraction).toBe(0.5);
  });
});

describe('subscription fields', () => {
  it('active: plan, ids and status from the snapshot', () => {
    const r = report({ status: 'active' });
    expect(r).toMatchObject({
      customer_id: 'cus_test',
      plan: 'plan_x',
      plan_ids: { subscription_id: 'sub_test', price_id: 'price_x', product_id: 'prod_x' },
      status: 'active',
      cancel_at_period_end: false,
      canceled_at: null,
      trial_end: null,
    });
  });

  it('trialing is served and carries trial_end', () => {
    const trialEnd = new Date(START.getTime() + 14 * DAY);
    const r = report({ status: 'trialing', trialEnd, used: 850 });
    expect(r.status).toBe('trialing');
    expect(r.trial_end).toBe(trialEnd.toISOString());
    expect(r.usage_status).toBe('approaching_limit');
    expect(r.credits.used).toBe(850);
  });

  it('cancel_at_period_end is reported while still served', () => {
    const r = report({ cancelAtPeriodEnd: true });
    expect(r.status).toBe('active');
    expect(r.cancel_at_period_end).toBe(true);
  });

  it('as_of is the time of the report', () => {
    const now = new Date('2026-01-05T06:07:08.009Z');
    expect(report({}, now).as_of).toBe('2026-01-05T06:07:08.009Z');
  });

  const ZEROED = { included: 0, used: 0, remaining: 0, overage: 0, percent_used: 0, projected_used: 0, hard_cap: 0, in_overage: false };

  it.each(NON_SERVED)('status %s is not served: status none, plan null, zeroed credits', (status) => {
    const canceledAt = status === 'canceled' ? new Date(START.getTime() + DAY) : null;
    const r = report({ status, used: 1200, canceledAt });
    expect(r.status).toBe('none');
    expect(r.usage_status).toBe('none');
    expect(r.plan).toBeNull();
    expect(r.credits).toEqual(ZEROED);
    expect(r.canceled_at).toBe(canceledAt?.toISOString() ?? null);
  });

  it('no subscription at all: status none, no plan, no period, zeroed credits', () => {
    const r = report({ noSubscription: true });
    expect(r).toMatchObject({
      customer_id: 'cus_test',
      plan: null,
      plan_ids: { subscription_id: null, price_id: null, product_id: null },
      status: 'none',
      usage_status: 'none',
      cancel_at_period_end: false,
      canceled_at: null,
      trial_end: null,
      period: { start: null, end: null, days_remaining: 0, elapsed_fraction: 0 },
    });
    expect(r.credits).toEqual(ZEROED);
  });

  it('no billing account: customer_id null and nothing is served', () => {
    // Paid requests answer 402 no_billing_account for such an account, so the report must not
    // claim an active subscription with spendable credits.
    const r = report({ customerId: null, used: 10 });
    expect(r.customer_id).toBeNull();
    expect(r.status).toBe('none');
    expect(r.usage_status).toBe('none');
    expect(r.plan).toBeNull();
    expect(r.credits).toEqual(ZEROED);
  });
});

describe('invariants over random inputs', () => {
  const nowArb = fc.integer({ min: START.getTime() - 40 * DAY, max: END.getTime() + 40 * DAY }).map((t) => new Date(t));
  const plan = fc.record({
    used: fc.integer({ min: 0, max: 10_000_000 }),
    included: fc.integer({ min: 0, max: 5_000_000 }),
    hardCap: fc.option(fc.integer({ min: 0, max: 10_000_000 }), { nil: null }),
    status: fc.constantFrom('active', 'trialing') as fc.Arbitrary<SubscriptionStatus>,
  });

  it('remaining, overage, in_overage, status and projection hold for every served report', () => {
    fc.assert(
      fc.property(plan, nowArb, ({ used, included, hardCap, status }, now) => {
        const r = report({ used, included, hardCap, status }, now);
        const c = r.credits;
        expect(r.status).toBe(status);
        expect(c.remaining).toBeGreaterThanOrEqual(0);
        expect(c.remaining).toBeLessThanOrEqual(included);
        expect(c.remaining).toBe(Math.max(0, Math.min(included, hardCap ?? Infinity) - used));
        if (hardCap !== null) expect(c.remaining).toBeLessThanOrEqual(Math.max(0, hardCap - used));
        expect(c.overage).toBe(Math.max(0, used - included));
        expect(c.in_overage).toBe(used > included);
        expect(c.used).toBe(used);
        expect(c.included).toBe(included);
        expect(c.hard_cap).toBe(hardCap ?? 'unlimited');
        expect(c.projected_used).toBeGreaterThanOrEqual(used);
        if (hardCap !== null && used <= hardCap) expect(c.projected_used).toBeLessThanOrEqual(hardCap);
        // The spec's table, in exact integer arithmetic.
        const expected =
          hardCap !== null && used >= hardCap ? 'at_hard_cap' : used > included ? 'over_included' : 5 * used >= 4 * included ? 'approaching_limit' : 'ok';
        expect(r.usage_status).toBe(expected);
        expect(r.period.elapsed_fraction).toBeGreaterThanOrEqual(0);
        expect(r.period.elapsed_fraction).toBeLessThanOrEqual(1);
        expect(r.period.days_remaining).toBeGreaterThanOrEqual(0);
      }),
      { numRuns: 500 },
    );
  });

  it('non-served reports are always zeroed and schema-valid', () => {
    fc.assert(
      fc.property(plan, nowArb, fc.constantFrom(...NON_SERVED), ({ used, included, hardCap }, now, status) => {
        const r = report({ used, included, hardCap, status }, now);
        expect(r.status).toBe('none');
        expect(r.usage_status).toBe('none');
        expect(r.credits.used).toBe(0);
        expect(r.credits.remaining).toBe(0);
      }),
      { numRuns: 200 },
    );
  });

  it('random period lengths give schema-valid periods', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 400 * DAY }),
        fc.integer({ min: -400 * DAY, max: 800 * DAY }),
        fc.integer({ min: 0, max: 1_000_000 }),
        (length, offset, used) => {
          const start = START;
          const end = new Date(START.getTime() + length);
          const r = report({ start, end, used, hardCap: null }, new Date(START.getTime() + offset));
          expect(r.period.days_remaining).toBe(Math.max(0, Math.ceil((length - offset) / DAY)));
          expect(r.credits.projected_used).toBeGreaterThanOrEqual(used);
        },
      ),
      { numRuns: 300 },
    );
  });
});
