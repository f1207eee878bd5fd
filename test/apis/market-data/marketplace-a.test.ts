// GET /svc/data/marketplace_a/{event_id} (spec 2.2, 7.2, 8) through the real gateway and
// PostgreSQL: the four members against their schema and the spec's field tables, the null and
// empty cases, the currency rule, the rolling daily window, the histogram rule, every id rule,
// billing, backend failures, and a property: no path or query string gives a 5xx or writes.
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { marketplaceAResponseSchema } from '../../../src/apis/market-data/marketplace-a-schema.ts';
import { priceHistogram } from '../../../src/market-data/price-histogram.ts';
import { describeBackendFailures } from '../../support/market-data-backend-failures.ts';
import {
  expectBilled,
  expectExactShape,
  expectMarketDataError,
  hoursFromNow,
  insertArtist,
  insertCategory,
  insertDailyStats,
  insertEvent,
  insertHistogram,
  insertSales,
  insertSnapshot,
  insertVenue,
  randomEventId,
  storedDigest,
  useReadGateway,
  utcDate,
  type SaleFixture,
} from '../../support/market-data-fixtures.ts';
import { newAccount } from '../../support/harness.ts';

const t = useReadGateway();
const path = (id: string) => `/svc/data/marketplace_a/${id}`;

const EVENT_DATE = new Date('2027-06-12T19:30:00.000Z');
const SNAPSHOT_AT = hoursFromNow(-2);

// Every summary column with a distinct value, so a swapped field shows.
const SNAPSHOT = {
  tickets_sold: 1200,
  tickets_sold_24h: 35,
  listings_sold: 410,
  listings_sold_24h: 12,
  listings_available: 260,
  listings_available_24h: 240,
  available_tickets: 900,
  available_tickets_24h: 950,
  is_general_admission_only: false,
  tickets_sold_24h_percentage: '3.00',
  listings_sold_24h_percentage: '3.02',
  listings_available_24h_percentage: '8.33',
  available_tickets_24h_percentage: '-5.26',
  average_ticket_price_sold: '142.50',
  average_ticket_price_sold_24h: '139.10',
  average_ticket_price_sold_24h_percentage: '2.44',
  average_ticket_price_available: '188.00',
  average_ticket_price_available_24h: '190.25',
  average_ticket_price_available_24h_percentage: '-1.18',
  highest_sale_price: '620.00',
  highest_sale_price_24h: '480.00',
  highest_sale_price_24h_percentage: '29.17',
  get_in_price: '64.90',
  get_in_price_24h: '59.90',
  get_in_price_24h_percentage: '8.35',
  total_volume: '171000.00',
};

const GBP_SALES: SaleFixture[] = [
  { sold_at: hoursFromNow(-30), quantity: 5, price: '80.00', currency: 'GBP', section: 'Floor', row: 'A', ticket_type: 'standard' },
  { sold_at: hoursFromNow(-20), quantity: 1, price: '120.00', currency: 'GBP', section: '101', row: '7', ticket_type: 'resale' },
];
const EUR_SALES: SaleFixture[] = [1, 2, 3].map((i) => ({ sold_at: hoursFromNow(-i), quantity: 1, price: '95.00', currency: 'EUR' }));

const fx = {} as {
  full: number;
  bare: number;
  statsNoSales: number;
  salesNoHistogram: number;
  tie: number;
  artistUrl: string;
  venueId: number;
  categoryName: string;
};

beforeAll(async () => {
  const db = t.gw.db;
  const category = await insertCategory(db);
  fx.categoryName = category.name;
  fx.venueId = await insertVenue(db, { name: 'Fixture Stadium', city: 'Manchester', country: 'United Kingdom', country_code: 'GB', svg_map_url: 'https://maps.example/fixture.svg' });
  const artist = await insertArtist(db, { name: 'The Fixtures', image_url: 'https://img.example/fixtures.jpg' });
  fx.artistUrl = artist.url;
  fx.full = await insertEvent(db, {
    name: 'The Fixtures: Summer Tour',
    event_date: EVENT_DATE,
    image_url: 'https://img.example/event.jpg',
    category_id: category.id,
    venue_id: fx.venueId,
    artist_id: artist.id,
    marketplace_b_event_id: `FXB${randomEventId()}`,
    marketplace_b_event_url: 'https://www.marketplace-b.example/event/FXB1',
  });
  await db('events').where({ id: fx.full }).update({ marketplace_a_url: `https://www.marketplace-a.example/event/E-${fx.full}` });
  // An older snapshot first: the newest one is the summary.
  await insertSnapshot(db, fx.full, { ...SNAPSHOT, captured_at: hoursFromNow(-30), tickets_sold: 1, currency: 'GBP' });
  await insertSnapshot(db, fx.full, { ...SNAPSHOT, captured_at: SNAPSHOT_AT, currency: 'GBP' });
  // 6 GBP tickets against 3 EUR ones: GBP is the currency, though EUR has more sales.
  await insertSales(db, fx.full, [...GBP_SALES, ...EUR_SALES]);
  await insertHistogram(db, fx.full, priceHistogram(GBP_SALES, 'GBP', 4));
  // Out of order, with days outside the window on both sides and gaps inside it.
  const day = (d: number, n: number) => ({
    stat_date: utcDate(d),
    tickets_sold: n,
    tickets_sold_24h: n % 7,
    available_tickets: 1000 - n,
    listings_available: null,
    average_ticket_price_sold: `${100 + n}.50`,
    average_ticket_price_available: null,
    highest_sale_price: `${200 + n}.00`,
  });
  await insertDailyStats(db, fx.full, [day(-3, 30), day(0, 40), day(-35, 1), day(-29, 10), day(1, 99), day(-30, 9), day(-10, 20), day(-1, 35)]);

  fx.bare = await insertEvent(db);

  fx.statsNoSales = await insertEvent(db, { venue_id: fx.venueId });
  await insertSnapshot(db, fx.statsNoSales, { currency: 'EUR', tickets_sold: 0, available_tickets: 300, get_in_price: '45.00' });
  // A stale row with bins: the event has no sales, so the answer is the empty histogram.
  await insertHistogram(db, fx.statsNoSales, { bins: 6, min: '10.00', max: '20.00', currency: 'EUR', data: [{ start: '10.00', end: '20.00', tickets_sold: 2 }] });

  fx.salesNoHistogram = await insertEvent(db, { artist_id: artist.id });
  await insertSales(db, fx.salesNoHistogram, [{ sold_at: hoursFromNow(-1), quantity: 2, price: '50.00', currency: 'CAD' }]);

  fx.tie = await insertEvent(db);
  await insertSales(db, fx.tie, [
    { sold_at: hoursFromNow(-1), quantity: 2, price: '50.00', currency: 'EUR' },
    { sold_at: hoursFromNow(-2), quantity: 2, price: '50.00', currency: 'CHF' },
  ]);
});

describe('an event with everything on file', () => {
  it('answers the four members of spec 2.2, exactly', async () => {
    const r = await t.get(path(`E-${fx.full}`));
    expect(r.status, r.text).toBe(200);
    const body = expectExactShape(marketplaceAResponseSchema, r.body);
    expect(Object.keys(body)).toEqual(['event', 'summary', 'daily_statistics', 'price_histogram']);
    expect(body.event).toEqual({
      marketplace_a_event_id: fx.full,
      marketplace_a_event_url: `https://www.marketplace-a.example/event/E-${fx.full}`,
      event_name: 'The Fixtures: Summer Tour',
      event_date: '2027-06-12T19:30:00.000Z',
      event_image: 'https://img.example/event.jpg',
      category_name: fx.categoryName,
      currency: 'GBP',
      venue: { name: 'Fixture Stadium', city: 'Manchester', country: 'United Kingdom', country_code: 'GB', svg_map_url: 'https://maps.example/fixture.svg' },
      artist: { name: 'The Fixtures', url: fx.artistUrl, image_url: 'https://img.example/fixtures.jpg' },
      external_urls: {
        marketplace_b_event_id: expect.stringMatching(/^FXB/),
        marketplace_b_event_url: 'https://www.marketplace-b.example/event/FXB1',
        marketplace_c_event_id: null,
        marketplace_c_event_url: null,
      },
    });
    expect(body.summary).toEqual({ ...SNAPSHOT, stats_date: SNAPSHOT_AT.toISOString(), currency: 'GBP' });
  });

  it('daily_statistics: the days of the last 30 (today included) that have a row, oldest first', async () => {
    const { body } = await t.get(path(`E-${fx.full}`));
    expect(body.daily_statistics.map((d: { stat_date: string }) => d.stat_date)).toEqual([utcDate(-29), utcDate(-10), utcDate(-3), utcDate(-1), utcDate(0)]);
    expect(body.daily_statistics[0]).toEqual({
      stat_date: utcDate(-29),
      tickets_sold: 10,
      tickets_sold_24h: 3,
      available_tickets: 990,
      listings_available: null,
      average_ticket_price_sold: '110.50',
      average_ticket_price_available: null,
      highest_sale_price: '210.00',
    });
  });

  it('price_histogram is the stored roll-up, in decimal strings', async () => {
    const { body } = await t.get(path(`E-${fx.full}`));
    expect(body.price_histogram).toEqual(priceHistogram(GBP_SALES, 'GBP', 4));
    expect(body.price_histogram).toMatchObject({ min: '80.00', max: '120.00', currency: 'GBP' });
    expect(body.price_histogram.data.reduce((n: number, b: { tickets_sold: number }) => n + b.tickets_sold, 0)).toBe(6);
  });

  it('artist.url is what the artist endpoint takes', async () => {
    const { body } = await t.get(path(`E-${fx.full}`));
    const artist = await t.get(`/svc/data/artist?url=${encodeURIComponent(body.event.artist.url)}`);
    expect(artist.status, artist.text).toBe(200);
    expect(artist.body.artist.name).toBe('The Fixtures');
  });
});

describe('the null and empty cases', () => {
  it('an event with nothing on file: summary all null but currency USD, empty window, empty histogram, null venue and artist', async () => {
    const r = await t.get(path(`E-${fx.bare}`));
    expect(r.status, r.text).toBe(200);
    const body = expectExactShape(marketplaceAResponseSchema, r.body);
    expect(body.event).toMatchObject({
      marketplace_a_event_id: fx.bare,
      marketplace_a_event_url: null,
      event_date: null,
      event_image: null,
      category_name: null,
      currency: 'USD',
      venue: null,
      artist: null,
      external_urls: { marketplace_b_event_id: null, marketplace_b_event_url: null, marketplace_c_event_id: null, marketplace_c_event_url: null },
    });
    const { currency, ...rest } = body.summary;
    expect(currency).toBe('USD');
    expect(Object.values(rest).every((v) => v === null)).toBe(true);
    expect(Object.keys(rest)).toHaveLength(27);
    expect(body.daily_statistics).toEqual([]);
    expect(body.price_histogram).toEqual({ bins: 10, min: '0', max: '0', currency: 'USD', data: [] });
  });

  it('statistics but no sales: the snapshot is the summary (its currency), the event is USD, the histogram empty with its stored bins', async () => {
    const { body } = await t.get(path(`E-${fx.statsNoSales}`));
    expectExactShape(marketplaceAResponseSchema, body);
    expect(body.event.currency).toBe('USD');
    expect(body.event.venue).not.toBeNull();
    expect(body.summary).toMatchObject({ currency: 'EUR', tickets_sold: 0, available_tickets: 300, get_in_price: '45.00', tickets_sold_24h: null });
    expect(body.price_histogram).toEqual({ bins: 6, min: '0', max: '0', currency: 'EUR', data: [] });
  });

  it('sales not rolled up yet: currency from the sales, summary null, the empty histogram in that currency', async () => {
    const { body } = await t.get(path(`E-${fx.salesNoHistogram}`));
    expectExactShape(marketplaceAResponseSchema, body);
    expect(body.event.currency).toBe('CAD');
    expect(body.event.artist).toMatchObject({ name: 'The Fixtures' });
    expect(body.summary.currency).toBe('CAD');
    expect(body.summary.tickets_sold).toBeNull();
    expect(body.price_histogram).toEqual({ bins: 10, min: '0', max: '0', currency: 'CAD', data: [] });
  });

  it('a tie in tickets sold goes to the alphabetically first currency', async () => {
    expect((await t.get(path(`E-${fx.tie}`))).body.event.currency).toBe('CHF');
  });
});

describe('event ids (spec 4.1, 7.2)', () => {
  it.each(['e-1', 'E1', 'E-', 'E-1a', 'E--1', 'E-+1', 'E-1.5', 'E-1e3', 'E-%201', 'E-1%20', 'X-1', '%C3%89-1', 'E-%EF%BC%91', 'E%2D'])(
    '%s is 400 INVALID_MARKETPLACE_A_ID',
    async (id) => {
      expectMarketDataError(await t.get(path(id)), 400, 'INVALID_MARKETPLACE_A_ID');
    },
  );

  it.each(['E-0', 'E-000', 'E-1000000000000', 'E-9223372036854775807', 'E-9223372036854775808', `E-${'9'.repeat(400)}`])(
    '%s is well-formed but names no marketplace A event: 404 EVENT_NOT_FOUND',
    async (id) => {
      expectMarketDataError(await t.get(path(id)), 404, 'EVENT_NOT_FOUND');
    },
  );

  it('an id not on file is 404 EVENT_NOT_FOUND', async () => {
    expectMarketDataError(await t.get(path(`E-${randomEventId()}`)), 404, 'EVENT_NOT_FOUND');
  });

  it('leading zeros name the same event; the id may be percent-encoded', async () => {
    const plain = await t.get(path(`E-${fx.bare}`));
    expect((await t.get(path(`E-000${fx.bare}`))).body).toEqual(plain.body);
    expect((await t.get(path(`E%2D${fx.bare}`))).body).toEqual(plain.body);
  });

  it('a query parameter is 400 INVALID_REQUEST (the endpoint takes none)', async () => {
    const msg = expectMarketDataError(await t.get(`${path(`E-${fx.bare}`)}?limit=5`), 400, 'INVALID_REQUEST');
    expect(msg).toContain('limit');
  });
});

describe('billing (spec 8, 7.7)', () => {
  it('costs 1 credit per answer, 4xx from the API included', async () => {
    const a = await newAccount(t.gw.db);
    const replies = [];
    for (const id of [`E-${fx.full}`, `E-${fx.bare}`, 'e-1', `E-${randomEventId()}`]) {
      replies.push(await t.api('GET', path(id), { key: a.key }));
    }
    expect(replies.map((r) => r.status)).toEqual([200, 200, 400, 404]);
    await expectBilled(t.gw.db, a.accountId, replies[3]!.headers.get('x-request-id'), 4, 'charged');
  });
});

describeBackendFailures(t, { path: () => path(`E-${fx.full}`), lockedTable: 'ma_price_histograms' });

describe('properties', () => {
  it('no path id or query string gives a 5xx or changes stored data', async () => {
    const ids = [fx.full, fx.bare, fx.statsNoSales, fx.salesNoHistogram, fx.tie];
    const before = await storedDigest(t.gw.db, ids, []);
    const anyText = fc.string({ unit: 'binary', maxLength: 30 });
    const idText = fc.oneof(
      anyText,
      fc.stringMatching(/^[Ee]-?[0-9]{0,25}[a-z%.+-]?$/),
      fc.constantFrom(...ids.map((i) => `E-${i}`)),
      fc.bigInt({ min: 0n, max: 2n ** 70n }).map((n) => `E-${n}`),
    );
    const query = fc.option(fc.tuple(anyText, anyText), { nil: undefined });
    await fc.assert(
      fc.asyncProperty(idText, query, async (id, q) => {
        const qs = q ? `?${encodeURIComponent(q[0])}=${encodeURIComponent(q[1])}` : '';
        const r = await t.get(path(encodeURIComponent(id)) + qs);
        expect(r.status, `${id} ${qs} -> ${r.text}`).toBeLessThan(500);
        if (r.status === 200) expectExactShape(marketplaceAResponseSchema, r.body);
        else if (r.status !== 404 || r.body?.status === 'error') expect(['INVALID_MARKETPLACE_A_ID', 'INVALID_REQUEST', 'EVENT_NOT_FOUND']).toContain(r.body?.code);
      }),
      { numRuns: 150 },
    );
    expect(await storedDigest(t.gw.db, ids, [])).toBe(before);
  });
});
