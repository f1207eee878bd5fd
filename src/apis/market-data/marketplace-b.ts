// GET /svc/data/marketplace_b/{tm_event_id} (spec 2.3): an event's marketplace B scrape runs,
// the section and offer rows of its most recent run, its statistics history, latest stats and
// dashboard. The three blocks are three statements on three pooled connections, run at once
// (spec: "fetched in parallel"); the latest_stats statement also says whether the event exists.
import { z } from 'zod';
import type { Pool } from '../../../db/pool.ts';
import { percentChange } from '../../market-data/stats-formulas.ts';
import type { RouteContext, RouteSpec } from '../../gateway/route.ts';
import { MarketDataError } from './errors.ts';
import { marketplaceBResponseSchema, type MarketplaceBResponse } from './marketplace-b-schema.ts';
import { integerParam, quoted, readQuery } from './query-params.ts';
import { BACKEND_FAILURES, errorResponse, sqlIsoTimestamp } from './response-schemas.ts';
import { CURRENCY_WITHOUT_SALES } from './sale-currency.ts';

export const MARKETPLACE_B_LIMIT = { min: 1, max: 1000, fallback: 100 } as const;

/**
 * A marketplace B event id as it appears in the event's URL: letters, digits, `-` and `_`, 1 to
 * 64 characters. Anything else cannot be on file and answers 404 without a query.
 */
export const MARKETPLACE_B_EVENT_ID = /^[A-Za-z0-9_-]{1,64}$/;

// $1: the event's marketplace B id.
const EVENT = `(SELECT id FROM events WHERE marketplace_b_event_id = $1)`;

// $2: limit. The most recent run is the newest by time, then by id, as the run list orders them.
const EVENT_BLOCK_SQL = `
WITH last_run AS (
  SELECT id FROM mb_scrape_runs WHERE event_id = ${EVENT} ORDER BY created_at DESC, id DESC LIMIT 1)
SELECT
  (SELECT coalesce(json_agg(json_build_object('region', r.region, 'created_date_time', ${sqlIsoTimestamp('r.created_at')})
                            ORDER BY r.created_at DESC, r.id DESC), '[]')
     FROM (SELECT id, region, created_at FROM mb_scrape_runs WHERE event_id = ${EVENT}
           ORDER BY created_at DESC, id DESC LIMIT $2) r) AS scrape_runs,
  (SELECT coalesce(json_agg(json_build_object(
            'section_name', s.section_name, 'capacity', s.capacity::text, 'available_stock', s.available_stock::text,
            'sold_amount', s.sold_amount::text, 'created_date_time', ${sqlIsoTimestamp('s.created_at')}) ORDER BY s.id), '[]')
     FROM mb_section_stats s WHERE s.run_id = (SELECT id FROM last_run)) AS section_stats,
  (SELECT coalesce(json_agg(json_build_object(
            'offer_name', o.offer_name, 'offer_stock', o.offer_stock, 'average_price_fees', o.average_price_fees,
            'average_price_no_fees', o.average_price_no_fees, 'offer_type', o.offer_type, 'currency', o.currency,
            'created_date_time', ${sqlIsoTimestamp('o.created_at')}) ORDER BY o.id), '[]')
     FROM mb_offer_stats o WHERE o.run_id = (SELECT id FROM last_run)) AS offer_stats,
  (SELECT coalesce(json_agg(json_build_object(
            'tickets_sold', h.tickets_sold, 'tickets_sold_24h', h.tickets_sold_24h, 'available_tickets', h.available_tickets,
            'created_date_time', ${sqlIsoTimestamp('h.created_at')}, 'highest_price', h.highest_price::text,
            'lowest_price', h.lowest_price::text, 'average_ticket_price_available', h.average_ticket_price_available::text,
            'average_ticket_price_standard', h.average_ticket_price_standard::text,
            'average_ticket_price_resell', h.average_ticket_price_resell::text,
            'average_ticket_price_platinum', h.average_ticket_price_platinum::text,
            'capacity', h.capacity, 'currency', h.currency) ORDER BY h.created_at DESC, h.id DESC), '[]')
     FROM (SELECT * FROM mb_statistics_history WHERE event_id = ${EVENT}
           ORDER BY created_at DESC, id DESC LIMIT $2) h) AS statistics_history`;

// No row at all: no such event.
const LATEST_STATS_SQL = `
SELECT e.id, h.tickets_sold, h.available_tickets
FROM events e
LEFT JOIN LATERAL (
  SELECT tickets_sold, available_tickets FROM mb_statistics_history WHERE event_id = e.id
  ORDER BY created_at DESC, id DESC LIMIT 1) h ON TRUE
WHERE e.marketplace_b_event_id = $1`;

// The level of available tickets 24 h before the newest row is the newest row at least 24 h
// older (migration 006's meaning of a level's 24 h value). A chart point is a UTC day's last
// row: from the newest row, each step takes the newest row before the previous point's day
// began, one index probe per point (a DISTINCT ON over the whole history sorted every row).
const DASHBOARD_SQL = `
WITH RECURSIVE latest AS (
  SELECT * FROM mb_statistics_history WHERE event_id = ${EVENT} ORDER BY created_at DESC, id DESC LIMIT 1),
day_before AS (
  SELECT h.available_tickets FROM mb_statistics_history h, latest l
  WHERE h.event_id = l.event_id AND h.created_at <= l.created_at - interval '24 hours'
  ORDER BY h.created_at DESC, h.id DESC LIMIT 1),
chart AS (
  SELECT l.event_id, (l.created_at AT TIME ZONE 'UTC')::date AS day, 1 AS n, l.tickets_sold, l.tickets_sold_24h,
         l.available_tickets, l.listings_available, l.average_ticket_price_available, l.get_in_price
  FROM latest l
  UNION ALL
  SELECT c.event_id, (h.created_at AT TIME ZONE 'UTC')::date, c.n + 1, h.tickets_sold, h.tickets_sold_24h,
         h.available_tickets, h.listings_available, h.average_ticket_price_available, h.get_in_price
  FROM chart c
  CROSS JOIN LATERAL (
    SELECT * FROM mb_statistics_history
    WHERE event_id = c.event_id AND created_at < (c.day::timestamp AT TIME ZONE 'UTC')
    ORDER BY created_at DESC, id DESC LIMIT 1) h
  WHERE c.n < $2)
SELECT l.currency, l.tickets_sold, l.tickets_sold_24h, l.available_tickets, l.listings_available,
       l.average_sales_price, l.average_ticket_price_available, l.get_in_price,
       b.available_tickets AS available_tickets_before,
       (SELECT coalesce(json_agg(json_build_object(
                 'day', day::text, 'tickets_sold', tickets_sold, 'tickets_sold_24h', tickets_sold_24h,
                 'available_tickets', available_tickets, 'listings_available', listings_available,
                 'average_listing_price', average_ticket_price_available::text, 'get_in_price', get_in_price::text)
               ORDER BY day), '[]') FROM chart) AS chart
FROM (SELECT 1) one LEFT JOIN latest l ON TRUE LEFT JOIN day_before b ON TRUE`;

interface ChartPoint {
  day: string;
  tickets_sold: number;
  tickets_sold_24h: number;
  available_tickets: number;
  listings_available: number;
  average_listing_price: string | null;
  get_in_price: string | null;
}

function percentNumber(now: number | null | undefined, before: number | null | undefined): number | null {
  const p = percentChange(now, before);
  return p === null ? null : Number(p);
}

function renderDashboard(d: Record<string, unknown>): MarketplaceBResponse['dashboard_v2'] {
  const sold = (d.tickets_sold as number | null) ?? 0;
  const sold24h = (d.tickets_sold_24h as number | null) ?? 0;
  const available = (d.available_tickets as number | null) ?? 0;
  const chart = d.chart as ChartPoint[];
  const hasStats = d.tickets_sold != null;
  return {
    currency: hasStats ? String(d.currency) : CURRENCY_WITHOUT_SALES,
    current_values: {
      total_tickets_sold: sold,
      tickets_sold_last_24h: sold24h,
      // tickets_sold is a running total: it grew by tickets_sold_24h from sold - sold24h.
      tickets_sold_last_24h_percentage: hasStats ? percentNumber(sold, sold - sold24h) : null,
      available_tickets: available,
      available_tickets_delta_percentage: hasStats ? percentNumber(available, d.available_tickets_before as number | null) : null,
      listing_available: (d.listings_available as number | null) ?? 0,
      average_sales_price: (d.average_sales_price as string | null) ?? null,
      average_listing_price: (d.average_ticket_price_available as string | null) ?? null,
      get_in_price: (d.get_in_price as string | null) ?? null,
    },
    charts: {
      timestamps: chart.map((p) => p.day),
      total_tickets_sold: chart.map((p) => p.tickets_sold),
      tickets_sold_last_24h: chart.map((p) => p.tickets_sold_24h),
      available_tickets: chart.map((p) => p.available_tickets),
      listing_available: chart.map((p) => p.listings_available),
      average_listing_price: chart.map((p) => p.average_listing_price),
      get_in_price: chart.map((p) => p.get_in_price),
    },
  };
}

export async function readMarketplaceBEvent(pool: Pool, tmEventId: string, limit: number): Promise<MarketplaceBResponse | null> {
  const params = [tmEventId, limit];
  const [block, latest, dashboard] = await Promise.all([
    pool.query(EVENT_BLOCK_SQL, params),
    pool.query(LATEST_STATS_SQL, [tmEventId]),
    pool.query(DASHBOARD_SQL, params),
  ]);
  const l = latest.rows[0] as { tickets_sold: number | null; available_tickets: number | null } | undefined;
  if (!l) return null;
  const b = block.rows[0]!;
  return {
    marketplace_b_event: {
      scrapeRuns: b.scrape_runs,
      sectionStats: b.section_stats,
      offerStats: b.offer_stats,
      statisticsHistory: b.statistics_history,
    },
    latest_stats: { tickets_sold: l.tickets_sold ?? 0, available_tickets: l.available_tickets ?? 0 },
    dashboard_v2: renderDashboard(dashboard.rows[0]!),
  };
}

function notFound(raw: string): MarketDataError {
  return new MarketDataError('EVENT_NOT_FOUND', `no tracked marketplace B event ${quoted(raw)}`);
}

export const marketplaceBRoute: RouteSpec = {
  operationId: 'getMarketplaceBEvent',
  summary: 'Marketplace B event: scrape runs, most recent section and offer rows, statistics history, dashboard (spec 2.3)',
  request: {
    params: z.object({
      tm_event_id: z
        .string()
        .regex(MARKETPLACE_B_EVENT_ID)
        .meta({ description: 'The id as it appears in the event URL: 1-64 letters, digits, - or _', example: 'G5vYZ9fT1aB2cD3e' }),
    }),
    query: z.object({
      limit: z
        .int()
        .min(MARKETPLACE_B_LIMIT.min)
        .max(MARKETPLACE_B_LIMIT.max)
        .default(MARKETPLACE_B_LIMIT.fallback)
        .meta({ description: 'Entries of scrapeRuns, statisticsHistory and each chart series' }),
    }),
  },
  responses: {
    200: { description: 'The three blocks of spec 2.3', schema: marketplaceBResponseSchema },
    400: errorResponse('INVALID_REQUEST: limit is not an integer from 1 to 1000, or another query parameter was sent (billed)'),
    404: errorResponse('EVENT_NOT_FOUND: no event on file has this marketplace B id (billed)'),
    ...BACKEND_FAILURES,
  },
  handler: async (ctx: RouteContext) => {
    const raw = (ctx as unknown as { params: { tm_event_id: string } }).params.tm_event_id;
    const query = readQuery(ctx, ['limit']);
    const limit = integerParam('limit', query.limit, MARKETPLACE_B_LIMIT);
    if (!MARKETPLACE_B_EVENT_ID.test(raw)) throw notFound(raw);
    const body = await readMarketplaceBEvent(ctx.state.services.pool, raw, limit);
    if (!body) throw notFound(raw);
    ctx.body = body;
  },
};
