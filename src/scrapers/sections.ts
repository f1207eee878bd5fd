// Builds spec 2.5's `sections` from what an adapter read off a page: offers or seats tagged with
// their section's name, merged per name, with each section's stock and price range worked out
// here once for every platform (pf_01 included), so "sold out" and "nothing on sale" look the
// same everywhere: the section stays listed with stock 0 and a null price range.
import type { Offer, OfferSection, Seat, SeatMapSection, TicketType } from './types.ts';

export const TICKET_TYPES: readonly TicketType[] = ['standard', 'resale', 'platinum', 'general_admission'];

/** Money as the API reports it: a number rounded to cents. */
export function roundPrice(value: number): number {
  return Math.round(value * 100) / 100;
}

function priceRange(prices: Iterable<number>): { min_price: number | null; max_price: number | null } {
  let min: number | null = null;
  let max: number | null = null;
  for (const p of prices) {
    if (min === null || p < min) min = p;
    if (max === null || p > max) max = p;
  }
  return { min_price: min, max_price: max };
}

/** Collects offers per section name; sections named without an offer stay listed, sold out. */
export class OfferSectionsBuilder {
  private readonly sections = new Map<string, Offer[]>();

  constructor(private readonly currency: string | null) {}

  /** Lists a section even if nothing is on sale in it. */
  section(name: string): this {
    if (!this.sections.has(name)) this.sections.set(name, []);
    return this;
  }

  /** Adds an offer; one with quantity 0 only lists its section (nothing to buy). */
  offer(section: string, offer: Offer): this {
    this.section(section);
    if (offer.quantity > 0) this.sections.get(section)!.push({ ...offer, price: roundPrice(offer.price) });
    return this;
  }

  build(): Record<string, OfferSection> {
    // fromEntries, not assignment: a section may be called "__proto__".
    return Object.fromEntries(
      [...this.sections].map(([name, offers]): [string, OfferSection] => [
        name,
        {
          name,
          currency: this.currency,
          ...priceRange(offers.map((o) => o.price)),
          stock: offers.reduce((sum, o) => sum + o.quantity, 0),
          offers,
        },
      ]),
    );
  }
}

interface SeatMapEntry {
  seats: Seat[];
  /** Tickets sold without a seat (resale lots, standing), with their flags. */
  offers: Offer[];
  /** Tickets the platform counted without listing seats (pf_01 without its seat arm). */
  counted: Partial<Record<TicketType, number>>;
  countedPrices: number[];
}

/**
 * Collects seats per section name. `by_ticket_type` has every ticket type (0 when none is on
 * sale), except the types the scrape could not see, which are left out so "absent" means
 * "unknown" (pf_01 degraded `v1`).
 */
export class SeatMapSectionsBuilder {
  private readonly sections = new Map<string, SeatMapEntry>();

  constructor(
    private readonly currency: string | null,
    private readonly unknownTypes: readonly TicketType[] = [],
  ) {}

  private entry(name: string): SeatMapEntry {
    let entry = this.sections.get(name);
    if (!entry) {
      entry = { seats: [], offers: [], counted: {}, countedPrices: [] };
      this.sections.set(name, entry);
    }
    return entry;
  }

  /** Lists a section even if no seat in it is on sale. */
  section(name: string): this {
    this.entry(name);
    return this;
  }

  seat(section: string, seat: Seat): this {
    this.entry(section).seats.push({ ...seat, price: roundPrice(seat.price) });
    return this;
  }

  /** Tickets sold without a seat of their own; one with quantity 0 only lists its section. */
  offer(section: string, offer: Offer): this {
    const entry = this.entry(section);
    if (offer.quantity > 0) entry.offers.push({ ...offer, price: roundPrice(offer.price) });
    return this;
  }

  /**
   * Tickets known only as a count, without seat detail or flags, with the prices they sell at. Counts add to
   * the listed seats' own, so report only tickets that are not also listed as seats.
   */
  counted(section: string, type: TicketType, count: number, prices: readonly number[] = []): this {
    const entry = this.entry(section);
    entry.counted[type] = (entry.counted[type] ?? 0) + count;
    if (count > 0) entry.countedPrices.push(...prices.map(roundPrice));
    return this;
  }

  build(): Record<string, SeatMapSection> {
    const known = TICKET_TYPES.filter((t) => !this.unknownTypes.includes(t));
    return Object.fromEntries(
      [...this.sections].map(([name, entry]): [string, SeatMapSection] => {
        const byType: Partial<Record<TicketType, number>> = {};
        for (const type of known) byType[type] = entry.counted[type] ?? 0;
        for (const seat of entry.seats) byType[seat.ticket_type] = (byType[seat.ticket_type] ?? 0) + 1;
        for (const offer of entry.offers) byType[offer.ticket_type] = (byType[offer.ticket_type] ?? 0) + offer.quantity;
        const counted = Object.values(entry.counted).reduce((sum, n) => sum + n, 0);
        const offers = [...entry.offers].sort((a, b) => a.price - b.price);
        return [
          name,
          {
            name,
            currency: this.currency,
            ...priceRange([...entry.seats.map((s) => s.price), ...offers.map((o) => o.price), ...entry.countedPrices]),
            stock: entry.seats.length + offers.reduce((sum, o) => sum + o.quantity, 0) + counted,
            seats: entry.seats,
            offers,
            by_ticket_type: byType,
          },
        ];
      }),
    );
  }
}

/** Tickets across all sections (spec 2.5 `total_stock`): 0 when sold out or nothing is listed. */
export function totalStock(sections: Record<string, { stock: number }>): number {
  return Object.values(sections).reduce((sum, s) => sum + s.stock, 0);
}
