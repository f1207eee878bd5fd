// GET /svc/data/marketplace_a/{event_id} (spec 2.2): the event, its newest statistics snapshot,
// the daily statistics of a rolling 30-day window and its price histogram. Two statements run
// concurrently on the per-request pool (the event with everything that has one row per event,
// and the daily window), so one round trip answers it.
import type { Pool } from '../../../db/pool.ts';
import { DEFAULT_HISTOGRAM_BINS, type HistogramBin } from '../../market-data/price-histogram.ts';
import type { RouteContext, RouteSpec } from '../../gateway/route.ts';
import { eventNotFound, marketplaceAEventId, marketplaceAEventIdParams } from './event-id.ts';
import {
  marketplaceAResponseSchema,
  marketplaceASummarySchema,
  type MarketplaceAResponse,
  type MarketplaceASummary,
} from './marketplace-a-schema.ts';
import { readQuery } from './query-params.ts';
import { BACKEND_FAILURES, errorResponse, isoTimestamp } from './response-schemas.ts';
import { CURRENCY_WITHOUT_SALES, DOMINANT_SALE_CURRENCY } from './sale-currency.ts';

/** Days in the rolling window, today (UTC) included. */
export const DAILY_WINDOW_DAYS = 30;

/** Summary keys that are ma_stats_snapshots columns of the same name. */
const SNAPSHOT_COLUMNS = Object.keys(marketplaceASummarySchema.shape).filter((k) => k !== 'stats_date' && k !== 'currency');

type Row = Record<string, unknown>;

const EVENT_SQL = `
SELECT e.id, e.name, e.event_date, e.image_url, e.marketplace_a_url,
       e.marketplace_b_event_id, e.marketplace_b_event_url, e.marketplace_c_event_id, e.marketplace_c_event_url,
       c.name AS category_name,
       v.id AS venue_id, v.name AS venue_name, v.city AS venue_city, v.country AS venue_country,
       v.country_code AS venue_country_code, v.svg_map_url AS venue_svg_map_url,
       a.id AS artist_id, a.name AS artist_name, a.url AS artist_url, a.image_url AS artist_image_url,
       sc.currency AS sale_currency,
       h.bins AS histogram_bins, h.min AS histogram_min, h.max AS histogram_max, h.currency AS histogram_currency,
       h.data AS histogram_data,
       s.id AS snapshot_id, s.captured_at AS snapshot_captured_at, s.currency AS snapshot_currency,
       ${SNAPSHOT_COLUMNS.map((c) => `s.${c} AS snapshot_${c}`).join(', ')}
FROM events e
LEFT JOIN categories c ON c.id = e.category_id
LEFT JOIN venues v ON v.id = e.venue_id
LEFT JOIN artists a ON a.id = e.artist_id
LEFT JOIN ${DOMINANT_SALE_CURRENCY} sc ON TRUE
LEFT JOIN ma_price_histograms h ON h.event_id = e.id
LEFT JOIN LATERAL (
  SELECT * FROM ma_stats_snapshots WHERE event_id = e.id ORDER BY captured_at DESC, id DESC LIMIT 1) s ON TRUE
WHERE e.id = $1`;

// The window is computed from the service's clock, passed as the UTC date of today.
const DAILY_SQL = `
SELECT stat_date::text AS stat_date, tickets_sold, tickets_sold_24h, available_tickets, listings_available,
       average_ticket_price_sold, average_ticket_price_available, highest_sale_price
FROM ma_daily_stats
WHERE event_id = $1 AND stat_date BETWEEN $2::date - ${DAILY_WINDOW_DAYS - 1} AND $2::date
ORDER BY stat_date`;

function str(v: unknown): string | null {
  return v == null ? null : String(v);
}

function renderEvent(r: Row, currency: string): MarketplaceAResponse['event'] {
  return {
    marketplace_a_event_id: Number(r.id),
    marketplace_a_event_url: str(r.marketplace_a_url),
    event_name: str(r.name),
    event_date: isoTimestamp(r.event_date as Date | null),
    event_image: str(r.image_url),
    category_name: str(r.category_name),
    currency,
    venue:
      r.venue_id == null
        ? null
        : {
            name: str(r.venue_name),
            city: str(r.venue_city),
            country: str(r.venue_country),
            country_code: str(r.venue_country_code),
            svg_map_url: str(r.venue_svg_map_url),
          },
    artist: r.artist_id == null ? null : { name: str(r.artist_name), url: str(r.artist_url), image_url: str(r.artist_image_url) },
    external_urls: {
      marketplace_b_event_id: str(r.marketplace_b_event_id),
      marketplace_b_event_url: str(r.marketplace_b_event_url),
      marketplace_c_event_id: str(r.marketplace_c_event_id),
      marketplace_c_event_url: str(r.marketplace_c_event_url),
    },
  };
}

// numeric columns arrive as decimal text, integer ones as numbers: both as the spec wants them.
function renderSummary(r: Row, eventCurrency: string): MarketplaceASummary {
  const summary: Row = {};
  for (const key of Object.keys(marketplaceASummarySchema.shape)) summary[key] = r[`snapshot_${key}`] ?? null;
  summary.stats_date = isoTimestamp(r.snapshot_captured_at as Date | null);
  // The snapshot names the currency of its own amounts; the event's rule covers "no snapshot yet".
  summary.currency = r.snapshot_id == null ? eventCurrency : String(r.snapshot_currency);
  return summary as MarketplaceASummary;
}

function renderHistogram(r: Row, eventCurrency: string): MarketplaceAResponse['price_histogram'] {
  const stored = Array.isArray(r.histogram_data) ? (r.histogram_data as HistogramBin[]) : [];
  const bins = r.histogram_bins == null ? DEFAULT_HISTOGRAM_BINS : Number(r.histogram_bins);
  const currency = r.histogram_currency == null ? eventCurrency : String(r.histogram_currency);
  // No sales on file (or none rolled up yet): the spec's empty histogram, whatever a stale row says.
  if (r.sale_currency == null || stored.length === 0) return { bins, min: '0', max: '0', currency, data: [] };
  return {
    bins,
    min: String(r.histogram_min),
    max: String(r.histogram_max),
    currency,
    data: stored.map((b) => ({ start: String(b.start), end: String(b.end), tickets_sold: Number(b.tickets_sold) })),
  };
}

function todayUtc(): string {
  return new Date().toISOString().slice(0, 10);
}

export async function readMarketplaceAEvent(pool: Pool, id: number): Promise<MarketplaceAResponse | null> {
  const [event, daily] = await Promise.all([pool.query(EVENT_SQL, [id]), pool.query(DAILY_SQL, [id, todayUtc()])]);
  const r = event.rows[0] as Row | undefined;
  if (!r) return null;
  const currency = r.sale_currency == null ? CURRENCY_WITHOUT_SALES : String(r.sale_currency);
  return {
    event: renderEvent(r, currency),
    summary: renderSummary(r, currency),
    daily_statistics: daily.rows as MarketplaceAResponse['daily_statistics'],
    price_histogram: renderHistogram(r, currency),
  };
}

export const marketplaceARoute: RouteSpec = {
  operationId: 'getMarketplaceAEvent',
  summary: 'Marketplace A event: details, newest statistics, 30-day daily statistics, price histogram (spec 2.2)',
  request: { params: marketplaceAEventIdParams },
  responses: {
    200: { description: 'The four members of spec 2.2', schema: marketplaceAResponseSchema },
    400: errorResponse('INVALID_MARKETPLACE_A_ID: the id is not E-<digits>; INVALID_REQUEST: a query parameter was sent (billed)'),
    404: errorResponse('EVENT_NOT_FOUND: no marketplace A event has this id (billed)'),
    ...BACKEND_FAILURES,
  },
  handler: async (ctx: RouteContext) => {
    const raw = (ctx as unknown as { params: { event_id: string } }).params.event_id;
    const id = marketplaceAEventId(raw);
    readQuery(ctx, []);
    const body = await readMarketplaceAEvent(ctx.state.services.pool, id);
    if (!body) throw eventNotFound(raw);
    ctx.body = body;
  },
};
