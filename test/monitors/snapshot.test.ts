// A scrape response reduced to a target snapshot (src/monitors/snapshot.ts): offer sections,
// seat maps grouped into blocks, the degraded seat map's fallback, and the canonical order that
// makes equal content hash equally and any change in price or quantity hash differently.
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SNAPSHOT_FORMAT, snapshotHash, toSnapshot, type TargetSnapshot } from '../../src/monitors/snapshot.ts';
import type { OfferSection, SeatMapSection } from '../../src/scrapers/types.ts';
import {
  degradedSection,
  EVENT_INFO,
  offerSection,
  permutationArb,
  rawOffer,
  rawSectionsArb,
  response,
  seat,
  seatMapSection,
} from './fixtures.ts';

const base = { ticket_type: 'standard', restricted_view: false, accessible: false, presale: false, row: null } as const;

describe('offer sections', () => {
  it('one snapshot offer per offer, its tickets one block, zero-quantity offers dropped, cheapest first', () => {
    const s = toSnapshot(
      response([
        offerSection('Floor', [
          rawOffer('x1', 80, 2, { ticket_type: 'resale', presale: true }),
          rawOffer('x2', 45.5, 0),
          rawOffer('x3', 45.5, 4, { restricted_view: true, accessible: true }),
          rawOffer('x4', 30, 1),
        ]),
      ]),
    );
    expect(s).toEqual({
      format: SNAPSHOT_FORMAT,
      starts_at: '2030-06-15T20:00:00+02:00',
      sections: [
        {
          name: 'Floor',
          currency: 'EUR',
          offers: [
            { ...base, price: 30, quantity: 1, block: 1 },
            { ...base, price: 45.5, quantity: 4, block: 4, restricted_view: true, accessible: true },
            { ...base, price: 80, quantity: 2, block: 2, ticket_type: 'resale', presale: true },
          ],
        },
      ],
    });
  });

  it('a section with only zero-quantity offers stays, with no offers', () => {
    const s = toSnapshot(response([offerSection('Floor', [rawOffer('x', 10, 0)])]));
    expect(s.sections).toEqual([{ name: 'Floor', currency: 'EUR', offers: [] }]);
  });

  it('starts_at comes from event_info, null without it', () => {
    expect(toSnapshot(response([], { ...EVENT_INFO, starts_at: '2031-01-02T03:04:05Z' })).starts_at).toBe('2031-01-02T03:04:05Z');
    expect(toSnapshot(response([], { ...EVENT_INFO, starts_at: null })).starts_at).toBeNull();
    expect(toSnapshot(response([], null))).toEqual({ format: SNAPSHOT_FORMAT, starts_at: null, sections: [] });
  });

  it('sections come in name order whatever the record order', () => {
    const s = toSnapshot(response([offerSection('b', []), offerSection('C', []), offerSection('a', []), offerSection('B', [])]));
    // Code-unit order: upper case before lower case.
    expect(s.sections.map((x) => x.name)).toEqual(['B', 'C', 'a', 'b']);
  });
});

describe('seat maps', () => {
  it('groups seats by (row, price, flags); block is the longest run of consecutive seat numbers', () => {
    const s = toSnapshot(
      response([
        seatMapSection('Block A', [
          seat('A', '5', 20),
          seat('A', '1', 20),
          seat('B', '11', 20),
          seat('A', '3', 20),
          seat('A', '7', 20, { restricted_view: true }),
          seat('A', '2', 20),
          seat('A', '4', 30),
          seat('B', '10', 20),
          seat('A', '8', 20, { restricted_view: true }),
          seat('A', '6', 20, { presale: true }),
        ]),
      ]),
    );
    expect(s.sections).toEqual([
      {
        name: 'Block A',
        currency: 'EUR',
        offers: [
          // A 1,2,3,5 at 20: 4 seats, 1-2-3 together.
          { ...base, row: 'A', price: 20, quantity: 4, block: 3 },
          // A 6 at 20 presale (same row and price, other flags: its own group).
          { ...base, row: 'A', price: 20, quantity: 1, block: 1, presale: true },
          { ...base, row: 'A', price: 20, quantity: 2, block: 2, restricted_view: true },
          { ...base, row: 'B', price: 20, quantity: 2, block: 2 },
          // A 4 at 30: another price, its own group even though it sits between 3 and 5.
          { ...base, row: 'A', price: 30, quantity: 1, block: 1 },
        ],
      },
    ]);
  });

  it('ticket type, accessibility and presale split groups', () => {
    const s = toSnapshot(
      response([
        seatMapSection('S', [
          seat('R', '1', 10),
          seat('R', '2', 10, { ticket_type: 'resale' }),
          seat('R', '3', 10, { accessible: true }),
          seat('R', '4', 10, { presale: true }),
          seat('R', '5', 10),
        ]),
      ]),
    );
    const offers = s.sections[0]!.offers;
    expect(offers).toHaveLength(4);
    expect(offers.map((o) => [o.ticket_type, o.accessible, o.presale, o.quantity, o.block])).toEqual(
      expect.arrayContaining([
        ['standard', false, false, 2, 1],
        ['resale', false, false, 1, 1],
        ['standard', true, false, 1, 1],
        ['standard', false, true, 1, 1],
      ]),
    );
  });

  it.each([
    [['A1', 'A2', 'box'], 1],
    [['7', 'x', '8', 'y'], 2],
    [['12', '10', '11'], 3],
    [['1', '3', '5', '7'], 1],
    [['9', '10', '2', '3', '4', '5'], 4],
    [['5'], 1],
  ])('block of seats %j is %i (a non-numeric seat is a run of one)', (seats, block) => {
    const s = toSnapshot(response([seatMapSection('S', seats.map((n) => seat('R', n, 10)))]));
    expect(s.sections[0]!.offers).toEqual([{ ...base, row: 'R', price: 10, quantity: seats.length, block }]);
  });

  it('tickets known only as a count (no price each, no row, no flag: pf_01 without its seat arm) are not read', () => {
    const s = toSnapshot(response([degradedSection('Upper', 45, { standard: 3, resale: 0, platinum: 2 })]));
    expect(s.sections).toEqual([{ name: 'Upper', currency: 'EUR', offers: [] }]);
  });

  it("a seat map's tickets without a seat (resale lots, standing) are read beside its seats, each with its flags (issue 24)", () => {
    const lots = [
      rawOffer('R1-1-1', 95, 4, { ticket_type: 'resale', restricted_view: true }),
      rawOffer('ga-1', 40, 30, { ticket_type: 'general_admission', presale: true }),
      rawOffer('R1-1-2', 95, 0, { ticket_type: 'resale' }),
    ];
    const s = toSnapshot(response([seatMapSection('Floor', [seat('A', '1', 120), seat('A', '2', 120)], {}, lots)]));
    expect(s.sections[0]!.offers).toEqual([
      { ...base, price: 40, quantity: 30, block: 30, ticket_type: 'general_admission', presale: true },
      { ...base, price: 95, quantity: 4, block: 4, ticket_type: 'resale', restricted_view: true },
      { ...base, row: 'A', price: 120, quantity: 2, block: 2 },
    ]);
  });

  it('degraded seat map without a min_price, or with no counts, has no offers', () => {
    const s = toSnapshot(response([degradedSection('Upper', null, { standard: 3 }), degradedSection('Lower', 20, {})]));
    expect(s.sections).toEqual([
      { name: 'Lower', currency: 'EUR', offers: [] },
      { name: 'Upper', currency: 'EUR', offers: [] },
    ]);
  });

  it('a seat map with seats ignores by_ticket_type', () => {
    const s = toSnapshot(response([seatMapSection('S', [seat('A', '1', 10)], { standard: 50, resale: 9 })]));
    expect(s.sections[0]!.offers).toEqual([{ ...base, row: 'A', price: 10, quantity: 1, block: 1 }]);
  });
});

describe('snapshotHash', () => {
  const sections = (): (OfferSection | SeatMapSection)[] => [
    offerSection('Floor', [rawOffer('1', 80, 2), rawOffer('2', 45.5, 4, { ticket_type: 'resale' }), rawOffer('3', 30, 1)]),
    seatMapSection('Block A', [seat('A', '1', 20), seat('A', '2', 20), seat('B', '7', 20), seat('A', '4', 35, { accessible: true })]),
    seatMapSection('Upper', [seat('C', '3', 45)], {}, [rawOffer('R1', 60, 2, { ticket_type: 'resale' }), rawOffer('ga-1', 30, 10, { ticket_type: 'general_admission' })]),
  ];
  const hashOf = (ss: (OfferSection | SeatMapSection)[], info = EVENT_INFO) => snapshotHash(toSnapshot(response(ss, info)));
  const baseHash = hashOf(sections());

  it('is the sha-256 of the canonical snapshot JSON', () => {
    const s = toSnapshot(response(sections()));
    expect(baseHash).toMatch(/^[0-9a-f]{64}$/);
    expect(baseHash).toBe(createHash('sha256').update(JSON.stringify(s)).digest('hex'));
  });

  it('the same content in a different order hashes the same', () => {
    const [floor, block, upper] = sections() as [OfferSection, SeatMapSection, SeatMapSection];
    const reordered = [
      upper,
      { ...block, seats: [...block.seats].reverse() },
      { ...floor, offers: [floor.offers[2]!, floor.offers[0]!, floor.offers[1]!] },
    ];
    expect(hashOf(reordered)).toBe(baseHash);
    expect(toSnapshot(response(reordered))).toEqual(toSnapshot(response(sections())));
  });

  it('object key order and offer ids do not matter', () => {
    const [floor, ...rest] = sections() as [OfferSection, ...SeatMapSection[]];
    const rekeyed = {
      ...floor,
      offers: floor.offers.map((o, i) => ({ presale: o.presale, accessible: o.accessible, restricted_view: o.restricted_view, ticket_type: o.ticket_type, quantity: o.quantity, price: o.price, id: `other-${i}` })),
    };
    expect(hashOf([rekeyed, ...rest])).toBe(baseHash);
  });

  it('a scrape that changes nothing the filters see (summary fields, seat order) hashes the same', () => {
    const [floor, ...rest] = sections() as [OfferSection, ...SeatMapSection[]];
    expect(hashOf([{ ...floor, stock: 999, max_price: 1 }, ...rest])).toBe(baseHash);
  });

  it('any change in price or quantity hashes differently', () => {
    const variants: Record<string, (ss: (OfferSection | SeatMapSection)[]) => void> = {
      'offer price +0.01': (ss) => void ((ss[0] as OfferSection).offers[0]!.price += 0.01),
      'offer quantity +1': (ss) => void ((ss[0] as OfferSection).offers[1]!.quantity += 1),
      'offer quantity to 0': (ss) => void ((ss[0] as OfferSection).offers[2]!.quantity = 0),
      'new offer': (ss) => void (ss[0] as OfferSection).offers.push(rawOffer('9', 99, 1)),
      'seat price': (ss) => void ((ss[1] as SeatMapSection).seats[2]!.price = 21),
      'seat removed': (ss) => void (ss[1] as SeatMapSection).seats.pop(),
      'seat added': (ss) => void (ss[1] as SeatMapSection).seats.push(seat('C', '1', 20)),
      'seat moved (block changes)': (ss) => void ((ss[1] as SeatMapSection).seats[1]!.seat = '3'),
      'unseated offer price': (ss) => void ((ss[2] as SeatMapSection).offers[0]!.price = 61),
      'unseated offer quantity': (ss) => void ((ss[2] as SeatMapSection).offers[1]!.quantity = 11),
      'unseated offer flag': (ss) => void ((ss[2] as SeatMapSection).offers[0]!.accessible = true),
      'offer flag': (ss) => void ((ss[0] as OfferSection).offers[0]!.presale = true),
      'section currency': (ss) => void (ss[0]!.currency = 'GBP'),
    };
    const seen = new Map<string, string>([[baseHash, 'base']]);
    for (const [what, change] of Object.entries(variants)) {
      const ss = structuredClone(sections());
      change(ss);
      const h = hashOf(ss);
      expect(seen.get(h), what).toBeUndefined();
      seen.set(h, what);
    }
    expect(hashOf(sections(), { ...EVENT_INFO, starts_at: '2030-06-16T20:00:00+02:00' })).not.toBe(baseHash);
    expect(seen.size).toBe(Object.keys(variants).length + 1);
  });

  // Canonically equivalent row names ("é" precomposed and decomposed) compare equal under
  // localeCompare, which would leave their groups in input order (and the order depends on the
  // process locale): rows are ordered by code units instead.
  it('rows that localeCompare as equal still get one canonical order', () => {
    const nfc = '\u00e9';
    const nfd = 'e\u0301';
    const seats = [seat(nfc, '1', 10), seat(nfd, '1', 10)];
    expect(hashOf([seatMapSection('S', seats)])).toBe(hashOf([seatMapSection('S', [...seats].reverse())]));
  });
});

describe('properties', () => {
  const RUNS = { numRuns: 300 };
  const shuffled = (ss: (OfferSection | SeatMapSection)[]) =>
    fc.tuple(
      permutationArb(ss),
      ...ss.map((s) =>
        'seats' in s
          ? fc.tuple(permutationArb(s.seats), permutationArb(s.offers)).map(([seats, offers]) => ({ ...s, seats, offers }))
          : permutationArb(s.offers).map((offers) => ({ ...s, offers })),
      ),
    );

  it('snapshotHash is invariant under shuffling sections and offers of the scrape input', () => {
    fc.assert(
      fc.property(
        rawSectionsArb.chain((ss) => fc.tuple(fc.constant(ss), shuffled(ss))),
        ([ss, [order, ...inner]]) => {
          const byName = new Map(inner.map((s) => [s.name, s]));
          const again = order.map((s) => byName.get(s.name)!);
          const a: TargetSnapshot = toSnapshot(response(ss));
          const b = toSnapshot(response(again));
          expect(b).toEqual(a);
          expect(snapshotHash(b)).toBe(snapshotHash(a));
        },
      ),
      RUNS,
    );
  });

  it('the snapshot keeps every ticket on sale: per section, the quantities add up to the input', () => {
    fc.assert(
      fc.property(rawSectionsArb, (ss) => {
        const s = toSnapshot(response(ss));
        expect(s.sections.map((x) => x.name)).toEqual(ss.map((x) => x.name).sort());
        for (const x of ss) {
          const got = s.sections.find((y) => y.name === x.name)!;
          // Tickets known only as a count (no seat, no offer) are not read: no price each, no flags.
          const expected = x.offers.reduce((n, o) => n + o.quantity, 0) + ('seats' in x ? x.seats.length : 0);
          expect(got.offers.reduce((n, o) => n + o.quantity, 0)).toBe(expected);
          for (const o of got.offers) {
            expect(o.quantity).toBeGreaterThan(0);
            expect(o.block).toBeGreaterThanOrEqual(1);
            expect(o.block).toBeLessThanOrEqual(o.quantity);
          }
        }
      }),
      RUNS,
    );
  });
});
