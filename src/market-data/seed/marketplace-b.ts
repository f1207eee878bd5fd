// The seed's marketplace B rows for an event listed there: three scrape runs, 8 h apart, each
// with its section and offer rows and one statistics-history row (spec 2.3, migration 006),
// derived by the tracker's own formulas (rollup.ts mbStatistics).
import { DAY_MS, MB_OFFER_TYPE_CODES, mbStatistics, type MbOffer, type MbSection, type MbStatisticsFigures } from '../rollup.ts';
import { roundPrice } from '../../scrapers/sections.ts';
import { money } from '../stats-formulas.ts';
import { HOUR_MS, type SeedVenue } from './catalog.ts';
import type { Random } from './random.ts';
import type { Sale } from './statistics.ts';
import { SECTIONS } from './vocabulary.ts';

export interface MarketplaceBRun {
  event_id: number;
  region: string;
  created_at: Date;
  sections: { section_name: string; capacity: number; available_stock: number; sold_amount: number }[];
  offers: { offer_name: string; offer_stock: number; average_price_fees: string; average_price_no_fees: string; offer_type: number; currency: string }[];
  /** The run's mb_statistics_history row: mbStatistics(), as tracking writes it. */
  history: MbStatisticsFigures;
}

const OFFERS: { name: string; type: MbOffer['type']; factor: number; stockShare: number }[] = [
  { name: 'Standard Admission', type: 'standard', factor: 1, stockShare: 0.7 },
  { name: 'Verified Resale', type: 'resale', factor: 1.35, stockShare: 0.25 },
  { name: 'Platinum', type: 'platinum', factor: 2.4, stockShare: 0.05 },
];

/** Whole cents, as a scraped page's prices are. */

/**
 * Three scrape runs, 8 h apart, each with its section, offer and statistics rows. The
 * statistics are mbStatistics() over the run's sections and offers, as the tracker writes them
 * (tracking-store.ts): tickets_sold_24h against the newest earlier run at least 24 h old, or
 * the oldest run (tracking began less than 24 h before); the page's average sale price is the
 * marketplace A sales' of the 24 h before the run.
 */
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
    const sections: MbSection[] = sectionNames.map((name) => {
      const sold = Math.min(perSection, Math.round(perSection * soldShare * (0.85 + 0.3 * r.next())));
      return { name, capacity: perSection, available: perSection - sold, sold };
    });
    const stock = sections.reduce((n, s) => n + s.available, 0);
    const offers: MbOffer[] = OFFERS.map((o) => {
      const noFees = fairPrice * o.factor * (0.95 + 0.1 * r.next());
      return { name: o.name, stock: Math.round(stock * o.stockShare), price: roundPrice(noFees * 1.17), face_price: roundPrice(noFees), type: o.type, currency };
    });
    const recent = sales.filter((s) => s.at > at - DAY_MS && s.at <= at);
    const recentTickets = recent.reduce((n, s) => n + s.quantity, 0);
    // Runs are in time order: the newest one at least 24 h old, else the first.
    const earlier = [...runs].reverse().find((run) => run.created_at.getTime() <= at - DAY_MS) ?? runs[0];
    runs.push({
      event_id: eventId,
      region,
      created_at: new Date(at),
      sections: sections.map((s) => ({ section_name: s.name, capacity: s.capacity, available_stock: s.available, sold_amount: s.sold })),
      offers: offers.map((o) => ({
        offer_name: o.name,
        offer_stock: o.stock,
        average_price_fees: money(o.price)!,
        average_price_no_fees: money(o.face_price)!,
        offer_type: MB_OFFER_TYPE_CODES[o.type],
        currency: o.currency,
      })),
      history: mbStatistics({
        sections,
        offers,
        currency,
        averageSalePrice: recentTickets ? recent.reduce((v, s) => v + s.price * s.quantity, 0) / recentTickets : null,
        earlierTicketsSold: earlier ? earlier.history.tickets_sold : null,
      }),
    });
  }
  return runs;
}
