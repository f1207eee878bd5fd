// A plan's terms from Stripe metadata, and a Stripe subscription as the mirror sees it: strict
// parsing (anything missing or malformed is a misconfigured plan, never a guess), checked on
// hand-picked cases and on arbitrary metadata (fast-check).
import fc from 'fast-check';
import type Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { PLAN_METADATA, planTerms } from '../../../src/billing/stripe/plan-terms.ts';
import { viewOf } from '../../../src/billing/stripe/mirror.ts';

const SCRAPES = PLAN_METADATA.scrapeRequestsPerPlatformPerMinute;

const meta = (plan: string, included: string, hardCap: string) => ({ [PLAN_METADATA.plan]: plan, [PLAN_METADATA.included]: included, [PLAN_METADATA.hardCap]: hardCap });

describe('plan terms from price metadata', () => {
  it('reads a capped and an unlimited plan', () => {
    expect(planTerms(meta('starter', '20000', '25000'))).toEqual({ planId: 'starter', included: 20_000, hardCap: 25_000 });
    expect(planTerms(meta('pro', '200000', 'unlimited'))).toEqual({ planId: 'pro', included: 200_000, hardCap: null });
    expect(planTerms(meta('free', '1000', '1000'))).toEqual({ planId: 'free', included: 1_000, hardCap: 1_000 });
  });

  it('refuses what is missing or malformed', () => {
    for (const bad of [
      null,
      {},
      meta('', '1', '1'),
      meta('Starter Plan', '1', '1'),
      meta('starter', '', '1'),
      meta('starter', '-1', '1'),
      meta('starter', '1e3', '2000'),
      meta('starter', '0x10', '20'),
      meta('starter', '01', '2'),
      meta('starter', '20000', '100'),
      meta('starter', '20000', 'none'),
      { [PLAN_METADATA.plan]: 'starter', [PLAN_METADATA.included]: '10' },
    ]) {
      expect(planTerms(bad as Record<string, string> | null), JSON.stringify(bad)).toBeNull();
    }
  });

  it('reads the optional scrape limit per platform per minute: absent is the service default, malformed a misconfigured plan', () => {
    expect(planTerms({ ...meta('pro', '200000', 'unlimited'), [SCRAPES]: '25' })).toEqual({ planId: 'pro', included: 200_000, hardCap: null, scrapeRequestsPerPlatformPerMinute: 25 });
    expect(planTerms({ ...meta('free', '1000', '1000'), [SCRAPES]: ' 1 ' })).toEqual({ planId: 'free', included: 1_000, hardCap: 1_000, scrapeRequestsPerPlatformPerMinute: 1 });
    expect(planTerms({ ...meta('free', '1000', '1000'), [SCRAPES]: '1000000' })?.scrapeRequestsPerPlatformPerMinute).toBe(1_000_000);
    expect(planTerms(meta('free', '1000', '1000'))).not.toHaveProperty('scrapeRequestsPerPlatformPerMinute');
    for (const bad of ['', '0', '-1', '01', '1.5', '1e3', '0x10', 'unlimited', 'ten', '1000001', '9'.repeat(20)]) {
      expect(planTerms({ ...meta('free', '1000', '1000'), [SCRAPES]: bad }), bad).toBeNull();
    }
  });

  it('on any metadata: null, or terms that are whole, non-negative and under their cap', () => {
    const value = fc.oneof(fc.string(), fc.nat().map(String), fc.constantFrom('unlimited', '0', ' 5 ', '1.5', '9'.repeat(20)));
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...Object.values(PLAN_METADATA), 'other'), value), (m) => {
        const t = planTerms(m);
        if (t === null) return;
        expect(Number.isSafeInteger(t.included) && t.included >= 0).toBe(true);
        expect(t.hardCap === null || (Number.isSafeInteger(t.hardCap) && t.hardCap >= t.included)).toBe(true);
        expect(t.planId).toMatch(/^[a-z0-9][a-z0-9_-]*$/);
        const scrapes = t.scrapeRequestsPerPlatformPerMinute;
        expect(scrapes === undefined ? !(SCRAPES in m) : Number.isSafeInteger(scrapes) && scrapes >= 1 && scrapes <= 1_000_000).toBe(true);
      }),
      { numRuns: 2_000 },
    );
  });

  it('round-trips what billing:sync would write', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,20}$/), fc.nat({ max: 1e9 }), fc.option(fc.nat({ max: 1e9 })), (plan, included, extra) => {
        const hardCap = extra === null ? null : included + extra;
        expect(planTerms(meta(plan, String(included), hardCap === null ? 'unlimited' : String(hardCap)))).toEqual({ planId: plan, included, hardCap });
      }),
    );
  });
});

/** A subscription object of the current API shape (periods on the items), with one base price. */
function subscription(over: { status?: string; metadata?: Record<string, string>; metered?: boolean } = {}): Stripe.Subscription {
  const price = (id: string, usage: 'licensed' | 'metered', metadata: Record<string, string>) => ({
    id,
    metadata,
    recurring: { usage_type: usage },
    product: { id: 'prod_tm', name: 'Ticket market API', metadata: {} },
  });
  const items = [{ id: 'si_base', price: price('price_base', 'licensed', over.metadata ?? meta('starter', '20000', '25000')), current_period_start: 1_764_000_000, current_period_end: 1_766_592_000 }];
  if (over.metered) items.unshift({ id: 'si_over', price: price('price_over', 'metered', {}), current_period_start: 1, current_period_end: 2 });
  return {
    id: 'sub_123',
    customer: 'cus_123',
    status: over.status ?? 'active',
    created: 1_700_000_000,
    cancel_at_period_end: false,
    canceled_at: null,
    trial_end: null,
    items: { data: items },
  } as unknown as Stripe.Subscription;
}

describe('a Stripe subscription as the mirror sees it', () => {
  it("takes the base price's terms and period, whatever the metered item says", () => {
    const v = viewOf(subscription({ metered: true }));
    expect(v.customerId).toBe('cus_123');
    expect(v.subscription).toMatchObject({ id: 'sub_123', planId: 'starter', status: 'active', periodStart: new Date(1_764_000_000_000), periodEnd: new Date(1_766_592_000_000) });
    expect(v.plan).toEqual({ id: 'starter', name: 'Ticket market API', included: 20_000, hardCap: 25_000, priceId: 'price_base', productId: 'prod_tm', scrapeRequestsPerPlatformPerMinute: null });
  });

  it("carries the plan's scrape limit when its metadata sets one (issue 36), null (the service default) when not", () => {
    const v = viewOf(subscription({ metadata: { ...meta('starter', '20000', '25000'), [SCRAPES]: '25' } }));
    expect(v.plan).toMatchObject({ id: 'starter', priceId: 'price_base', scrapeRequestsPerPlatformPerMinute: 25 });
    const bad = viewOf(subscription({ metadata: { ...meta('starter', '20000', '25000'), [SCRAPES]: 'lots' } }));
    expect(bad.plan).toMatchObject({ id: 'unpriced:price_base', priceId: null, scrapeRequestsPerPlatformPerMinute: null });
  });

  it('a price without valid terms is a plan without a price (402 plan_unavailable, /usage 502 bad_plan_pricing)', () => {
    const v = viewOf(subscription({ metadata: {} }));
    expect(v.plan).toMatchObject({ id: 'unpriced:price_base', priceId: null, included: 0 });
    expect(v.subscription.planId).toBe('unpriced:price_base');
  });

  it("keeps every Stripe status, and reads one it does not know as not served", () => {
    for (const s of ['active', 'trialing', 'past_due', 'unpaid', 'canceled', 'paused', 'incomplete', 'incomplete_expired']) {
      expect(viewOf(subscription({ status: s })).subscription.status).toBe(s);
    }
    expect(viewOf(subscription({ status: 'something_new' })).subscription.status).toBe('unpaid');
  });
});
