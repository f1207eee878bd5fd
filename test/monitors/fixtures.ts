// Builders for the monitor unit tests: snapshot offers and sections, item configs derived from the
// API's ITEM_DEFAULTS, scrape-response sections, and fast-check arbitraries for all of them.
import fc from 'fast-check';
import { ITEM_DEFAULTS } from '../../src/apis/watchlist/schema.ts';
import { monitorConfig, type MonitorConfig } from '../../src/monitors/changes.ts';
import type { SnapshotOffer, SnapshotSection, TargetSnapshot, TicketType } from '../../src/monitors/snapshot.ts';
import type { Offer, OfferSection, Seat, SeatMapSection, EventInfo } from '../../src/scrapers/types.ts';

export const TICKET_TYPES: readonly TicketType[] = ['standard', 'resale', 'platinum', 'general_admission'];

/** The item a client gets when it sends nothing but the target. */
export const DEFAULT_CONFIG: MonitorConfig = monitorConfig({ ...ITEM_DEFAULTS });

/**
 * An item that lets every ticket through and notifies every change: all ticket types on, no
 * thresholds. Tests switch on the single filter they are about.
 */
export const OPEN: MonitorConfig = {
  ...DEFAULT_CONFIG,
  resale_tickets: true,
  general_admission_tickets: true,
  platinum_tickets: true,
  change_type: null,
  stock_threshold_filter: null,
};

export function cfg(over: Partial<MonitorConfig> = {}): MonitorConfig {
  return { ...OPEN, ...over };
}

export function offer(over: Partial<SnapshotOffer> = {}): SnapshotOffer {
  const quantity = over.quantity ?? 2;
  return {
    price: 50,
    quantity,
    block: quantity,
    ticket_type: 'standard',
    restricted_view: false,
    accessible: false,
    presale: false,
    row: null,
    ...over,
  };
}

export function section(name: string, offers: SnapshotOffer[], currency: string | null = 'EUR'): SnapshotSection {
  return { name, currency, offers };
}

export function snap(sections: SnapshotSection[], starts_at: string | null = '2030-06-15T20:00:00+02:00'): TargetSnapshot {
  return { starts_at, sections };
}

/** A one-section snapshot. */
export function one(name: string, ...offers: SnapshotOffer[]): TargetSnapshot {
  return snap([section(name, offers)]);
}

// ---- scrape responses ----

export const EVENT_INFO: EventInfo = {
  name: 'Concert',
  venue: 'Hall',
  city: 'Berlin',
  country: 'de',
  starts_at: '2030-06-15T20:00:00+02:00',
  currency: 'EUR',
  url: null,
};

const FLAGS = { ticket_type: 'standard', restricted_view: false, accessible: false, presale: false } as const;

export function rawOffer(id: string, price: number, quantity: number, over: Partial<Offer> = {}): Offer {
  return { id, price, quantity, ...FLAGS, ...over };
}

export function seat(row: string, seatNo: string, price: number, over: Partial<Seat> = {}): Seat {
  return { row, seat: seatNo, price, ...FLAGS, ...over };
}

function summary(name: string, prices: number[], stock: number) {
  return {
    name,
    currency: 'EUR',
    min_price: prices.length ? Math.min(...prices) : null,
    max_price: prices.length ? Math.max(...prices) : null,
    stock,
  };
}

export function offerSection(name: string, offers: Offer[]): OfferSection {
  const live = offers.filter((o) => o.quantity > 0);
  return { ...summary(name, live.map((o) => o.price), live.reduce((n, o) => n + o.quantity, 0)), offers };
}

/** A seat map section: its seats, and its tickets sold without a seat (pf_01 resale lots, standing). */
export function seatMapSection(name: string, seats: Seat[], by_ticket_type: SeatMapSection['by_ticket_type'] = {}, offers: Offer[] = []): SeatMapSection {
  const live = offers.filter((o) => o.quantity > 0);
  const prices = [...seats.map((s) => s.price), ...live.map((o) => o.price)];
  return { ...summary(name, prices, seats.length + live.reduce((n, o) => n + o.quantity, 0)), seats, offers, by_ticket_type };
}

/** A seat map whose seat-level arm is missing (pf_01 degraded `v2`). */
export function degradedSection(name: string, min_price: number | null, by_ticket_type: SeatMapSection['by_ticket_type']): SeatMapSection {
  const stock = Object.values(by_ticket_type).reduce((n, c) => n + (c ?? 0), 0);
  return { name, currency: 'EUR', min_price, max_price: min_price === null ? null : min_price + 10, stock, seats: [], offers: [], by_ticket_type };
}

export function response(sections: (OfferSection | SeatMapSection)[], event_info: EventInfo | null = EVENT_INFO) {
  return { sections: Object.fromEntries(sections.map((s) => [s.name, s])), event_info };
}

// ---- arbitraries ----

/** Small pools so that random snapshots and configs overlap (same sections, rows, prices). */
const SECTION_NAMES = ['Floor', 'floor', 'Block A', 'Block B', 'Balcony Left', 'VIP Lounge'];
const ROWS = ['A', 'a', 'B', '1', '12'];
const DAYS = ['2030-06-14', '2030-06-15', '2030-06-16'];

export const priceArb = fc.integer({ min: 0, max: 400 }).map((c) => c / 4); // 0 .. 100 in quarters

export const ticketTypeArb = fc.constantFrom(...TICKET_TYPES);

export const snapshotOfferArb: fc.Arbitrary<SnapshotOffer> = fc
  .record({
    price: priceArb,
    quantity: fc.integer({ min: 1, max: 6 }),
    blockCut: fc.integer({ min: 0, max: 5 }),
    ticket_type: ticketTypeArb,
    restricted_view: fc.boolean(),
    accessible: fc.boolean(),
    presale: fc.boolean(),
    row: fc.option(fc.constantFrom(...ROWS), { nil: null }),
  })
  .map(({ blockCut, ...o }) => ({ ...o, block: Math.max(1, o.quantity - blockCut) }));

export const snapshotArb: fc.Arbitrary<TargetSnapshot> = fc.record({
  starts_at: fc.option(
    fc.constantFrom(...DAYS).map((d) => `${d}T19:30:00+01:00`),
    { nil: null },
  ),
  sections: fc.uniqueArray(
    fc.record({
      name: fc.constantFrom(...SECTION_NAMES),
      currency: fc.constantFrom('EUR', 'GBP', null),
      offers: fc.array(snapshotOfferArb, { maxLength: 5 }),
    }),
    { maxLength: 4, selector: (s) => s.name },
  ),
});

/** Two snapshots of the same target, the second often an edit of the first. */
export const snapshotPairArb: fc.Arbitrary<[TargetSnapshot, TargetSnapshot]> = fc.oneof(
  fc.tuple(snapshotArb, snapshotArb),
  snapshotArb.chain((s) =>
    fc
      .tuple(
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: -2, max: 2 }), fc.integer({ min: -20, max: 20 })), { maxLength: 6 }),
        snapshotOfferArb,
        fc.boolean(),
      )
      .map(([edits, extra, add]): [TargetSnapshot, TargetSnapshot] => {
        const next: TargetSnapshot = structuredClone(s);
        for (const [i, dq, dp] of edits) {
          const all = next.sections.flatMap((sec) => sec.offers);
          const o = all[i % Math.max(all.length, 1)];
          if (!o) break;
          o.quantity = Math.max(0, o.quantity + dq);
          o.block = Math.min(o.block, o.quantity);
          o.price = Math.max(0, o.price + dp / 4);
        }
        for (const sec of next.sections) sec.offers = sec.offers.filter((o) => o.quantity > 0);
        if (add && next.sections[0]) next.sections[0].offers.push(extra);
        return [s, next];
      }),
  ),
);

/** Null three times in four: each filter is set now and then, so that configs still let tickets through. */
const rarely = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | null> =>
  fc.oneof({ arbitrary: fc.constant(null), weight: 3 }, { arbitrary: arb, weight: 1 });
/** Flags lean to the open value for the same reason. */
const mostly = (v: boolean) => fc.constantFrom(v, v, v, !v);

function ordered(lo: number | null, hi: number | null): [number | null, number | null] {
  return lo !== null && hi !== null && lo > hi ? [hi, lo] : [lo, hi];
}

const denseConfigArb: fc.Arbitrary<MonitorConfig> = fc
  .record({
    section: rarely(fc.constantFrom(...SECTION_NAMES, 'FLOOR', 'nowhere')),
    keywords: rarely(fc.array(fc.constantFrom('block', 'LEFT', 'vip', 'oo', 'zz'), { maxLength: 3 })),
    date_filter: rarely(fc.record({ from: fc.option(fc.constantFrom(...DAYS), { nil: null }), to: fc.option(fc.constantFrom(...DAYS), { nil: null }) })),
    row_filter: rarely(fc.array(fc.constantFrom(...ROWS, 'Z'), { maxLength: 3 })),
    min_price_filter: rarely(priceArb),
    max_price_filter: rarely(priceArb),
    seat_quantity: fc.oneof({ arbitrary: fc.constant(1), weight: 2 }, { arbitrary: fc.integer({ min: 1, max: 6 }), weight: 1 }),
    standard_tickets: mostly(true),
    resale_tickets: mostly(true),
    general_admission_tickets: mostly(true),
    platinum_tickets: mostly(true),
    no_restricted_view: mostly(false),
    no_accessibility: mostly(false),
    no_presale: mostly(false),
    change_type: fc.constantFrom(null, 'stock_increase', 'price_decrease', 'price_increase'),
    stock_threshold_filter: rarely(fc.integer({ min: 0, max: 20 })),
    stock_threshold_filter_max: rarely(fc.integer({ min: 0, max: 40 })),
    min_avg_price_threshold: rarely(priceArb),
    max_avg_price_threshold: rarely(priceArb),
  })
  .map((c): MonitorConfig => {
    const [min_price_filter, max_price_filter] = ordered(c.min_price_filter, c.max_price_filter);
    const [stock_threshold_filter, stock_threshold_filter_max] = ordered(c.stock_threshold_filter, c.stock_threshold_filter_max);
    const [min_avg_price_threshold, max_avg_price_threshold] = ordered(c.min_avg_price_threshold, c.max_avg_price_threshold);
    return {
      ...DEFAULT_CONFIG,
      ...c,
      min_price_filter,
      max_price_filter,
      stock_threshold_filter,
      stock_threshold_filter_max,
      min_avg_price_threshold,
      max_avg_price_threshold,
    };
  });

// Scrape-response arbitraries: distinct section names (they key the record), offers with
// distinct ids, seats with distinct (row, seat) per section, as adapters produce them.
const rawFlagsArb = fc.record({
  ticket_type: ticketTypeArb,
  restricted_view: fc.boolean(),
  accessible: fc.boolean(),
  presale: fc.boolean(),
});

const rawOffersArb = fc
  .array(fc.record({ price: priceArb, quantity: fc.integer({ min: 0, max: 6 }), flags: rawFlagsArb }), { maxLength: 6 })
  .map((os) => os.map(({ price, quantity, flags }, i) => ({ id: `o${i}`, price, quantity, ...flags })));

const rawSeatsArb = fc
  .uniqueArray(
    fc.record({
      row: fc.constantFrom('A', 'B', 'C'),
      seat: fc.oneof(fc.integer({ min: 1, max: 12 }).map(String), fc.constantFrom('A1', 'box')),
      price: fc.constantFrom(20, 35.5, 60),
      flags: fc.constantFrom(
        { ...FLAGS },
        { ...FLAGS, restricted_view: true },
        { ...FLAGS, ticket_type: 'resale' as const },
        { ...FLAGS, presale: true },
      ),
    }),
    { maxLength: 14, selector: (s) => `${s.row}/${s.seat}` },
  )
  .map((ss) => ss.map(({ flags, ...s }) => ({ ...s, ...flags })));

export const rawSectionArb = (name: string): fc.Arbitrary<OfferSection | SeatMapSection> =>
  fc.oneof(
    rawOffersArb.map((os) => offerSection(name, os)),
    rawSeatsArb.map((ss) => seatMapSection(name, ss)),
    // pf_01's mixed sections: seats beside resale lots and standing counts.
    fc.tuple(rawSeatsArb, rawOffersArb).map(([ss, os]) => seatMapSection(name, ss, {}, os)),
    fc
      .record({
        min_price: fc.option(priceArb, { nil: null }),
        by: fc.record({ standard: fc.nat(5), resale: fc.nat(5) }, { requiredKeys: [] }),
      })
      .map(({ min_price, by }) => degradedSection(name, min_price, by)),
  );

export const rawSectionsArb: fc.Arbitrary<(OfferSection | SeatMapSection)[]> = fc
  .uniqueArray(fc.constantFrom(...SECTION_NAMES, 'Stalls', 'Äußere Loge', 'zeta'), { maxLength: 5 })
  .chain((names) => fc.tuple(...names.map(rawSectionArb)));

/** A permutation of `xs`. */
export function permutationArb<T>(xs: readonly T[]): fc.Arbitrary<T[]> {
  return fc.shuffledSubarray([...xs], { minLength: xs.length, maxLength: xs.length });
}

const FILTER_FIELDS = [
  'section',
  'keywords',
  'date_filter',
  'row_filter',
  'min_price_filter',
  'max_price_filter',
  'seat_quantity',
  'standard_tickets',
  'resale_tickets',
  'general_admission_tickets',
  'platinum_tickets',
  'no_restricted_view',
  'no_accessibility',
  'no_presale',
  'stock_threshold_filter',
  'stock_threshold_filter_max',
  'min_avg_price_threshold',
  'max_avg_price_threshold',
] as const satisfies readonly (keyof MonitorConfig)[];

/**
 * Random item configs: half with every filter drawn, half OPEN with one to three filters drawn
 * (so that many random pairs of snapshots still produce changes to check).
 */
export const configArb: fc.Arbitrary<MonitorConfig> = fc.oneof(
  denseConfigArb,
  fc
    .tuple(denseConfigArb, fc.subarray([...FILTER_FIELDS], { minLength: 1, maxLength: 3 }))
    .map(([c, keys]): MonitorConfig => ({ ...OPEN, change_type: c.change_type, ...Object.fromEntries(keys.map((k) => [k, c[k]])) })),
);
