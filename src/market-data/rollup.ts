// The tracker's roll-up arithmetic, pure: what a marketplace A snapshot, its daily rows and a
// marketplace B statistics row say, given what a scrape saw and what is already on file. The
// tracker's store (tracking-store.ts) only reads the inputs and writes the outputs. Money is
// summed in whole cents and rendered as decimal strings through stats-formulas.ts, so figures
// never carry float artefacts. Meanings (migration 006, docs/market-data.md "Event tracking → Figures"):
//
// Marketplace A, at `capturedAt`, from the event's listings on the page and every sale on file:
// - tickets_sold / listings_sold: tickets / sales ever seen; their `_24h` the same within the
//   24 h before capturedAt; available_tickets / listings_available: tickets / listings on sale.
// - Money figures (average_ticket_price_sold, highest_sale_price, total_volume and their 24 h
//   values) are over the sales in `currency`: the dominant sale currency (most tickets, ties to
//   the alphabetically first), or the listings' currency while nothing has sold. Listing figures (average_ticket_price_available,
//   quantity-weighted; get_in_price, the cheapest ticket) are in the listings' currency.
// - For a level, `X_24h` is the value of the newest snapshot at least 24 h old (null if none).
// - `X_24h_percentage` is X now against X 24 h before, in percent of the latter: for a flow its
//   earlier value is the same figure over the sales up to 24 h before (for tickets_sold:
//   tickets_sold - tickets_sold_24h).
import { cents, money, percentChange } from './stats-formulas.ts';

export const DAY_MS = 24 * 3_600_000;

export interface RollupSale {
  sold_at: Date | string;
  quantity: number;
  /** Per ticket. */
  price: number | string;
  currency: string;
}

export interface RollupListing {
  quantity: number;
  price: number | string;
  ticket_type: string;
}

/** The level figures of the snapshot 24 h earlier, as stored (numeric arrives as text). */
export interface EarlierLevels {
  available_tickets: number | null;
  listings_available: number | null;
  average_ticket_price_available: string | number | null;
  get_in_price: string | number | null;
}

export interface MaSnapshotFigures {
  captured_at: Date;
  currency: string;
  tickets_sold: number;
  tickets_sold_24h: number;
  tickets_sold_24h_percentage: string | null;
  listings_sold: number;
  listings_sold_24h: number;
  listings_sold_24h_percentage: string | null;
  listings_available: number;
  listings_available_24h: number | null;
  listings_available_24h_percentage: string | null;
  available_tickets: number;
  available_tickets_24h: number | null;
  available_tickets_24h_percentage: string | null;
  is_general_admission_only: boolean | null;
  average_ticket_price_sold: string | null;
  average_ticket_price_sold_24h: string | null;
  average_ticket_price_sold_24h_percentage: string | null;
  average_ticket_price_available: string | null;
  average_ticket_price_available_24h: string | null;
  average_ticket_price_available_24h_percentage: string | null;
  highest_sale_price: string | null;
  highest_sale_price_24h: string | null;
  highest_sale_price_24h_percentage: string | null;
  get_in_price: string | null;
  get_in_price_24h: string | null;
  get_in_price_24h_percentage: string | null;
  total_volume: string | null;
}

function time(t: Date | string): number {
  return t instanceof Date ? t.getTime() : Date.parse(t);
}

/**
 * The currency most tickets were sold in, ties to the alphabetically first (as the read
 * endpoints' event.currency, src/apis/market-data/sale-currency.ts); `fallback` with no sales.
 */
export function dominantCurrency(sales: readonly RollupSale[], fallback: string): string {
  const tickets = new Map<string, number>();
  for (const s of sales) tickets.set(s.currency, (tickets.get(s.currency) ?? 0) + s.quantity);
  let best = fallback;
  let most = 0;
  for (const [currency, n] of [...tickets].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (n > most) {
      best = currency;
      most = n;
    }
  }
  return best;
}

export interface SalesFigures {
  tickets: number;
  listings: number;
  /** Over the sales in the roll-up currency only. */
  average: string | null;
  highest: string | null;
  volume: string | null;
}

/** Counts over every sale; money over those in `currency`. */
export function salesFigures(sales: readonly RollupSale[], currency: string): SalesFigures {
  let tickets = 0;
  let pricedTickets = 0;
  let volumeCents = 0;
  let highestCents: number | null = null;
  for (const s of sales) {
    tickets += s.quantity;
    if (s.currency !== currency) continue;
    const c = cents(s.price);
    pricedTickets += s.quantity;
    volumeCents += c * s.quantity;
    if (highestCents === null || c > highestCents) highestCents = c;
  }
  return {
    tickets,
    listings: sales.length,
    average: pricedTickets ? money(volumeCents / pricedTickets / 100) : null,
    highest: highestCents === null ? null : money(highestCents / 100),
    volume: pricedTickets ? money(volumeCents / 100) : null,
  };
}

export interface ListingFigures {
  listings: number;
  tickets: number;
  average: string | null;
  getIn: string | null;
  generalAdmissionOnly: boolean | null;
}

export function listingFigures(listings: readonly RollupListing[]): ListingFigures {
  let tickets = 0;
  let totalCents = 0;
  let lowest: number | null = null;
  for (const l of listings) {
    const c = cents(l.price);
    tickets += l.quantity;
    totalCents += c * l.quantity;
    if (lowest === null || c < lowest) lowest = c;
  }
  return {
    listings: listings.length,
    tickets,
    average: tickets ? money(totalCents / tickets / 100) : null,
    getIn: lowest === null ? null : money(lowest / 100),
    generalAdmissionOnly: listings.length ? listings.every((l) => l.ticket_type === 'general_admission') : null,
  };
}

/**
 * A marketplace A snapshot at `capturedAt`: `listings` as the page shows them (in
 * `listingCurrency`), `sales` every sale of the event on file, `earlier` the newest snapshot at
 * least 24 h old (null when there is none).
 */
export function maSnapshot(input: {
  capturedAt: Date;
  listings: readonly RollupListing[];
  listingCurrency: string;
  sales: readonly RollupSale[];
  earlier: EarlierLevels | null;
}): MaSnapshotFigures {
  const { capturedAt, earlier } = input;
  const currency = dominantCurrency(input.sales, input.listingCurrency);
  const dayAgo = capturedAt.getTime() - DAY_MS;
  const before = input.sales.filter((s) => time(s.sold_at) <= dayAgo);
  const within = input.sales.filter((s) => time(s.sold_at) > dayAgo);
  const all = salesFigures(input.sales, currency);
  const then = salesFigures(before, currency);
  const recent = salesFigures(within, currency);
  const now = listingFigures(input.listings);
  const levelBefore = {
    available: earlier?.available_tickets ?? null,
    listings: earlier?.listings_available ?? null,
    average: earlier ? money(earlier.average_ticket_price_available) : null,
    getIn: earlier ? money(earlier.get_in_price) : null,
  };
  return {
    captured_at: capturedAt,
    currency,
    tickets_sold: all.tickets,
    tickets_sold_24h: recent.tickets,
    tickets_sold_24h_percentage: percentChange(all.tickets, then.tickets),
    listings_sold: all.listings,
    listings_sold_24h: recent.listings,
    listings_sold_24h_percentage: percentChange(all.listings, then.listings),
    listings_available: now.listings,
    listings_available_24h: levelBefore.listings,
    listings_available_24h_percentage: percentChange(now.listings, levelBefore.listings),
    available_tickets: now.tickets,
    available_tickets_24h: levelBefore.available,
    available_tickets_24h_percentage: percentChange(now.tickets, levelBefore.available),
    is_general_admission_only: now.generalAdmissionOnly,
    average_ticket_price_sold: all.average,
    average_ticket_price_sold_24h: recent.average,
    average_ticket_price_sold_24h_percentage: percentChange(all.average, then.average),
    average_ticket_price_available: now.average,
    average_ticket_price_available_24h: levelBefore.average,
    average_ticket_price_available_24h_percentage: percentChange(now.average, levelBefore.average),
    highest_sale_price: all.highest,
    highest_sale_price_24h: recent.highest,
    highest_sale_price_24h_percentage: percentChange(all.highest, then.highest),
    get_in_price: now.getIn,
    get_in_price_24h: levelBefore.getIn,
    get_in_price_24h_percentage: percentChange(now.getIn, levelBefore.getIn),
    total_volume: all.volume,
  };
}

/** The UTC calendar date of an instant, as `YYYY-MM-DD`. */
export function utcDate(t: Date | string): string {
  return new Date(time(t)).toISOString().slice(0, 10);
}

export interface MaDailyFigures {
  stat_date: string;
  tickets_sold: number;
  /** Tickets sold on that (UTC) day. */
  tickets_sold_24h: number;
  average_ticket_price_sold: string | null;
  highest_sale_price: string | null;
  /** Levels: from the day's last snapshot; null for a past day the tracker had no snapshot of. */
  available_tickets: number | null;
  listings_available: number | null;
  average_ticket_price_available: string | null;
}

/**
 * The daily rows to write after a snapshot: the snapshot's own day (its levels and the sales up
 * to it) and every earlier day on which a sale first seen now was made (the sales up to that
 * day's end; levels unknown, so null: the store keeps what a row already had).
 */
export function maDailyRows(input: { snapshot: MaSnapshotFigures; sales: readonly RollupSale[]; newSaleDates: readonly string[] }): MaDailyFigures[] {
  const { snapshot, sales } = input;
  const today = utcDate(snapshot.captured_at);
  const days = [...new Set([...input.newSaleDates.filter((d) => d < today), today])].sort();
  return days.map((day) => {
    const end = Date.parse(`${day}T00:00:00Z`) + DAY_MS;
    const upTo = day === today ? sales : sales.filter((s) => time(s.sold_at) < end);
    const figures = salesFigures(upTo, snapshot.currency);
    const onDay = sales.filter((s) => utcDate(s.sold_at) === day).reduce((n, s) => n + s.quantity, 0);
    const levels = day === today;
    return {
      stat_date: day,
      tickets_sold: figures.tickets,
      tickets_sold_24h: onDay,
      average_ticket_price_sold: figures.average,
      highest_sale_price: figures.highest,
      available_tickets: levels ? snapshot.available_tickets : null,
      listings_available: levels ? snapshot.listings_available : null,
      average_ticket_price_available: levels ? snapshot.average_ticket_price_available : null,
    };
  });
}

// ----------------------------------------------------------------------------------------------
// Marketplace B: one statistics row per scrape run (mb_statistics_history).

export const MB_OFFER_TYPE_CODES = { standard: 1, resale: 2, platinum: 3 } as const;

export interface MbSection {
  name: string;
  capacity: number;
  available: number;
  sold: number;
}

export interface MbOffer {
  name: string;
  stock: number;
  /** Per ticket, fees included. */
  price: number;
  face_price: number;
  type: keyof typeof MB_OFFER_TYPE_CODES;
  currency: string;
}

export interface MbStatisticsFigures {
  tickets_sold: number;
  tickets_sold_24h: number;
  available_tickets: number;
  listings_available: number;
  capacity: number | null;
  highest_price: string | null;
  lowest_price: string | null;
  average_ticket_price_available: string | null;
  average_ticket_price_standard: string | null;
  average_ticket_price_resell: string | null;
  average_ticket_price_platinum: string | null;
  average_sales_price: string | null;
  get_in_price: string | null;
  currency: string;
}

function weightedAverage(offers: readonly MbOffer[]): string | null {
  const stock = offers.reduce((n, o) => n + o.stock, 0);
  return stock ? money(offers.reduce((n, o) => n + cents(o.price) * o.stock, 0) / stock / 100) : null;
}

/**
 * A marketplace B statistics row: counts from the sections (tickets sold and available,
 * capacity), prices from the offers in stock in the page's currency (with fees; averages
 * weighted by stock), `listings_available` the offers in stock. `earlierTicketsSold` is
 * tickets_sold of the newest row at least 24 h old, or of the oldest row when tracking began
 * less than 24 h ago (null: no earlier row); tickets_sold_24h is the rise since (never below 0).
 */
export function mbStatistics(input: {
  sections: readonly MbSection[];
  offers: readonly MbOffer[];
  currency: string;
  averageSalePrice: number | null;
  earlierTicketsSold: number | null;
}): MbStatisticsFigures {
  const { sections, currency } = input;
  const ticketsSold = sections.reduce((n, s) => n + s.sold, 0);
  const inStock = input.offers.filter((o) => o.stock > 0 && o.currency === currency);
  const prices = inStock.map((o) => cents(o.price));
  const lowest = prices.length ? money(Math.min(...prices) / 100) : null;
  return {
    tickets_sold: ticketsSold,
    tickets_sold_24h: input.earlierTicketsSold === null ? 0 : Math.max(0, ticketsSold - input.earlierTicketsSold),
    available_tickets: sections.reduce((n, s) => n + s.available, 0),
    listings_available: input.offers.filter((o) => o.stock > 0).length,
    capacity: sections.length ? sections.reduce((n, s) => n + s.capacity, 0) : null,
    highest_price: prices.length ? money(Math.max(...prices) / 100) : null,
    lowest_price: lowest,
    average_ticket_price_available: weightedAverage(inStock),
    average_ticket_price_standard: weightedAverage(inStock.filter((o) => o.type === 'standard')),
    average_ticket_price_resell: weightedAverage(inStock.filter((o) => o.type === 'resale')),
    average_ticket_price_platinum: weightedAverage(inStock.filter((o) => o.type === 'platinum')),
    average_sales_price: money(input.averageSalePrice),
    get_in_price: lowest,
    currency,
  };
}
