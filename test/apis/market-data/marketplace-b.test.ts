// GET /svc/data/marketplace_b/{tm_event_id} (spec 2.3, 8) through the real gateway and
// PostgreSQL: the three blocks against their schema and the spec's table, trimming by `limit`,
// the most-recent-run rule for section and offer rows, the dashboard's values and daily chart,
// an event with no statistics yet, the three blocks fetched concurrently, errors, billing,
// backend failures, and a property over paths and queries.
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { marketplaceBResponseSchema } from '../../../src/apis/market-data/marketplace-b-schema.ts';
import { newAccount } from '../../support/harness.ts';
import { describeBackendFailures } from '../../support/market-data-backend-failures.ts';
import {
  expectBilled,
  expectExactShape,
  expectMarketDataError,
  insertEvent,
  insertMarketplaceBRun,
  slowDataPool,
  startGatewayWithDataPool,
  storedDigest,
  tag,
  useReadGateway,
} from '../../support/market-data-fixtures.ts';

const t = useReadGateway();
const path = (id: string, query = '') => `/svc/data/marketplace_b/${id}${query}`;

interface Run {
  at: string;
  region: string;
  sold: number;
  sold24h: number;
  available: number;
  listings: number;
  listPrice: string | null;
  getIn: string | null;
}

// Absolute times: the 24 h comparison and the daily chart depend on the rows only, not on now.
const RUNS: Run[] = [
  { at: '2025-03-04T07:00:00.000Z', region: 'us', sold: 600, sold24h: 100, available: 800, listings: 200, listPrice: '150.00', getIn: '49.00' },
  { at: '2025-03-01T10:00:00.000Z', region: 'us', sold: 100, sold24h: 10, available: 1200, listings: 300, listPrice: '120.00', getIn: null },
  { at: '2025-03-02T09:00:00.000Z', region: 'us', sold: 200, sold24h: 50, available: 1100, listings: 280, listPrice: '125.00', getIn: '40.00' },
  { at: '2025-03-02T21:00:00.000Z', region: 'uk', sold: 260, sold24h: 60, available: 1050, listings: 270, listPrice: '130.50', getIn: '41.00' },
  { at: '2025-03-03T08:00:00.000Z', region: 'us', sold: 400, sold24h: 140, available: 1000, listings: 250, listPrice: '140.00', getIn: '45.00' },
];
const NEWEST_FIRST = [...RUNS].sort((a, b) => b.at.localeCompare(a.at));

const fx = {} as { full: string; fullEventId: number; empty: string; emptyEventId: number; latestWithout: string };

function newId(): string {
  return `FX${tag()}${tag()}`.toUpperCase();
}

beforeAll(async () => {
  const db = t.gw.db;
  fx.full = newId();
  fx.fullEventId = await insertEvent(db, { marketplace_b_event_id: fx.full });
  // Inserted newest first, so insertion order (ids) and time order disagree.
  for (const [i, r] of RUNS.entries()) {
    const newest = i === 0;
    await insertMarketplaceBRun(db, fx.fullEventId, {
      created_at: new Date(r.at),
      region: r.region,
      sections: newest
        ? [
            { section_name: 'Floor', capacity: 2000, available_stock: 150, sold_amount: 1850 },
            { section_name: 'Balcony', capacity: null, available_stock: 0, sold_amount: null },
          ]
        : [{ section_name: `Old ${i}`, capacity: 1, available_stock: 1, sold_amount: 0 }],
      offers: newest
        ? [
            { offer_name: 'Standard', offer_stock: 120, average_price_fees: '155.40', average_price_no_fees: '140.00', offer_type: 1, currency: 'USD' },
            { offer_name: 'Verified Resale', offer_stock: 30, average_price_fees: '310.00', average_price_no_fees: '280.50', offer_type: 2, currency: 'USD' },
          ]
        : [{ offer_name: `Old ${i}`, offer_stock: 1, average_price_fees: '1.00', average_price_no_fees: '1.00', offer_type: 3 }],
      history: {
        tickets_sold: r.sold,
        tickets_sold_24h: r.sold24h,
        available_tickets: r.available,
        listings_available: r.listings,
        capacity: 2000,
        highest_price: '900.00',
        lowest_price: r.getIn,
        average_ticket_price_available: r.listPrice,
        average_ticket_price_standard: '140.00',
        average_ticket_price_resell: null,
        average_ticket_price_platinum: '600.00',
        average_sales_price: '133.25',
        get_in_price: r.getIn,
        currency: newest ? 'USD' : 'CAD',
      },
    });
  }

  fx.empty = newId();
  fx.emptyEventId = await insertEvent(db, { marketplace_b_event_id: fx.empty });

  // The most recent run found nothing: its (empty) rows are the answer, not the older run's.
  fx.latestWithout = newId();
  const id = await insertEvent(db, { marketplace_b_event_id: fx.latestWithout });
  await insertMarketplaceBRun(db, id, { created_at: new Date('2025-05-01T10:00:00Z'), sections: [{ section_name: 'Old', capacity: 5, available_stock: 5, sold_amount: 0 }], offers: [{ offer_name: 'Old', offer_stock: 5, average_price_fees: '5.00', average_price_no_fees: '4.00', offer_type: 1 }] });
  await insertMarketplaceBRun(db, id, { created_at: new Date('2025-05-02T10:00:00Z'), region: 'de' });
});

describe('an event with scrape runs', () => {
  it('answers the three blocks of spec 2.3, exactly, with the default limit', async () => {
    const r = await t.get(path(fx.full));
    expect(r.status, r.text).toBe(200);
    const body = expectExactShape(marketplaceBResponseSchema, r.body);
    expect(Object.keys(body)).toEqual(['marketplace_b_event', 'latest_stats', 'dashboard_v2']);
    const block = body.marketplace_b_event;
    expect(block.scrapeRuns).toEqual(NEWEST_FIRST.map((x) => ({ region: x.region, created_date_time: x.at })));
    expect(block.sectionStats).toEqual([
      { section_name: 'Floor', capacity: '2000', available_stock: '150', sold_amount: '1850', created_date_time: RUNS[0]!.at },
      { section_name: 'Balcony', capacity: null, available_stock: '0', sold_amount: null, created_date_time: RUNS[0]!.at },
    ]);
    expect(block.offerStats).toEqual([
      { offer_name: 'Standard', offer_stock: 120, average_price_fees: 155.4, average_price_no_fees: 140, offer_type: 1, currency: 'USD', created_date_time: RUNS[0]!.at },
      { offer_name: 'Verified Resale', offer_stock: 30, average_price_fees: 310, average_price_no_fees: 280.5, offer_type: 2, currency: 'USD', created_date_time: RUNS[0]!.at },
    ]);
    expect(block.statisticsHistory.map((h) => h.created_date_time)).toEqual(NEWEST_FIRST.map((x) => x.at));
    expect(block.statisticsHistory[0]).toEqual({
      tickets_sold: 600,
      tickets_sold_24h: 100,
      available_tickets: 800,
      created_date_time: RUNS[0]!.at,
      highest_price: '900.00',
      lowest_price: '49.00',
      average_ticket_price_available: '150.00',
      average_ticket_price_standard: '140.00',
      average_ticket_price_resell: null,
      average_ticket_price_platinum: '600.00',
      capacity: 2000,
      currency: 'USD',
    });
    expect(body.latest_stats).toEqual({ tickets_sold: 600, available_tickets: 800 });
  });

  it('dashboard_v2: current values from the newest row, 24 h changes as numbers, one chart point per UTC day (its last row), oldest first', async () => {
    const { body } = await t.get(path(fx.full));
    expect(body.dashboard_v2).toEqual({
      currency: 'USD',
      current_values: {
        total_tickets_sold: 600,
        tickets_sold_last_24h: 100,
        // 500 -> 600
        tickets_sold_last_24h_percentage: 20,
        available_tickets: 800,
        // against the newest row at least 24 h older (03-02 21:00, 1050 available)
        available_tickets_delta_percentage: -23.81,
        listing_available: 200,
        average_sales_price: '133.25',
        average_listing_price: '150.00',
        get_in_price: '49.00',
      },
      charts: {
        timestamps: ['2025-03-01', '2025-03-02', '2025-03-03', '2025-03-04'],
        total_tickets_sold: [100, 260, 400, 600],
        tickets_sold_last_24h: [10, 60, 140, 100],
        available_tickets: [1200, 1050, 1000, 800],
        listing_available: [300, 270, 250, 200],
        average_listing_price: ['120.00', '130.50', '140.00', '150.00'],
        get_in_price: [null, '41.00', '45.00', '49.00'],
      },
    });
  });

  it.each([1, 2, 3])('limit=%i trims scrapeRuns, statisticsHistory and every chart series to the newest entries', async (limit) => {
    const body = expectExactShape(marketplaceBResponseSchema, (await t.get(path(fx.full, `?limit=${limit}`))).body);
    expect(body.marketplace_b_event.scrapeRuns.map((x) => x.created_date_time)).toEqual(NEWEST_FIRST.slice(0, limit).map((x) => x.at));
    expect(body.marketplace_b_event.statisticsHistory.map((x) => x.created_date_time)).toEqual(NEWEST_FIRST.slice(0, limit).map((x) => x.at));
    const days = ['2025-03-01', '2025-03-02', '2025-03-03', '2025-03-04'];
    expect(body.dashboard_v2.charts.timestamps).toEqual(days.slice(-limit));
    for (const series of Object.values(body.dashboard_v2.charts)) expect(series).toHaveLength(limit);
    // Section and offer rows are the latest run's whatever the limit.
    expect(body.marketplace_b_event.sectionStats).toHaveLength(2);
    expect(body.marketplace_b_event.offerStats).toHaveLength(2);
    expect(body.latest_stats).toEqual({ tickets_sold: 600, available_tickets: 800 });
  });

  it('limit=1000 and leading zeros are accepted', async () => {
    for (const q of ['?limit=1000', '?limit=0005']) expect((await t.get(path(fx.full, q))).status).toBe(200);
  });

  it('sectionStats and offerStats come from the most recent run only, even when it has none', async () => {
    const body = expectExactShape(marketplaceBResponseSchema, (await t.get(path(fx.latestWithout))).body);
    expect(body.marketplace_b_event.scrapeRuns.map((r) => r.region)).toEqual(['de', 'us']);
    expect(body.marketplace_b_event.sectionStats).toEqual([]);
    expect(body.marketplace_b_event.offerStats).toEqual([]);
  });

  it('the three blocks are three statements on the pool at once', async () => {
    const pool = slowDataPool(5_000);
    let inFlight = 0;
    let most = 0;
    const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
    (pool as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = async (...args: unknown[]) => {
      most = Math.max(most, ++inFlight);
      try {
        return await query(...args);
      } finally {
        inFlight--;
      }
    };
    const g = await startGatewayWithDataPool(pool);
    try {
      const a = await newAccount(t.gw.db);
      const r = await fetch(g.gw.url + path(fx.full), { headers: { apikey: a.key } });
      expect(r.status).toBe(200);
      expect(most).toBe(3);
      expect(pool.totalCount).toBe(3); // three connections: nothing waited for another
    } finally {
      await g.close();
    }
  });
});

describe('an event with no scrape run yet', () => {
  it('answers empty lists, zero counts, null prices and changes, USD', async () => {
    const body = expectExactShape(marketplaceBResponseSchema, (await t.get(path(fx.empty))).body);
    expect(body).toEqual({
      marketplace_b_event: { scrapeRuns: [], sectionStats: [], offerStats: [], statisticsHistory: [] },
      latest_stats: { tickets_sold: 0, available_tickets: 0 },
      dashboard_v2: {
        currency: 'USD',
        current_values: {
          total_tickets_sold: 0,
          tickets_sold_last_24h: 0,
          tickets_sold_last_24h_percentage: null,
          available_tickets: 0,
          available_tickets_delta_percentage: null,
          listing_available: 0,
          average_sales_price: null,
          average_listing_price: null,
          get_in_price: null,
        },
        charts: { timestamps: [], total_tickets_sold: [], tickets_sold_last_24h: [], available_tickets: [], listing_available: [], average_listing_price: [], get_in_price: [] },
      },
    });
  });
});

describe('errors', () => {
  it.each(['0', '1001', '-1', '1.5', 'abc', '', '1e2', '%201'])('limit=%s is 400 INVALID_REQUEST', async (limit) => {
    const msg = expectMarketDataError(await t.get(path(fx.full, `?limit=${limit}`)), 400, 'INVALID_REQUEST');
    expect(msg).toContain('limit');
  });

  it('limit given twice, or another parameter, is 400 INVALID_REQUEST', async () => {
    expectMarketDataError(await t.get(path(fx.full, '?limit=1&limit=2')), 400, 'INVALID_REQUEST');
    expectMarketDataError(await t.get(path(fx.full, '?sales_limit=2')), 400, 'INVALID_REQUEST');
  });

  it.each(['NOSUCHEVENT0', 'a.b', 'a%20b', 'x'.repeat(65), '%00', '%E2%82%AC', 'E-12'])('%s is 404 EVENT_NOT_FOUND', async (id) => {
    expectMarketDataError(await t.get(path(id)), 404, 'EVENT_NOT_FOUND');
  });

  it('the id is matched exactly (case included)', async () => {
    expectMarketDataError(await t.get(path(fx.full.toLowerCase())), 404, 'EVENT_NOT_FOUND');
  });
});

describe('billing', () => {
  it('costs 1 credit per answer, 4xx from the API included', async () => {
    const a = await newAccount(t.gw.db);
    const statuses = [];
    for (const p of [path(fx.full), path(fx.empty, '?limit=1000'), path(fx.full, '?limit=0')]) statuses.push((await t.api('GET', p, { key: a.key })).status);
    const last = await t.api('GET', path('NOSUCHEVENT0'), { key: a.key });
    expect([...statuses, last.status]).toEqual([200, 200, 400, 404]);
    await expectBilled(t.gw.db, a.accountId, last.headers.get('x-request-id'), 4, 'charged');
  });
});

describeBackendFailures(t, { path: () => path(fx.full), lockedTable: 'mb_offer_stats' });

describe('properties', () => {
  it('no path id or query string gives a 5xx or changes stored data; limit bounds every list', async () => {
    const ids = [fx.fullEventId, fx.emptyEventId];
    const before = await storedDigest(t.gw.db, ids, []);
    const anyText = fc.string({ unit: 'binary', maxLength: 70 });
    const idText = fc.oneof(anyText, fc.stringMatching(/^[A-Za-z0-9_.-]{0,70}$/), fc.constantFrom(fx.full, fx.empty));
    const limit = fc.oneof(fc.integer({ min: -3, max: 1100 }).map(String), anyText);
    const extra = fc.option(fc.tuple(anyText, anyText), { nil: undefined });
    await fc.assert(
      fc.asyncProperty(idText, fc.option(limit, { nil: undefined }), extra, async (id, l, x) => {
        const params = [l === undefined ? '' : `limit=${encodeURIComponent(l)}`, x ? `${encodeURIComponent(x[0])}=${encodeURIComponent(x[1])}` : ''];
        const qs = params.filter(Boolean).join('&');
        const r = await t.get(path(encodeURIComponent(id), qs ? `?${qs}` : ''));
        expect(r.status, `${id} ${qs} -> ${r.text}`).toBeLessThan(500);
        if (r.status === 200) {
          const body = expectExactShape(marketplaceBResponseSchema, r.body);
          const max = l === undefined ? 100 : Number(l);
          expect(body.marketplace_b_event.scrapeRuns.length).toBeLessThanOrEqual(max);
          expect(body.dashboard_v2.charts.timestamps.length).toBeLessThanOrEqual(max);
        }
      }),
      { numRuns: 120 },
    );
    expect(await storedDigest(t.gw.db, ids, [])).toBe(before);
  });

  it('any limit from 1 to 1000 gives exactly the newest min(limit, available) runs, history rows and chart days', async () => {
    // What the full fixture holds: one run and one history row per RUNS entry, one chart point
    // per UTC day among them, and the newest run's two section and two offer rows.
    const days = [...new Set(RUNS.map((r) => r.at.slice(0, 10)))].sort();
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 1000 }), async (limit) => {
        const r = await t.get(path(fx.full, `?limit=${limit}`));
        expect(r.status, r.text).toBe(200);
        const body = expectExactShape(marketplaceBResponseSchema, r.body);
        const runs = NEWEST_FIRST.slice(0, Math.min(limit, RUNS.length)).map((x) => x.at);
        expect(body.marketplace_b_event.scrapeRuns).toHaveLength(Math.min(limit, RUNS.length));
        expect(body.marketplace_b_event.scrapeRuns.map((x) => x.created_date_time)).toEqual(runs);
        expect(body.marketplace_b_event.statisticsHistory).toHaveLength(Math.min(limit, RUNS.length));
        expect(body.marketplace_b_event.statisticsHistory.map((x) => x.created_date_time)).toEqual(runs);
        expect(body.dashboard_v2.charts.timestamps).toEqual(days.slice(-Math.min(limit, days.length)));
        for (const series of Object.values(body.dashboard_v2.charts)) expect(series).toHaveLength(Math.min(limit, days.length));
        expect(body.marketplace_b_event.sectionStats).toHaveLength(2);
        expect(body.marketplace_b_event.offerStats).toHaveLength(2);
      }),
      { numRuns: 60 },
    );
  });
});
