// The tracker's roll-up arithmetic (src/market-data/rollup.ts): worked examples for a marketplace
// A snapshot (flows, levels 24 h before, percentages, currencies), its daily rows and a
// marketplace B statistics row, then properties over random sales and listings.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dominantCurrency, listingFigures, maDailyRows, maSnapshot, mbStatistics, salesFigures, type RollupSale } from '../../src/market-data/rollup.ts';

const capturedAt = new Date('2027-01-10T12:00:00Z');
const gbp = (sold_at: string, quantity: number, price: number | string): RollupSale => ({ sold_at, quantity, price, currency: 'GBP' });
const SALES = [
  gbp('2027-01-08T10:00:00Z', 2, '100.00'),
  // Exactly 24 h before at 12:00 would count as "before"; 11:00 certainly does.
  gbp('2027-01-09T11:00:00Z', 1, '150.50'),
  gbp('2027-01-09T13:00:00Z', 3, 80),
  gbp('2027-01-10T09:00:00Z', 1, 120.25),
];
const LISTINGS = [
  { quantity: 2, price: 90, ticket_type: 'standard' },
  { quantity: 4, price: '60.10', ticket_type: 'standard' },
  { quantity: 1, price: 200, ticket_type: 'general_admission' },
];
const EARLIER = { available_tickets: 10, listings_available: 4, average_ticket_price_available: '95.00', get_in_price: '70.00' };

describe('marketplace A snapshot', () => {
  it('computes every figure of a worked example', () => {
    expect(maSnapshot({ capturedAt, listings: LISTINGS, listingCurrency: 'GBP', sales: SALES, earlier: EARLIER })).toEqual({
      captured_at: capturedAt,
      currency: 'GBP',
      tickets_sold: 7,
      tickets_sold_24h: 4,
      tickets_sold_24h_percentage: '133.33',
      listings_sold: 4,
      listings_sold_24h: 2,
      listings_sold_24h_percentage: '100.00',
      listings_available: 3,
      listings_available_24h: 4,
      listings_available_24h_percentage: '-25.00',
      available_tickets: 7,
      available_tickets_24h: 10,
      available_tickets_24h_percentage: '-30.00',
      is_general_admission_only: false,
      average_ticket_price_sold: '101.54',
      average_ticket_price_sold_24h: '90.06',
      average_ticket_price_sold_24h_percentage: '-13.09',
      average_ticket_price_available: '88.63',
      average_ticket_price_available_24h: '95.00',
      average_ticket_price_available_24h_percentage: '-6.71',
      highest_sale_price: '150.50',
      highest_sale_price_24h: '120.25',
      highest_sale_price_24h_percentage: '0.00',
      get_in_price: '60.10',
      get_in_price_24h: '70.00',
      get_in_price_24h_percentage: '-14.14',
      total_volume: '710.75',
    });
  });

  it('has counts of zero, no prices and no 24 h levels before anything sold or was on file', () => {
    const s = maSnapshot({ capturedAt, listings: [], listingCurrency: 'EUR', sales: [], earlier: null });
    expect(s).toMatchObject({
      currency: 'EUR',
      tickets_sold: 0,
      tickets_sold_24h: 0,
      tickets_sold_24h_percentage: null,
      listings_available: 0,
      listings_available_24h: null,
      available_tickets_24h_percentage: null,
      is_general_admission_only: null,
      average_ticket_price_sold: null,
      average_ticket_price_available: null,
      get_in_price: null,
      highest_sale_price: null,
      total_volume: null,
    });
  });

  it('gives no percentage when the earlier value is 0 (everything sold within the last 24 h)', () => {
    const s = maSnapshot({ capturedAt, listings: LISTINGS, listingCurrency: 'GBP', sales: SALES.slice(2), earlier: null });
    expect(s.tickets_sold).toBe(4);
    expect(s.tickets_sold_24h).toBe(4);
    expect(s.tickets_sold_24h_percentage).toBeNull();
    expect(s.average_ticket_price_sold_24h_percentage).toBeNull();
  });

  it('marks an event whose listings are all general admission', () => {
    expect(listingFigures([{ quantity: 3, price: 10, ticket_type: 'general_admission' }]).generalAdmissionOnly).toBe(true);
  });

  it('sums money in cents, without float artefacts', () => {
    const sales = [gbp('2027-01-10T00:00:00Z', 1, 0.1), gbp('2027-01-10T00:00:00Z', 1, 0.2)];
    expect(salesFigures(sales, 'GBP')).toEqual({ tickets: 2, listings: 2, average: '0.15', highest: '0.20', volume: '0.30' });
  });

  it('counts every sale but prices only those in the dominant currency', () => {
    const sales = [...SALES, { sold_at: '2027-01-10T10:00:00Z', quantity: 1, price: 999, currency: 'EUR' }];
    const s = maSnapshot({ capturedAt, listings: LISTINGS, listingCurrency: 'EUR', sales, earlier: null });
    expect(s.currency).toBe('GBP');
    expect(s.tickets_sold).toBe(8);
    expect(s.highest_sale_price).toBe('150.50');
    expect(s.total_volume).toBe('710.75');
  });

  it('picks the currency with most tickets, a tie alphabetically, the listings’ currency without sales', () => {
    const one = (currency: string, quantity = 1): RollupSale => ({ sold_at: capturedAt, quantity, price: 1, currency });
    expect(dominantCurrency([], 'USD')).toBe('USD');
    expect(dominantCurrency([one('GBP', 2), one('EUR', 3)], 'GBP')).toBe('EUR');
    expect(dominantCurrency([one('GBP'), one('EUR')], 'GBP')).toBe('EUR');
  });
});

describe('marketplace A daily rows', () => {
  it('writes the snapshot’s day with its levels and earlier days of newly seen sales without', () => {
    const snapshot = maSnapshot({ capturedAt, listings: LISTINGS, listingCurrency: 'GBP', sales: SALES, earlier: EARLIER });
    const rows = maDailyRows({ snapshot, sales: SALES, newSaleDates: ['2027-01-09', '2027-01-08', '2027-01-10', '2027-01-09'] });
    expect(rows).toEqual([
      { stat_date: '2027-01-08', tickets_sold: 2, tickets_sold_24h: 2, average_ticket_price_sold: '100.00', highest_sale_price: '100.00', available_tickets: null, listings_available: null, average_ticket_price_available: null },
      { stat_date: '2027-01-09', tickets_sold: 6, tickets_sold_24h: 4, average_ticket_price_sold: '98.42', highest_sale_price: '150.50', available_tickets: null, listings_available: null, average_ticket_price_available: null },
      { stat_date: '2027-01-10', tickets_sold: 7, tickets_sold_24h: 1, average_ticket_price_sold: '101.54', highest_sale_price: '150.50', available_tickets: 7, listings_available: 3, average_ticket_price_available: '88.63' },
    ]);
  });

  it('writes only the snapshot’s day when no sale is new', () => {
    const snapshot = maSnapshot({ capturedAt, listings: [], listingCurrency: 'GBP', sales: SALES, earlier: null });
    expect(maDailyRows({ snapshot, sales: SALES, newSaleDates: [] }).map((r) => r.stat_date)).toEqual(['2027-01-10']);
  });
});

describe('marketplace B statistics', () => {
  const sections = [
    { name: 'A', capacity: 100, available: 10, sold: 90 },
    { name: 'B', capacity: 50, available: 5, sold: 40 },
  ];
  const offers = [
    { name: 'Standard', stock: 10, price: 50, face_price: 45, type: 'standard' as const, currency: 'GBP' },
    { name: 'Resale', stock: 4, price: 80.1, face_price: 70, type: 'resale' as const, currency: 'GBP' },
    { name: 'Platinum', stock: 0, price: 300, face_price: 280, type: 'platinum' as const, currency: 'GBP' },
    { name: 'Euro', stock: 2, price: 60, face_price: 55, type: 'standard' as const, currency: 'EUR' },
  ];

  it('sums sections, averages offers in stock by stock and splits by type', () => {
    expect(mbStatistics({ sections, offers, currency: 'GBP', averageSalePrice: 71.5, earlierTicketsSold: 120 })).toEqual({
      tickets_sold: 130,
      tickets_sold_24h: 10,
      available_tickets: 15,
      listings_available: 3,
      capacity: 150,
      highest_price: '80.10',
      lowest_price: '50.00',
      average_ticket_price_available: '58.60',
      average_ticket_price_standard: '50.00',
      average_ticket_price_resell: '80.10',
      average_ticket_price_platinum: null,
      average_sales_price: '71.50',
      get_in_price: '50.00',
      currency: 'GBP',
    });
  });

  it('counts 0 sold in 24 h on the first row and never a negative number', () => {
    expect(mbStatistics({ sections, offers, currency: 'GBP', averageSalePrice: null, earlierTicketsSold: null }).tickets_sold_24h).toBe(0);
    expect(mbStatistics({ sections, offers, currency: 'GBP', averageSalePrice: null, earlierTicketsSold: 500 }).tickets_sold_24h).toBe(0);
  });

  it('has no capacity or prices for an empty page', () => {
    expect(mbStatistics({ sections: [], offers: [], currency: 'USD', averageSalePrice: null, earlierTicketsSold: null })).toMatchObject({
      capacity: null,
      highest_price: null,
      lowest_price: null,
      average_ticket_price_available: null,
      get_in_price: null,
    });
  });
});

describe('properties', () => {
  const sale = fc.record({
    sold_at: fc.integer({ min: 0, max: 4 * 86_400 }).map((s) => new Date(capturedAt.getTime() - s * 1000)),
    quantity: fc.integer({ min: 1, max: 20 }),
    price: fc.integer({ min: 0, max: 100_000_00 }).map((c) => c / 100),
    currency: fc.constantFrom('GBP', 'EUR'),
  });
  const listing = fc.record({ quantity: fc.integer({ min: 1, max: 50 }), price: fc.integer({ min: 0, max: 5_000_00 }).map((c) => c / 100), ticket_type: fc.constantFrom('standard', 'general_admission') });

  it('counts add up, the 24 h flows are part of the totals and prices stay within the range seen', () => {
    fc.assert(
      fc.property(fc.array(sale, { maxLength: 40 }), fc.array(listing, { maxLength: 10 }), (sales, listings) => {
        const s = maSnapshot({ capturedAt, listings, listingCurrency: 'GBP', sales, earlier: null });
        expect(s.tickets_sold).toBe(sales.reduce((n, x) => n + x.quantity, 0));
        expect(s.tickets_sold_24h).toBeLessThanOrEqual(s.tickets_sold);
        expect(s.listings_sold_24h).toBeLessThanOrEqual(s.listings_sold);
        expect(s.available_tickets).toBe(listings.reduce((n, x) => n + x.quantity, 0));
        const priced = sales.filter((x) => x.currency === s.currency).map((x) => x.price);
        if (priced.length) {
          expect(Number(s.average_ticket_price_sold)).toBeGreaterThanOrEqual(Math.min(...priced) - 0.005);
          expect(Number(s.average_ticket_price_sold)).toBeLessThanOrEqual(Math.max(...priced) + 0.005);
          expect(Number(s.highest_sale_price)).toBe(Math.max(...priced));
        } else {
          expect(s.average_ticket_price_sold).toBeNull();
        }
        if (listings.length) expect(Number(s.get_in_price)).toBe(Math.min(...listings.map((l) => l.price)));
        for (const v of [s.average_ticket_price_sold, s.total_volume, s.get_in_price, s.tickets_sold_24h_percentage]) {
          if (v !== null) expect(v).toMatch(/^-?\d+\.\d{2}$/);
        }
      }),
    );
  });

  it('the last daily row of a snapshot agrees with the snapshot', () => {
    fc.assert(
      fc.property(fc.array(sale, { maxLength: 30 }), (sales) => {
        const snapshot = maSnapshot({ capturedAt, listings: [], listingCurrency: 'GBP', sales, earlier: null });
        const rows = maDailyRows({ snapshot, sales, newSaleDates: sales.map((x) => x.sold_at.toISOString().slice(0, 10)) });
        const today = rows.at(-1)!;
        expect(today.tickets_sold).toBe(snapshot.tickets_sold);
        expect(today.average_ticket_price_sold).toBe(snapshot.average_ticket_price_sold);
        expect(rows.reduce((n, r) => n + r.tickets_sold_24h, 0)).toBe(snapshot.tickets_sold);
      }),
    );
  });
});
