// A plan's terms as Stripe holds them: the metadata of the subscription's base (licensed) price,
// written by `npm run admin -- billing:sync`. Parsed strictly: a price whose metadata is missing
// or malformed is a misconfigured plan (paid requests 402 plan_unavailable, /usage 502
// bad_plan_pricing), never a guess at its credits. One key is optional: the plan's limit on
// on-demand scrapes per platform per minute, absent for the service default; present, it must be
// well formed like the others, or the plan is misconfigured too.
import type Stripe from 'stripe';

/** The metadata keys on a plan's base Price (and its Product, which they fall back to). */
export const PLAN_METADATA = {
  plan: 'tm_plan',
  included: 'included_credits',
  hardCap: 'hard_cap',
  scrapeRequestsPerPlatformPerMinute: 'scrape_requests_per_platform_per_minute',
} as const;

export interface PlanTerms {
  planId: string;
  included: number;
  /** null: unlimited. */
  hardCap: number | null;
  /** plans.scrape_requests_per_platform_per_minute; absent: SCRAPE_REQUESTS_PER_PLATFORM_PER_MINUTE. */
  scrapeRequestsPerPlatformPerMinute?: number;
}

const PLAN_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const COUNT = /^(0|[1-9][0-9]{0,14})$/;
/** 1 to 1,000,000, the bounds of SCRAPE_REQUESTS_PER_PLATFORM_PER_MINUTE (and of the plans column's check). */
const SCRAPE_LIMIT = /^([1-9][0-9]{0,5}|1000000)$/;

/** The terms in `metadata`, or null when any of them is missing or invalid. */
export function planTerms(metadata: Record<string, string> | null | undefined): PlanTerms | null {
  const planId = metadata?.[PLAN_METADATA.plan]?.trim();
  const included = metadata?.[PLAN_METADATA.included]?.trim();
  const hardCap = metadata?.[PLAN_METADATA.hardCap]?.trim();
  const scrapes = metadata?.[PLAN_METADATA.scrapeRequestsPerPlatformPerMinute]?.trim();
  if (!planId || !PLAN_ID.test(planId) || !included || !COUNT.test(included) || hardCap === undefined) return null;
  if (scrapes !== undefined && !SCRAPE_LIMIT.test(scrapes)) return null;
  const limits = scrapes === undefined ? {} : { scrapeRequestsPerPlatformPerMinute: Number(scrapes) };
  const inc = Number(included);
  if (hardCap === 'unlimited') return { planId, included: inc, hardCap: null, ...limits };
  if (!COUNT.test(hardCap) || Number(hardCap) < inc) return null;
  return { planId, included: inc, hardCap: Number(hardCap), ...limits };
}

/** The subscription's base price: its licensed (not metered) item. */
export function basePrice(sub: Stripe.Subscription): Stripe.Price | null {
  const item = sub.items.data.find((i) => i.price.recurring?.usage_type !== 'metered') ?? null;
  return item?.price ?? null;
}

/** The terms of a subscription: its base price's metadata, else its product's. */
export function subscriptionTerms(sub: Stripe.Subscription): PlanTerms | null {
  const price = basePrice(sub);
  if (!price) return null;
  const product = typeof price.product === 'object' && price.product && !('deleted' in price.product && price.product.deleted) ? (price.product as Stripe.Product) : null;
  return planTerms(price.metadata) ?? planTerms(product?.metadata);
}
