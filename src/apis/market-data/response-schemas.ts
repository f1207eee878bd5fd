// Zod building blocks shared by the Market Data read endpoints' response schemas (marketplace A,
// sales, marketplace B, artist): the field shapes of spec 1 (money and percentages as decimal
// text, RFC 3339 UTC timestamps, dates) and the 7.2 error envelope, so every endpoint documents
// them the same way in the OpenAPI document.
import { z } from 'zod';
import { MARKET_DATA_ERRORS, type MarketDataErrorCode } from './errors.ts';

/** Money or a percentage as decimal text: optional minus, digits, optional fraction ("120.50", "-3.25", "0"). */
export const decimalText = z
  .string()
  .regex(/^-?[0-9]+(\.[0-9]+)?$/)
  .meta({ description: 'Decimal text, e.g. "120.50"' });

export const nullableDecimal = decimalText.nullable();

/** RFC 3339 UTC with milliseconds, as Date#toISOString writes it. */
export const timestamp = z.iso.datetime();

export const calendarDate = z.iso.date();

export const marketDataErrorSchema = z
  .object({
    status: z.literal('error'),
    code: z.enum(Object.keys(MARKET_DATA_ERRORS) as [MarketDataErrorCode, ...MarketDataErrorCode[]]),
    message: z.string(),
  })
  .meta({ id: 'MarketDataError', description: 'Market Data error envelope (spec 7.2)' });

/** A documented error response of a read endpoint. */
export function errorResponse(description: string) {
  return { description, schema: marketDataErrorSchema };
}

/** The 5xx rows every read endpoint can answer (the database is its data backend). */
export const BACKEND_FAILURES = {
  500: errorResponse('INTERNAL_ERROR: an unhandled error (not billed)'),
  503: errorResponse('EDGE_UNAVAILABLE: the database cannot be reached (not billed)'),
  504: errorResponse('EDGE_TIMEOUT: a query exceeded the statement timeout (not billed)'),
};

/** A timestamp column as the API writes it (null stays null). */
export function isoTimestamp(value: Date | null | undefined): string | null {
  return value == null ? null : value.toISOString();
}

/**
 * SQL that renders a timestamptz column the way Date#toISOString does, for values built inside
 * PostgreSQL (json_build_object would write the session's offset and microseconds instead).
 */
export function sqlIsoTimestamp(column: string): string {
  return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}
