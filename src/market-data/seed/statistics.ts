// The seed's market statistics for one event: a demand model turned into individual sales on
// marketplace A, the snapshots a tracker would have written (the newest is the summary), the
// daily roll-ups and the price histogram, plus marketplace B scrape runs for events listed
// there (marketplace-b.ts). Figures are derived the way the tracker derives them (stats-formulas.ts,
// price-histogram.ts, rollup.ts's mbStatistics for marketplace B, migration 006), so the seeded
// data obeys the same rules as tracked data:
// - ma_sales holds the sales of the last `windowDays` days; a snapshot's X_24h flows are exactly
//   the sales in the 24 h before it; tickets_sold and total_volume add the sales before the
//   window (generated as one aggregate);
// - the histogram is priceHistogram() over the stored sales, and an event that has sold keeps
//   at least one stored sale (so its histogram is never the empty "no sales" one);
// - an event whose sale has not started has no statistics at all (summary nulls); some events on
//   sale have sold nothing yet (null sale averages, histogram min and max "0").
import { money, percentChange } from '../stats-formulas.ts';
import { priceHistogram, type PriceHistogram } from '../price-histogram.ts';
import { DAY_MS } from '../rollup.ts';
import { HOUR_MS, type SeedArtist, type SeedEvent, type SeedVenue } from './catalog.ts';
import { Random, STREAM } from './random.ts';
import { marketplaceBRuns, type MarketplaceBRun } from './marketplace-b.ts';
import { SECTIONS } from './vocabulary.ts';

/** Most sales one event makes in a day; bounds the rows a blockbuster adds. */
const MAX_SALES_PER_DAY = 40;

/**
 * How much per-event history the seed writes.
 * - full: 30 days of sales, daily statistics, 4 snapshots, histogram, marketplace B runs,
 *   artist social snapshots (what the event endpoints show);
 * - light: the newest snapshot only (search counters and summaries are real), artist metrics;
 * - none: the catalog alone (search counters are zero).
 */
export type Detail = 'full' | 'light' | 'none';
export const DETAILS: readonly Detail[] = ['full', 'light', 'none'];

export interface SnapshotRow {
  event_id: number;
  captured_at: Date;
  currency: string;
  tickets_sold: number;
  tickets_sold_24h: number;
  listings_sold: number;
  listings_sold_24h: number;
  listings_available: number;
  listings_available_24h: number;
  available_tickets: number;
  available_tickets_24h: number;
  is_general_admission_only: boolean;
  average_ticket_price_sold: string | null;
  average_ticket_price_sold_24h: string | null;
  average_ticket_price_available: string | null;
  average_ticket_price_available_24h: string | null;
  highest_sale_price: string | null;
  highest_sale_price_24h: string | null;
  get_in_price: string | null;
  get_in_price_24h: string | null;
  total_volume: string;
  tickets_sold_24h_percentage: string | null;
  listings_sold_24h_percentage: string | null;
  listings_available_24h_percentage: string | null;
  available_tickets_24h_percentage: string | null;
  average_ticket_price_sold_24h_percentage: string | null;
  average_ticket_price_available_24h_percentage: string | null;
  highest_sale_price_24h_percentage: string | null;
  get_in_price_24h_percentage: string | null;
}

export interface DailyRow {
  event_id: number;
  stat_date: string;
  tickets_sold: number;
  tickets_sold_24h: number;
  available_tickets: number;
  listings_available: number;
  average_ticket_price_sold: string | null;
  average_ticket_price_available: string | null;
  highest_sale_price: string | null;
}

export interface SaleRow {
  event_id: number;
  sale_ref: string;
  sold_at: Date;
  section: string;
  row: string;
  quantity: number;
  price: string;
  currency: string;
  ticket_type: string;
}

export interface HistogramRow {
  event_id: number;
  histogram: PriceHistogram;
  computed_at: Date;
}

export interface EventStatistics {
  snapshots: SnapshotRow[];
  daily: DailyRow[];
  sales: SaleRow[];
  histogram: HistogramRow | null;
  marketplaceB: MarketplaceBRun[];
}

const EMPTY: EventStatistics = { snapshots: [], daily: [], sales: [], histogram: null, marketplaceB: [] };

export interface Sale {
  at: number;
  quantity: number;
  price: number;
}

/** Running totals of an event's sales up to a moment. */
interface Totals {
  tickets: number;
  listings: number;
  volume: number;
  highest: number | null;
}

const TICKET_TYPES = ['resale', 'standard', 'platinum', 'general_admission'];

export function generateEventStatistics(
  seed: number,
  eventId: number,
  event: SeedEvent,
  artist: SeedArtist,
  venue: SeedVenue,
  now: Date,
  detail: Detail,
): EventStatistics {
  if (detail === 'none') return EMPTY;
  const r = new Random(seed, STREAM.eventStats, eventId);
  const eventAt = event.eventDate.getTime();
  const onSale = eventAt - r.int(45, 200) * DAY_MS;
  const nowMs = now.getTime();
  if (onSale >= nowMs) return EMPTY; // not on sale yet: never tracked, no statistics
  // Trading stops when the event starts; a past event's figures are frozen there.
  const end = Math.min(nowMs, eventAt);
  const currency = venue.country.currency;
  const capacity = event.capacity ?? venue.capacity;
  const gaOnly = capacity < 1_500 ? r.chance(0.7) : r.chance(0.05);

  // Face value and demand: popular artists cost more and sell more; one in ten events on sale
  // has sold nothing on the marketplace yet.
  const face = artist.category.medianUsd * venue.country.perUsd * r.logNormal(1, 0.45) * (0.7 + 0.8 * artist.popularity);
  const silent = r.chance(0.1);
  const share = silent ? 0 : (0.01 + 0.12 * Math.pow(artist.popularity, 1.5)) * (0.5 + r.next());
  const avgQuantity = 2.1;
  const saleDays = (eventAt - onSale) / DAY_MS;
  // Demand shape over days-until-event d: a floor, a ramp into the event, a spike at on-sale.
  const shape = (t: number) => 0.3 + 2.5 * Math.exp(-(eventAt - t) / DAY_MS / 10) + 3 * Math.exp(-(t - onSale) / DAY_MS / 3);
  const shapeTotal = 0.3 * saleDays + 25 * (1 - Math.exp(-saleDays / 10)) + 9 * (1 - Math.exp(-saleDays / 3));
  const salesPerShape = (capacity * share) / avgQuantity / shapeTotal;
  const fair = (t: number) => face * (1 + 0.35 * Math.exp(-(eventAt - t) / DAY_MS / 15));
  const stockBase = capacity * Math.max(share, 0.004) * (0.6 + 0.8 * r.next());
  const dayNoise = new Map<number, number>();
  const noise = (t: number) => {
    const day = Math.floor(t / DAY_MS);
    let n = dayNoise.get(day);
    if (n === undefined) {
      n = r.normal();
      dayNoise.set(day, n);
    }
    return n;
  };
  const available = (t: number) => {
    if (t < onSale) return 0;
    const left = Math.max(0, (eventAt - t) / DAY_MS);
    return Math.max(0, Math.round(stockBase * (0.45 + 0.55 * Math.min(1, left / saleDays)) * (1 + 0.08 * noise(t))));
  };
  const listingsAvailable = (t: number) => Math.ceil(available(t) / 2.3);
  const askAverage = (t: number) => (available(t) > 0 ? fair(t) * 1.18 * (1 + 0.04 * noise(t)) : null);
  const getIn = (t: number) => (available(t) > 0 ? fair(t) * 0.62 * (1 + 0.05 * noise(t)) : null);

  const windowDays = detail === 'full' ? 30 : 2;
  const snapshotCount = detail === 'full' ? 4 : 1;
  const windowStart = Math.max(onSale, end - windowDays * DAY_MS);

  // Before the window: one aggregate (count, volume, highest), as if summed by earlier roll-ups.
  const before: Totals = { tickets: 0, listings: 0, volume: 0, highest: null };
  if (windowStart > onSale) {
    const mid = (onSale + windowStart) / 2;
    const expected = salesPerShape * shape(mid) * ((windowStart - onSale) / DAY_MS);
    before.listings = r.poisson(expected);
    if (before.listings > 0) {
      before.tickets = Math.max(before.listings, Math.round(before.listings * avgQuantity * (0.9 + 0.2 * r.next())));
      before.volume = before.tickets * fair(mid) * r.logNormal(1, 0.05);
      before.highest = fair(mid) * (1.5 + 0.8 * r.next());
    }
  }

  // The window, sale by sale, oldest first.
  const sales: Sale[] = [];
  for (let dayStart = windowStart; dayStart < end; dayStart += DAY_MS) {
    const dayEnd = Math.min(end, dayStart + DAY_MS);
    const lambda = salesPerShape * shape((dayStart + dayEnd) / 2) * ((dayEnd - dayStart) / DAY_MS);
    const n = Math.min(MAX_SALES_PER_DAY, r.poisson(lambda));
    const times = Array.from({ length: n }, () => dayStart + Math.floor(r.next() * (dayEnd - dayStart)));
    times.sort((a, b) => a - b);
    for (const at of times) {
      const quantity = r.weighted([1, 2, 3, 4], [30, 48, 8, 14]);
      // Whole cents, as stored: every figure derived below matches the stored sales exactly.
      sales.push({ at, quantity, price: Math.round(Math.max(5, fair(at) * r.logNormal(1, 0.22)) * 100) / 100 });
    }
  }

  // An event that sold before the window but not in it would show sales in its summary and an
  // empty histogram ("no sales observed"): the latest earlier sale is kept as a stored sale.
  if (sales.length === 0 && before.listings > 0) {
    const quantity = before.listings === 1 ? before.tickets : 1;
    const price = Math.round((before.volume / before.tickets) * 100) / 100;
    sales.push({ at: windowStart + Math.floor(r.next() * (end - windowStart)), quantity, price });
    before.listings -= 1;
    before.tickets -= quantity;
    before.volume = before.listings ? before.volume - price * quantity : 0;
    if (before.listings === 0) before.highest = null;
  }

  const totalsAt = (t: number): Totals => {
    const out = { ...before };
    for (const s of sales) {
      if (s.at > t) break;
      out.tickets += s.quantity;
      out.listings += 1;
      out.volume += s.price * s.quantity;
      out.highest = out.highest === null ? s.price : Math.max(out.highest, s.price);
    }
    return out;
  };
  const flowBetween = (from: number, to: number) => {
    let tickets = 0;
    let listings = 0;
    let volume = 0;
    let highest: number | null = null;
    for (const s of sales) {
      if (s.at <= from) continue;
      if (s.at > to) break;
      tickets += s.quantity;
      listings += 1;
      volume += s.price * s.quantity;
      highest = highest === null ? s.price : Math.max(highest, s.price);
    }
    return { tickets, listings, average: tickets ? volume / tickets : null, highest };
  };
  const average = (t: Totals) => (t.tickets ? t.volume / t.tickets : null);

  const newest = Math.max(onSale + 1, end - Math.floor(r.next() * 3 * HOUR_MS));
  const snapshots: SnapshotRow[] = [];
  for (let j = 0; j < snapshotCount; j++) {
    const at = newest - j * DAY_MS;
    if (at <= onSale) break;
    const prev = at - DAY_MS;
    const now24 = totalsAt(at);
    const then24 = totalsAt(prev);
    const flow = flowBetween(prev, at);
    const avgSold = average(now24);
    const avgSoldBefore = average(then24);
    const ask = askAverage(at);
    const askBefore = askAverage(prev);
    const cheapest = getIn(at);
    const cheapestBefore = getIn(prev);
    snapshots.push({
      event_id: eventId,
      captured_at: new Date(at),
      currency,
      tickets_sold: now24.tickets,
      tickets_sold_24h: flow.tickets,
      listings_sold: now24.listings,
      listings_sold_24h: flow.listings,
      listings_available: listingsAvailable(at),
      listings_available_24h: listingsAvailable(prev),
      available_tickets: available(at),
      available_tickets_24h: available(prev),
      is_general_admission_only: gaOnly,
      average_ticket_price_sold: money(avgSold),
      average_ticket_price_sold_24h: money(flow.average),
      average_ticket_price_available: money(ask),
      average_ticket_price_available_24h: money(askBefore),
      highest_sale_price: money(now24.highest),
      highest_sale_price_24h: money(flow.highest),
      get_in_price: money(cheapest),
      get_in_price_24h: money(cheapestBefore),
      total_volume: money(now24.volume)!,
      // Flows compare the running total with the total 24 h earlier; levels compare levels.
      tickets_sold_24h_percentage: percentChange(now24.tickets, then24.tickets),
      listings_sold_24h_percentage: percentChange(now24.listings, then24.listings),
      listings_available_24h_percentage: percentChange(listingsAvailable(at), listingsAvailable(prev)),
      available_tickets_24h_percentage: percentChange(available(at), available(prev)),
      average_ticket_price_sold_24h_percentage: percentChange(money(avgSold), money(avgSoldBefore)),
      average_ticket_price_available_24h_percentage: percentChange(money(ask), money(askBefore)),
      highest_sale_price_24h_percentage: percentChange(money(now24.highest), money(then24.highest)),
      get_in_price_24h_percentage: percentChange(money(cheapest), money(cheapestBefore)),
    });
  }

  if (detail !== 'full') return { ...EMPTY, snapshots };

  // One daily row per UTC day of the window: the day's closing figures and the day's sales.
  const daily: DailyRow[] = [];
  for (let day = Math.floor(windowStart / DAY_MS); day * DAY_MS < end; day++) {
    const close = Math.min(end, (day + 1) * DAY_MS - 1);
    const totals = totalsAt(close);
    const flow = flowBetween(Math.max(day * DAY_MS, windowStart) - 1, close);
    daily.push({
      event_id: eventId,
      stat_date: new Date(day * DAY_MS).toISOString().slice(0, 10),
      tickets_sold: totals.tickets,
      tickets_sold_24h: flow.tickets,
      available_tickets: available(close),
      listings_available: listingsAvailable(close),
      average_ticket_price_sold: money(average(totals)),
      average_ticket_price_available: money(askAverage(close)),
      highest_sale_price: money(totals.highest),
    });
  }

  const saleRows: SaleRow[] = sales.map((s, i) => ({
    event_id: eventId,
    sale_ref: `S-${eventId}-${i + 1}`,
    sold_at: new Date(s.at),
    section: gaOnly ? 'General Admission' : r.pick(SECTIONS),
    row: gaOnly ? '' : String.fromCharCode(65 + r.int(0, 25)),
    quantity: s.quantity,
    price: money(s.price)!,
    currency,
    ticket_type: gaOnly ? 'general_admission' : r.weighted(TICKET_TYPES, [70, 18, 7, 5]),
  }));
  const histogram: HistogramRow = {
    event_id: eventId,
    histogram: priceHistogram(saleRows, currency),
    computed_at: new Date(newest),
  };

  const marketplaceB = event.hasMarketplaceB ? marketplaceBRuns(r, eventId, venue, capacity, newest, fair(newest), currency, sales) : [];
  return { snapshots, daily, sales: saleRows, histogram, marketplaceB };
}
