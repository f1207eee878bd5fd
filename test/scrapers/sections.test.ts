// The one place section summaries are computed: merging by name, stock and price range, sold-out
// sections kept, cents rounding, seat-map counts per ticket type (and unknown types left out).
import { describe, expect, it } from 'vitest';
import { OfferSectionsBuilder, roundPrice, SeatMapSectionsBuilder, totalStock } from '../../src/scrapers/sections.ts';
import type { Offer, Seat } from '../../src/scrapers/types.ts';

const offer = (id: string, price: number, quantity: number, extra: Partial<Offer> = {}): Offer => ({
  id,
  price,
  quantity,
  ticket_type: 'standard',
  restricted_view: false,
  accessible: false,
  presale: false,
  ...extra,
});
const seat = (row: string, n: string, price: number, extra: Partial<Seat> = {}): Seat => ({
  row,
  seat: n,
  price,
  ticket_type: 'standard',
  restricted_view: false,
  accessible: false,
  presale: false,
  ...extra,
});

describe('OfferSectionsBuilder', () => {
  it('merges offers by section name and sums stock, with the price range of what is on sale', () => {
    const sections = new OfferSectionsBuilder('EUR')
      .offer('Floor', offer('a', 120.5, 2))
      .offer('Balcony', offer('b', 40, 1))
      .offer('Floor', offer('c', 99.999, 3, { ticket_type: 'resale' }))
      .offer('Floor', offer('d', 10, 0))
      .build();
    expect(Object.keys(sections)).toEqual(['Floor', 'Balcony']);
    expect(sections.Floor).toEqual({
      name: 'Floor',
      currency: 'EUR',
      min_price: 100,
      max_price: 120.5,
      stock: 5,
      offers: [offer('a', 120.5, 2), offer('c', 100, 3, { ticket_type: 'resale' })],
    });
    expect(totalStock(sections)).toBe(6);
  });

  it('keeps a section with nothing on sale: stock 0, no offers, no price', () => {
    const sections = new OfferSectionsBuilder(null).section('Upper').offer('Lower', offer('x', 5, 0)).build();
    expect(sections).toEqual({
      Upper: { name: 'Upper', currency: null, min_price: null, max_price: null, stock: 0, offers: [] },
      Lower: { name: 'Lower', currency: null, min_price: null, max_price: null, stock: 0, offers: [] },
    });
    expect(totalStock(sections)).toBe(0);
  });

  it('takes any section name as a key, __proto__ included', () => {
    const sections = new OfferSectionsBuilder('USD').offer('__proto__', offer('p', 1, 1)).build();
    expect(Object.keys(sections)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(sections)).toBe(Object.prototype);
    expect(JSON.parse(JSON.stringify(sections)).__proto__.stock).toBe(1);
  });
});

describe('SeatMapSectionsBuilder', () => {
  it('lists seats, counts every ticket type, and takes the price range from the seats', () => {
    const sections = new SeatMapSectionsBuilder('GBP')
      .seat('Block 1', seat('A', '1', 80))
      .seat('Block 1', seat('A', '2', 95.555, { ticket_type: 'resale' }))
      .section('Block 2')
      .build();
    expect(sections['Block 1']).toEqual({
      name: 'Block 1',
      currency: 'GBP',
      min_price: 80,
      max_price: 95.56,
      stock: 2,
      seats: [seat('A', '1', 80), seat('A', '2', 95.56, { ticket_type: 'resale' })],
      offers: [],
      by_ticket_type: { standard: 1, resale: 1, platinum: 0, general_admission: 0 },
    });
    expect(sections['Block 2']).toMatchObject({ stock: 0, seats: [], min_price: null, by_ticket_type: { standard: 0, resale: 0, platinum: 0, general_admission: 0 } });
  });

  it('lists tickets sold without a seat beside the seats, with their flags, cheapest first, in stock, prices and counts', () => {
    const sections = new SeatMapSectionsBuilder('EUR')
      .seat('Floor', seat('A', '1', 120))
      .offer('Floor', offer('R1', 95.555, 4, { ticket_type: 'resale', restricted_view: true }))
      .offer('Floor', offer('ga-1', 40, 30, { ticket_type: 'general_admission', presale: true }))
      .offer('Floor', offer('R2', 10, 0, { ticket_type: 'resale' }))
      .build();
    expect(sections.Floor).toEqual({
      name: 'Floor',
      currency: 'EUR',
      min_price: 40,
      max_price: 120,
      stock: 35,
      seats: [seat('A', '1', 120)],
      offers: [offer('ga-1', 40, 30, { ticket_type: 'general_admission', presale: true }), offer('R1', 95.56, 4, { ticket_type: 'resale', restricted_view: true })],
      by_ticket_type: { standard: 1, resale: 4, platinum: 0, general_admission: 30 },
    });
  });

  it('adds tickets known only as counts, and leaves unknown ticket types out (pf_01 degraded)', () => {
    const sections = new SeatMapSectionsBuilder('USD', ['resale', 'general_admission'])
      .seat('Floor', seat('A', '1', 200, { ticket_type: 'platinum' }))
      .counted('Floor', 'standard', 10, [150, 175])
      .counted('Floor', 'standard', 0, [1])
      .build();
    expect(sections.Floor).toMatchObject({ stock: 11, min_price: 150, max_price: 200, seats: [seat('A', '1', 200, { ticket_type: 'platinum' })], by_ticket_type: { standard: 10, platinum: 1 } });
    expect(Object.keys(sections.Floor!.by_ticket_type).sort()).toEqual(['platinum', 'standard']);
  });
});

describe('roundPrice', () => {
  it('rounds to cents', () => {
    expect([roundPrice(1.005), roundPrice(120.5), roundPrice(99.999), roundPrice(0)]).toEqual([1, 120.5, 100, 0]);
  });
});
