// GET /svc/data/sales/marketplace_a/{event_id} (spec 4.1, 8, 7.7) through the real gateway and
// PostgreSQL: the documented sales row and envelope, newest-first order with a stable tie-break,
// sales_limit bounds and default, the id rules shared with the event endpoint, billing of
// ceil(sales_limit / 20) (4xx included, 5xx never), and a property over paths and queries.
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { salesResponseSchema } from '../../../src/apis/market-data/sales.ts';
import { gatewayCode } from '../../support/gateway-helpers.ts';
import { newAccount } from '../../support/harness.ts';
import { describeBackendFailures } from '../../support/market-data-backend-failures.ts';
import {
  expectBilled,
  expectExactShape,
  expectMarketDataError,
  hoursFromNow,
  insertEvent,
  insertSales,
  randomEventId,
  storedDigest,
  useReadGateway,
  type SaleFixture,
} from '../../support/market-data-fixtures.ts';

const t = useReadGateway();
const path = (id: string, query = '') => `/svc/data/sales/marketplace_a/${id}${query}`;

const fx = {} as { many: number; few: number; none: number };
const SAME_MOMENT = hoursFromNow(-1);

// 230 sales, one per minute, in EUR but for the most tickets, inserted oldest first.
const MANY: SaleFixture[] = Array.from({ length: 230 }, (_, i) => ({
  sale_ref: `M-${String(i).padStart(3, '0')}`,
  sold_at: new Date(hoursFromNow(-10).getTime() + i * 60_000),
  quantity: i === 0 ? 500 : 1,
  price: `${(10 + i).toFixed(2)}`,
  currency: i === 0 ? 'SEK' : 'EUR',
  section: i % 2 ? `S${i}` : null,
  row: i % 3 ? String(i) : null,
  ticket_type: i % 2 ? 'resale' : null,
}));

beforeAll(async () => {
  const db = t.gw.db;
  fx.many = await insertEvent(db);
  await insertSales(db, fx.many, MANY);

  fx.few = await insertEvent(db);
  // Two sales at the same moment: the one recorded later comes first.
  await insertSales(db, fx.few, [
    { sale_ref: 'F-old', sold_at: hoursFromNow(-5), quantity: 2, price: '30.00', currency: 'USD', section: 'Balcony', row: 'C', ticket_type: 'standard' },
    { sale_ref: 'F-first', sold_at: SAME_MOMENT, quantity: 3, price: '33.33', currency: 'USD' },
    { sale_ref: 'F-second', sold_at: SAME_MOMENT, quantity: 4, price: '0.05', currency: 'GBP', ticket_type: 'platinum' },
  ]);

  fx.none = await insertEvent(db);
});

describe('the sales list', () => {
  it('rows are {sale_id, sold_at, section, row, quantity, price, total, currency, ticket_type}, newest first, ties by recording order', async () => {
    const r = await t.get(path(`E-${fx.few}`));
    expect(r.status, r.text).toBe(200);
    const body = expectExactShape(salesResponseSchema, r.body);
    expect(body).toEqual({
      marketplace_a_event_id: fx.few,
      currency: 'USD',
      sales: [
        { sale_id: 'F-second', sold_at: SAME_MOMENT.toISOString(), section: null, row: null, quantity: 4, price: '0.05', total: '0.20', currency: 'GBP', ticket_type: 'platinum' },
        { sale_id: 'F-first', sold_at: SAME_MOMENT.toISOString(), section: null, row: null, quantity: 3, price: '33.33', total: '99.99', currency: 'USD', ticket_type: null },
        {
          sale_id: 'F-old',
          sold_at: hoursFromNow(-5).toISOString(),
          section: 'Balcony',
          row: 'C',
          quantity: 2,
          price: '30.00',
          total: '60.00',
          currency: 'USD',
          ticket_type: 'standard',
        },
      ],
    });
  });

  it('20 rows by default, the newest; currency is the event currency (most tickets), not the most sales', async () => {
    const body = expectExactShape(salesResponseSchema, (await t.get(path(`E-${fx.many}`))).body);
    expect(body.currency).toBe('SEK');
    expect(body.sales.map((s) => s.sale_id)).toEqual(Array.from({ length: 20 }, (_, i) => `M-${229 - i}`));
  });

  it.each([
    ['1', 1],
    ['45', 45],
    ['200', 200],
    ['020', 20],
  ])('sales_limit=%s gives %i rows, strictly newest first', async (limit, n) => {
    const body = expectExactShape(salesResponseSchema, (await t.get(path(`E-${fx.many}`, `?sales_limit=${limit}`))).body);
    expect(body.sales).toHaveLength(n);
    const times = body.sales.map((s) => Date.parse(s.sold_at));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(body.sales[0]!.sale_id).toBe('M-229');
  });

  it('an event with no sales: an empty list in USD', async () => {
    expect((await t.get(path(`E-${fx.none}`, '?sales_limit=200'))).body).toEqual({ marketplace_a_event_id: fx.none, currency: 'USD', sales: [] });
  });
});

describe('errors', () => {
  it.each(['0', '201', '-1', '1.5', 'abc', '', ' 5', '1e2'])('sales_limit=%s is refused by the gateway before billing (400 invalid_parameter)', async (limit) => {
    const r = await t.get(path(`E-${fx.few}`, `?sales_limit=${encodeURIComponent(limit)}`));
    expect(r.status).toBe(400);
    expect(gatewayCode(r)).toBe('invalid_parameter');
  });

  it('another query parameter is 400 INVALID_REQUEST naming it', async () => {
    const msg = expectMarketDataError(await t.get(path(`E-${fx.few}`, '?limit=100')), 400, 'INVALID_REQUEST');
    expect(msg).toMatch(/"limit".*sales_limit/);
  });

  it.each(['e-1', 'E-', 'E-1x', '1'])('%s is 400 INVALID_MARKETPLACE_A_ID', async (id) => {
    expectMarketDataError(await t.get(path(id)), 400, 'INVALID_MARKETPLACE_A_ID');
  });

  it.each(['E-0', `E-${'1'.repeat(30)}`, 'E-1000000000001'])('%s is 404 EVENT_NOT_FOUND', async (id) => {
    expectMarketDataError(await t.get(path(id)), 404, 'EVENT_NOT_FOUND');
  });

  it('an event not on file is 404 EVENT_NOT_FOUND', async () => {
    expectMarketDataError(await t.get(path(`E-${randomEventId()}`, '?sales_limit=3')), 404, 'EVENT_NOT_FOUND');
  });
});

describe('billing: ceil(sales_limit / 20)', () => {
  it('charges 1, 3 and 10 credits for 20, 41 and 200 rows, and an API 4xx at its own cost', async () => {
    const a = await newAccount(t.gw.db);
    const statuses = [];
    for (const q of ['', '?sales_limit=41', '?sales_limit=200']) statuses.push((await t.api('GET', path(`E-${fx.many}`, q), { key: a.key })).status);
    const notFound = await t.api('GET', path(`E-${randomEventId()}`, '?sales_limit=60'), { key: a.key });
    statuses.push(notFound.status);
    expect(statuses).toEqual([200, 200, 200, 404]);
    await expectBilled(t.gw.db, a.accountId, notFound.headers.get('x-request-id'), 1 + 3 + 10 + 3, 'charged');
  });
});

// sales_limit=100 reserves 5 credits, not 1: the release must give back all of them.
describeBackendFailures(t, { path: () => path(`E-${fx.few}`, '?sales_limit=100'), lockedTable: 'ma_sales' });

describe('properties', () => {
  it('no path id or query string gives a 5xx or changes stored data; a 200 has at most sales_limit rows', async () => {
    const ids = [fx.many, fx.few, fx.none];
    const before = await storedDigest(t.gw.db, ids, []);
    const anyText = fc.string({ unit: 'binary', maxLength: 20 });
    const idText = fc.oneof(anyText, fc.stringMatching(/^E-[0-9]{0,20}$/), fc.constantFrom(...ids.map((i) => `E-${i}`)));
    const limit = fc.oneof(fc.integer({ min: -5, max: 260 }).map(String), anyText, fc.stringMatching(/^0*[0-9]{1,3}$/));
    const extra = fc.option(fc.tuple(anyText, anyText), { nil: undefined });
    await fc.assert(
      fc.asyncProperty(idText, fc.option(limit, { nil: undefined }), extra, async (id, l, x) => {
        const params = [l === undefined ? '' : `sales_limit=${encodeURIComponent(l)}`, x ? `${encodeURIComponent(x[0])}=${encodeURIComponent(x[1])}` : ''];
        const qs = params.filter(Boolean).join('&');
        const r = await t.get(path(encodeURIComponent(id), qs ? `?${qs}` : ''));
        expect(r.status, `${id} ${qs} -> ${r.text}`).toBeLessThan(500);
        if (r.status === 200) {
          const body = expectExactShape(salesResponseSchema, r.body);
          expect(body.sales.length).toBeLessThanOrEqual(l === undefined ? 20 : Number(l));
        }
      }),
      { numRuns: 120 },
    );
    expect(await storedDigest(t.gw.db, ids, [])).toBe(before);
  });

  it('any sales_limit from 1 to 200 gives exactly the newest min(sales_limit, total) sales of the many-sales event', async () => {
    // Every sale of the fixture, newest first (no two share a moment).
    const newestFirst = [...MANY].sort((a, b) => b.sold_at.getTime() - a.sold_at.getTime()).map((s) => s.sale_ref);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 200 }), async (limit) => {
        const r = await t.get(path(`E-${fx.many}`, `?sales_limit=${limit}`));
        expect(r.status, r.text).toBe(200);
        const body = expectExactShape(salesResponseSchema, r.body);
        expect(body.sales).toHaveLength(Math.min(limit, MANY.length));
        expect(body.sales.map((s) => s.sale_id)).toEqual(newestFirst.slice(0, Math.min(limit, MANY.length)));
      }),
      { numRuns: 60 },
    );
  });
});
