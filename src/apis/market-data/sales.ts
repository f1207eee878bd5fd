// GET /svc/data/sales/marketplace_a/{event_id} (spec 4.1, 8): an event's most recent individual
// sales on marketplace A, newest first. The gateway has already checked sales_limit and billed
// ceil(sales_limit / 20); the handler reads it with the same function (catalog.ts salesLimit).
import { z } from 'zod';
import type { Pool } from '../../../db/pool.ts';
import { SALES_LIMIT_DEFAULT, SALES_LIMIT_MAX, salesLimit } from '../../gateway/catalog.ts';
import type { RouteContext, RouteSpec } from '../../gateway/route.ts';
import { eventNotFound, marketplaceAEventId, marketplaceAEventIdParams } from './event-id.ts';
import { readQuery } from './query-params.ts';
import { BACKEND_FAILURES, decimalText, errorResponse, isoTimestamp, timestamp } from './response-schemas.ts';
import { CURRENCY_WITHOUT_SALES, DOMINANT_SALE_CURRENCY } from './sale-currency.ts';

export const saleSchema = z
  .object({
    sale_id: z.string().meta({ description: "Marketplace A's own id of the sale" }),
    sold_at: timestamp,
    section: z.string().nullable(),
    row: z.string().nullable(),
    quantity: z.int().min(1).meta({ description: 'Tickets in the sale' }),
    price: decimalText.meta({ description: 'Per ticket, in `currency`' }),
    total: decimalText.meta({ description: 'price x quantity' }),
    currency: z.string().meta({ description: 'ISO 4217 currency of this sale' }),
    ticket_type: z.string().nullable().meta({ description: 'standard, resale, platinum or general_admission; null when not known' }),
  })
  .meta({ id: 'MarketplaceASale' });

export const salesResponseSchema = z
  .object({
    marketplace_a_event_id: z.int(),
    currency: z.string().meta({ description: "The event's currency (spec 2.2 event.currency); each sale names its own" }),
    sales: z.array(saleSchema).meta({ description: 'Newest first (sold_at, then the order recorded); at most sales_limit; empty before any sale' }),
  })
  .meta({ id: 'MarketplaceASales' });

export type SalesResponse = z.output<typeof salesResponseSchema>;

const EVENT_SQL = `
SELECT e.id, sc.currency FROM events e LEFT JOIN ${DOMINANT_SALE_CURRENCY} sc ON TRUE WHERE e.id = $1`;

// price is numeric(14, 2) and quantity an integer: their product keeps scale 2 ("99.99") and
// never overflows, so total needs no cast.
const SALES_SQL = `
SELECT sale_ref AS sale_id, sold_at, section, "row", quantity, price, price * quantity AS total,
       currency, ticket_type
FROM ma_sales WHERE event_id = $1
ORDER BY sold_at DESC, id DESC
LIMIT $2`;

export async function readSales(pool: Pool, id: number, limit: number): Promise<SalesResponse | null> {
  const [event, sales] = await Promise.all([pool.query(EVENT_SQL, [id]), pool.query(SALES_SQL, [id, limit])]);
  const e = event.rows[0] as { id: number; currency: string | null } | undefined;
  if (!e) return null;
  return {
    marketplace_a_event_id: Number(e.id),
    currency: e.currency ?? CURRENCY_WITHOUT_SALES,
    sales: sales.rows.map((s) => ({ ...s, sold_at: isoTimestamp(s.sold_at as Date) })) as SalesResponse['sales'],
  };
}

export const salesRoute: RouteSpec = {
  operationId: 'listMarketplaceASales',
  summary: 'Recent individual sales of a marketplace A event, newest first; costs ceil(sales_limit / 20)',
  request: {
    params: marketplaceAEventIdParams,
    query: z.object({
      sales_limit: z
        .int()
        .min(1)
        .max(SALES_LIMIT_MAX)
        .default(SALES_LIMIT_DEFAULT)
        .meta({ description: 'Rows to return; decimal digits only (leading zeros allowed); billed ceil(sales_limit / 20)' }),
    }),
  },
  responses: {
    200: { description: 'The sales list', schema: salesResponseSchema },
    400: errorResponse(
      'INVALID_MARKETPLACE_A_ID: the id is not E-<digits>; INVALID_REQUEST: a query parameter other than sales_limit (billed). ' +
        'A sales_limit outside 1..200, malformed or repeated is refused by the gateway first: `{error: {code: "invalid_parameter"}}`, not billed',
    ),
    404: errorResponse('EVENT_NOT_FOUND: no marketplace A event has this id (billed)'),
    ...BACKEND_FAILURES,
  },
  handler: async (ctx: RouteContext) => {
    const raw = (ctx as unknown as { params: { event_id: string } }).params.event_id;
    const id = marketplaceAEventId(raw);
    // Unknown parameters are refused here; sales_limit itself the gateway has already checked.
    const limit = salesLimit(readQuery(ctx, ['sales_limit']));
    const body = await readSales(ctx.state.services.pool, id, limit);
    if (!body) throw eventNotFound(raw);
    ctx.body = body;
  },
};
