// The seed's marketplace B rows for an event listed there: three scrape runs, 8 h apart, each
// with its section and offer rows and one statistics-history row (spec 2.3, migration 006).
import { money } from '../stats-formulas.ts';
import type { SeedVenue } from './catalog.ts';
import type { Random } from './random.ts';
import type { Sale } from './statistics.ts';
import { SECTIONS } from './vocabulary.ts';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

export interface MarketplaceBRun {
  event_id: number;
  region: string;
  created_at: Date;
  sections: { section_name: string; capacity: number; available_stock: number; sold_amount: number }[];
  offers: { offer_name: string; offer_stock: number; average_price_fees: string; average_price_no_fees: string; offer_type: number; currency: string }[];
  history: {
    tickets_sold: number;
    tickets_sold_24h: number;
    available_tickets: number;
    listings_available: number;
    capacity: number;
    highest_price: string;
    lowest_price: string;
    average_ticket_price_available: string;
    average_ticket_price_standard: string;
    average_ticket_price_resell: string;
    average_ticket_price_platinum: string;
    average_sales_price: string | null;
    get_in_price: string;
    currency: string;
  };
}

const OFFERS = [
  { offer_name: 'Standard Admission', offer_type: 1, factor: 1, stockShare: 0.7 },
  { offer_name: 'Verified Resale', offer_type: 2, factor: 1.35, stockShare: 0.25 },
  { offer_name: 'Platinum', offer_type: 3, factor: 2.4, stockShare: 0.05 },
];

/** Three scrape runs, 8 h apart, each with its section, offer and aggregate rows. */
export function marketplaceBRuns(
  r: Random,
  eventId: number,
  venue: SeedVenue,
  capacity: number,
  newest: number,
  fairPrice: number,
  currency: string,
  sales: readonly Sale[],
): MarketplaceBRun[] {
  const region = venue.country.code.toLowerCase();
  const sectionNames = SECTIONS.slice(0, r.int(4, 8));
  const perSection = Math.max(10, Math.round(capacity / sectionNames.length));
  let soldShare = 0.35 + 0.5 * r.next();
  const runs: MarketplaceBRun[] = [];
  for (let j = 2; j >= 0; j--) {
    const at = newest - j * 8 * HOUR_MS;
    soldShare = Math.min(0.99, soldShare + 0.01 * r.next());
    const sections = sectionNames.map((section_name) => {
      const sold = Math.min(perSection, Math.round(perSection * soldShare * (0.85 + 0.3 * r.next())));
      return { section_name, capacity: perSection, available_stock: perSection - sold, sold_amount: sold };
    });
    const soldTotal = sections.reduce((n, s) => n + s.sold_amount, 0);
    const stock = sections.reduce((n, s) => n + s.available_stock, 0);
    const offers = OFFERS.map((o) => {
      const noFees = fairPrice * o.factor * (0.95 + 0.1 * r.next());
      return {
        offer_name: o.offer_name,
        offer_stock: Math.round(stock * o.stockShare),
        average_price_fees: money(noFees * 1.17)!,
        average_price_no_fees: money(noFees)!,
        offer_type: o.offer_type,
        currency,
      };
    });
    const recent = sales.filter((s) => s.at > at - DAY_MS && s.at <= at);
    const recentTickets = recent.reduce((n, s) => n + s.quantity, 0);
    runs.push({
      event_id: eventId,
      region,
      created_at: new Date(at),
      sections,
      offers,
      history: {
        tickets_sold: soldTotal,
        tickets_sold_24h: Math.round(soldTotal * 0.01 * r.next()) + recentTickets,
        available_tickets: stock,
        listings_available: Math.ceil(stock / 2),
        capacity: perSection * sectionNames.length,
        highest_price: money(fairPrice * 2.6)!,
        lowest_price: money(fairPrice * 0.55)!,
        average_ticket_price_available: money(fairPrice * 1.1)!,
        average_ticket_price_standard: offers[0]!.average_price_no_fees,
        average_ticket_price_resell: offers[1]!.average_price_no_fees,
        average_ticket_price_platinum: offers[2]!.average_price_no_fees,
        average_sales_price: recentTickets ? money(recent.reduce((v, s) => v + s.price * s.quantity, 0) / recentTickets) : null,
        get_in_price: money(fairPrice * 0.55)!,
        currency,
      },
    });
  }
  return runs;
}

