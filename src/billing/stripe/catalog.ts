// The Stripe catalog behind our plans (`npm run admin -- billing:sync`): one Billing Meter for
// credits, one Product, and per plan of the `plans` table a monthly base Price and, when the plan
// bills overage, a metered graduated overage Price. Both prices carry the plan terms as the
// metadata plan-terms.ts parses, so what the gateway reads back from a subscription is what the
// plans table said when it was synced.
//
// Every object is found again without Stripe's search (eventually consistent, so a second run
// right after the first could miss what the first made): the product by its fixed id, the meter
// by its event name, each price by its lookup key. A price's amount cannot change in Stripe, so a
// changed amount is a new price that takes the lookup key over (`transfer_lookup_key`) while the
// old one is deactivated; subscriptions already on it keep it until moved in Stripe.
import Stripe from 'stripe';
import type { Db } from '../../../db/connection.ts';
import { PLAN_METADATA, planTerms } from './plan-terms.ts';

/** Fixed, so a re-run retrieves it instead of searching for it. */
export const PRODUCT_ID = 'ticket_market_api';
export const PRODUCT_NAME = 'Ticket Market API';
const CURRENCY = 'usd';

/** The lookup keys of a plan's prices; accounts:create subscribes to these. */
export const lookupKeys = (planId: string) => ({ base: `tm_${planId}_base`, overage: `tm_${planId}_overage` });

export type CatalogAction = 'created' | 'updated' | 'unchanged' | 'replaced' | 'reactivated' | 'deactivated';

export interface CatalogReport {
  meter: { id: string; event_name: string; action: CatalogAction };
  product: { id: string; action: CatalogAction };
  prices: { plan: string; role: 'base' | 'overage'; lookup_key: string; id: string; action: CatalogAction; replaced?: string }[];
  /** Plans of the table that are not sold through Stripe, and why. */
  skipped: { plan: string; reason: string }[];
}

/** Raised for a catalog Stripe holds that billing:sync will not overwrite (the CLI says it, exit 1). */
export class CatalogError extends Error {}

interface PlanRow {
  id: string;
  name: string;
  included: number;
  hard_cap: number | null;
  overage_unit_price: string | null;
  monthly_price: string | null;
  scrape_requests_per_platform_per_minute: number | null;
}

/** Canonical decimal text ("0.200" -> "0.2", "007" -> "7"), so amounts compare as text. */
export function canonicalDecimal(text: string): string {
  const m = /^(\d+)(?:\.(\d*))?$/.exec(text.trim());
  if (!m) throw new Error(`not a non-negative decimal: ${JSON.stringify(text)}`);
  const whole = m[1]!.replace(/^0+(?=\d)/, '');
  const frac = (m[2] ?? '').replace(/0+$/, '');
  return frac ? `${whole}.${frac}` : whole;
}

/** USD (numeric text from PostgreSQL) in cents, exactly: Stripe's amounts are in the currency's minor unit. */
export function usdToCents(usd: string): string {
  const m = /^(\d+)(?:\.(\d*))?$/.exec(usd.trim());
  if (!m) throw new Error(`not a non-negative decimal: ${JSON.stringify(usd)}`);
  const frac = (m[2] ?? '').padEnd(2, '0');
  return canonicalDecimal(`${m[1]}${frac.slice(0, 2)}.${frac.slice(2) || '0'}`);
}

/**
 * The metadata of both prices, in the exact form planTerms() parses back. The optional scrape
 * limit is left out when the plan has none (the service default); an update that drops it clears
 * it in Stripe (see metadataUpdate).
 */
export function termsMetadata(plan: Pick<PlanRow, 'id' | 'included' | 'hard_cap' | 'scrape_requests_per_platform_per_minute'>): Record<string, string> {
  const scrapes = plan.scrape_requests_per_platform_per_minute;
  return {
    [PLAN_METADATA.plan]: plan.id,
    [PLAN_METADATA.included]: String(plan.included),
    [PLAN_METADATA.hardCap]: plan.hard_cap === null ? 'unlimited' : String(plan.hard_cap),
    ...(scrapes === null ? {} : { [PLAN_METADATA.scrapeRequestsPerPlatformPerMinute]: String(scrapes) }),
  };
}

/** Our keys that are optional: a price carrying one the plan no longer sets must lose it. */
const OPTIONAL_KEYS = [PLAN_METADATA.scrapeRequestsPerPlatformPerMinute];

/** The metadata to send to bring `p`'s in line with `d`'s: Stripe deletes a key sent empty. */
function metadataUpdate(p: Stripe.Price, d: DesiredPrice): Record<string, string> {
  const stale = OPTIONAL_KEYS.filter((k) => !(k in d.metadata) && p.metadata?.[k] !== undefined);
  return { ...d.metadata, ...Object.fromEntries(stale.map((k) => [k, ''])) };
}

interface Tier {
  up_to: number | null;
  amount: string;
}

interface DesiredPrice {
  plan: string;
  role: 'base' | 'overage';
  lookupKey: string;
  nickname: string;
  metadata: Record<string, string>;
  usageType: 'licensed' | 'metered';
  /** Base: the monthly amount in cents. */
  unitAmount?: number;
  /** Overage: graduated tiers, amounts in cents (decimal text). */
  tiers?: Tier[];
}

function desiredPrices(plan: PlanRow): DesiredPrice[] {
  const keys = lookupKeys(plan.id);
  const metadata = termsMetadata(plan);
  const out: DesiredPrice[] = [];
  const cents = usdToCents(plan.monthly_price!);
  if (cents.includes('.')) throw new CatalogError(`plan ${plan.id}: monthly_price ${plan.monthly_price} is not whole cents`);
  out.push({ plan: plan.id, role: 'base', lookupKey: keys.base, nickname: plan.name, metadata, usageType: 'licensed', unitAmount: Number(cents) });
  if (plan.overage_unit_price !== null) {
    const overage = usdToCents(plan.overage_unit_price);
    // Stripe wants a first tier's up_to above 0: a plan with nothing included bills from the first credit.
    const tiers: Tier[] = plan.included > 0 ? [{ up_to: plan.included, amount: '0' }, { up_to: null, amount: overage }] : [{ up_to: null, amount: overage }];
    out.push({ plan: plan.id, role: 'overage', lookupKey: keys.overage, nickname: `${plan.name} overage`, metadata, usageType: 'metered', tiers });
  }
  return out;
}

function createParams(d: DesiredPrice, meterId: string): Stripe.PriceCreateParams {
  const common = {
    currency: CURRENCY,
    product: PRODUCT_ID,
    nickname: d.nickname,
    metadata: d.metadata,
    lookup_key: d.lookupKey,
    // The key may sit on an older price (deactivated or with another amount): this one takes it.
    transfer_lookup_key: true,
  };
  if (d.role === 'base') {
    return { ...common, unit_amount: d.unitAmount!, recurring: { interval: 'month', usage_type: 'licensed' } };
  }
  return {
    ...common,
    recurring: { interval: 'month', usage_type: 'metered', meter: meterId },
    billing_scheme: 'tiered',
    tiers_mode: 'graduated',
    tiers: d.tiers!.map((t) => ({ up_to: t.up_to ?? 'inf', unit_amount_decimal: Stripe.Decimal.from(t.amount) })),
  };
}

const idOf = (v: string | { id: string } | null | undefined) => (typeof v === 'string' ? v : (v?.id ?? null));

/** Whether `p` bills what `d` asks for: anything here differing needs a new price (Stripe cannot change it). */
function sameAmounts(p: Stripe.Price, d: DesiredPrice, meterId: string): boolean {
  if (p.currency !== CURRENCY || idOf(p.product) !== PRODUCT_ID) return false;
  if (p.recurring?.interval !== 'month' || (p.recurring.interval_count ?? 1) !== 1 || p.recurring.usage_type !== d.usageType) return false;
  if (d.role === 'base') return p.billing_scheme === 'per_unit' && p.unit_amount === d.unitAmount;
  if (p.recurring.meter !== meterId || p.billing_scheme !== 'tiered' || p.tiers_mode !== 'graduated') return false;
  const tiers = (p.tiers ?? []).map((t) => ({
    up_to: t.up_to ?? null,
    // Decimal or text, depending on the library's parsing: compared as canonical text either way.
    amount: canonicalDecimal(String(t.unit_amount_decimal ?? t.unit_amount ?? 0)),
    flat: canonicalDecimal(String(t.flat_amount_decimal ?? t.flat_amount ?? 0)),
  }));
  return JSON.stringify(tiers) === JSON.stringify(d.tiers!.map((t) => ({ ...t, flat: '0' })));
}

/** Only our keys are compared: metadata someone else added to the price is left alone. */
function metadataDiffers(p: Stripe.Price, d: DesiredPrice): boolean {
  // Stripe never stores an empty value, so a key to clear ('') differs exactly when it is there.
  return Object.entries(metadataUpdate(p, d)).some(([k, v]) => (p.metadata?.[k] ?? '') !== v) || (p.nickname ?? '') !== d.nickname;
}

async function syncMeter(stripe: Stripe, eventName: string): Promise<CatalogReport['meter']> {
  let found: Stripe.Billing.Meter | null = null;
  for await (const m of stripe.billing.meters.list({ limit: 100 })) {
    if (m.event_name === eventName && (!found || m.status === 'active')) found = m;
  }
  if (found) {
    // A meter's aggregation and mapping cannot be changed: one that reads events otherwise is the operator's call.
    const wrong = [
      found.default_aggregation.formula !== 'sum' && `aggregates by ${found.default_aggregation.formula}`,
      (found.customer_mapping.type !== 'by_id' || found.customer_mapping.event_payload_key !== 'stripe_customer_id') &&
        `maps customers by ${found.customer_mapping.event_payload_key}`,
      found.value_settings.event_payload_key !== 'value' && `reads the value from ${found.value_settings.event_payload_key}`,
    ].filter(Boolean);
    if (wrong.length) {
      throw new CatalogError(
        `Billing Meter ${found.id} for event ${eventName} ${wrong.join(', ')}; it must sum "value" by "stripe_customer_id": deactivate it in Stripe and set another STRIPE_METER_EVENT_NAME, or fix it there`,
      );
    }
    if (found.status !== 'active') {
      await stripe.billing.meters.reactivate(found.id);
      return { id: found.id, event_name: eventName, action: 'reactivated' };
    }
    return { id: found.id, event_name: eventName, action: 'unchanged' };
  }
  const created = await stripe.billing.meters.create({
    display_name: 'API credits',
    event_name: eventName,
    default_aggregation: { formula: 'sum' },
    customer_mapping: { type: 'by_id', event_payload_key: 'stripe_customer_id' },
    value_settings: { event_payload_key: 'value' },
  });
  return { id: created.id, event_name: eventName, action: 'created' };
}

async function syncProduct(stripe: Stripe): Promise<CatalogReport['product']> {
  let product: Stripe.Product | null = null;
  try {
    product = await stripe.products.retrieve(PRODUCT_ID);
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode !== 404) throw err;
  }
  if (!product) {
    await stripe.products.create({ id: PRODUCT_ID, name: PRODUCT_NAME });
    return { id: PRODUCT_ID, action: 'created' };
  }
  if (product.active && product.name === PRODUCT_NAME) return { id: PRODUCT_ID, action: 'unchanged' };
  await stripe.products.update(PRODUCT_ID, { active: true, name: PRODUCT_NAME });
  return { id: PRODUCT_ID, action: 'updated' };
}

/** The prices holding these lookup keys (active or not), by lookup key. */
export async function pricesByLookupKey(stripe: Stripe, keys: readonly string[], opts: { tiers?: boolean } = {}): Promise<Map<string, Stripe.Price>> {
  const out = new Map<string, Stripe.Price>();
  // Stripe takes at most 10 lookup keys per list call.
  for (let i = 0; i < keys.length; i += 10) {
    const params: Stripe.PriceListParams = { lookup_keys: keys.slice(i, i + 10), limit: 100 };
    if (opts.tiers) params.expand = ['data.tiers'];
    for await (const p of stripe.prices.list(params)) if (p.lookup_key) out.set(p.lookup_key, p);
  }
  return out;
}

/** Brings the Stripe catalog in line with the plans table; running it again changes nothing. */
export async function syncCatalog(db: Db, stripe: Stripe, opts: { meterEventName: string }): Promise<CatalogReport> {
  const rows: PlanRow[] = await db('plans')
    .orderBy('id')
    .select('id', 'name', 'included', 'hard_cap', 'overage_unit_price', 'monthly_price', 'scrape_requests_per_platform_per_minute');
  const skipped: CatalogReport['skipped'] = [];
  const plans = rows.filter((p) => {
    const reason =
      p.monthly_price === null
        ? 'no monthly_price'
        : !planTerms(termsMetadata(p))
          ? 'its id or credits cannot be Stripe plan terms (tm_plan: lower-case letters, digits, _ and -; hard_cap not below included)'
          : null;
    if (reason) skipped.push({ plan: p.id, reason });
    return !reason;
  });
  const wanted = plans.flatMap(desiredPrices);

  const meter = await syncMeter(stripe, opts.meterEventName);
  const product = await syncProduct(stripe);

  const keys = plans.flatMap((p) => Object.values(lookupKeys(p.id)));
  const existing = await pricesByLookupKey(stripe, keys, { tiers: true });
  const prices: CatalogReport['prices'] = [];
  for (const d of wanted) {
    const p = existing.get(d.lookupKey);
    const row = { plan: d.plan, role: d.role, lookup_key: d.lookupKey };
    if (p && sameAmounts(p, d, meter.id)) {
      const update: Stripe.PriceUpdateParams = {};
      if (metadataDiffers(p, d)) Object.assign(update, { metadata: metadataUpdate(p, d), nickname: d.nickname });
      if (!p.active) update.active = true;
      if (Object.keys(update).length) await stripe.prices.update(p.id, update);
      prices.push({ ...row, id: p.id, action: !p.active ? 'reactivated' : update.metadata ? 'updated' : 'unchanged' });
      continue;
    }
    const created = await stripe.prices.create(createParams(d, meter.id));
    if (p?.active) await stripe.prices.update(p.id, { active: false });
    prices.push({ ...row, id: created.id, action: p ? 'replaced' : 'created', ...(p ? { replaced: p.id } : {}) });
  }
  // A plan that stopped billing overage: its old overage price is not sold any more.
  const wantedKeys = new Set(wanted.map((d) => d.lookupKey));
  for (const plan of plans) {
    const key = lookupKeys(plan.id).overage;
    const p = existing.get(key);
    if (!wantedKeys.has(key) && p?.active) {
      await stripe.prices.update(p.id, { active: false });
      prices.push({ plan: plan.id, role: 'overage', lookup_key: key, id: p.id, action: 'deactivated' });
    }
  }
  return { meter, product, prices, skipped };
}
