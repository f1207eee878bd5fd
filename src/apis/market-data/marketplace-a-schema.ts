// Response schema of GET /svc/data/marketplace_a/{event_id} (spec 2.2): four members, fields in
// the order of the spec's tables. It documents the route in the OpenAPI document, types the
// handler's answer, and the tests hold real responses to it.
import { z } from 'zod';
import { calendarDate, decimalText, nullableDecimal, timestamp } from './response-schemas.ts';

const text = z.string().nullable();
const count = z.int().nullable();

export const marketplaceAVenueSchema = z
  .object({
    name: text,
    city: text,
    country: text,
    country_code: text.meta({ description: 'ISO 3166 alpha-2' }),
    svg_map_url: text,
  })
  .meta({ id: 'MarketplaceAVenue' });

export const marketplaceAArtistSchema = z
  .object({
    name: text,
    url: text.meta({ description: 'Pass this value as `url` to GET /svc/data/artist' }),
    image_url: text,
  })
  .meta({ id: 'MarketplaceAArtist' });

export const marketplaceAEventSchema = z
  .object({
    marketplace_a_event_id: z.int().meta({ description: 'Numeric part of the event id E-<digits>' }),
    marketplace_a_event_url: text,
    event_name: text,
    event_date: timestamp.nullable(),
    event_image: text,
    category_name: text,
    currency: z.string().meta({ description: 'ISO 4217: the currency in which most tickets were sold; USD before any sale' }),
    venue: marketplaceAVenueSchema.nullable(),
    artist: marketplaceAArtistSchema.nullable(),
    external_urls: z
      .object({
        marketplace_b_event_id: text,
        marketplace_b_event_url: text,
        marketplace_c_event_id: text,
        marketplace_c_event_url: text,
      })
      .meta({ description: 'Always present; a field is null when not on file' }),
  })
  .meta({ id: 'MarketplaceAEvent' });

/**
 * The newest statistics snapshot; every field but `currency` is null before the first one.
 * Except for `stats_date` and `currency` the keys are ma_stats_snapshots' column names.
 */
export const marketplaceASummarySchema = z
  .object({
    tickets_sold: count,
    tickets_sold_24h: count,
    listings_sold: count,
    listings_sold_24h: count,
    listings_available: count,
    listings_available_24h: count,
    available_tickets: count,
    available_tickets_24h: count,
    is_general_admission_only: z.boolean().nullable(),
    stats_date: timestamp.nullable().meta({ description: 'When the snapshot was taken' }),
    tickets_sold_24h_percentage: nullableDecimal,
    listings_sold_24h_percentage: nullableDecimal,
    listings_available_24h_percentage: nullableDecimal,
    available_tickets_24h_percentage: nullableDecimal,
    average_ticket_price_sold: nullableDecimal,
    average_ticket_price_sold_24h: nullableDecimal,
    average_ticket_price_sold_24h_percentage: nullableDecimal,
    average_ticket_price_available: nullableDecimal,
    average_ticket_price_available_24h: nullableDecimal,
    average_ticket_price_available_24h_percentage: nullableDecimal,
    highest_sale_price: nullableDecimal,
    highest_sale_price_24h: nullableDecimal,
    highest_sale_price_24h_percentage: nullableDecimal,
    get_in_price: nullableDecimal.meta({ description: 'Cheapest available ticket' }),
    get_in_price_24h: nullableDecimal,
    get_in_price_24h_percentage: nullableDecimal,
    total_volume: nullableDecimal.meta({ description: 'Total sales volume in `currency`' }),
    currency: z.string().meta({ description: "Currency of the snapshot's amounts; event.currency before the first snapshot" }),
  })
  .meta({ id: 'MarketplaceASummary' });

export const marketplaceADailyStatSchema = z
  .object({
    stat_date: calendarDate,
    tickets_sold: count,
    tickets_sold_24h: count,
    available_tickets: count,
    listings_available: count,
    average_ticket_price_sold: nullableDecimal,
    average_ticket_price_available: nullableDecimal,
    highest_sale_price: nullableDecimal,
  })
  .meta({ id: 'MarketplaceADailyStat' });

export const priceHistogramSchema = z
  .object({
    bins: z.int().min(1),
    min: decimalText.meta({ description: 'Lowest per-ticket sale price; "0" when no sales have been observed' }),
    max: decimalText.meta({ description: 'Highest per-ticket sale price; "0" when no sales have been observed' }),
    currency: z.string(),
    data: z
      .array(z.object({ start: decimalText.meta({ description: 'Inclusive lower bound' }), end: decimalText, tickets_sold: z.int().min(0) }))
      .meta({ description: 'Every bin in price order; empty when no sales have been observed' }),
  })
  .meta({ id: 'MarketplaceAPriceHistogram' });

export const marketplaceAResponseSchema = z
  .object({
    event: marketplaceAEventSchema,
    summary: marketplaceASummarySchema,
    daily_statistics: z
      .array(marketplaceADailyStatSchema)
      .meta({ description: 'The days of the last 30 (UTC, today included) that have statistics, oldest first; days without are omitted' }),
    price_histogram: priceHistogramSchema,
  })
  .meta({ id: 'MarketplaceAEventResponse' });

export type MarketplaceAResponse = z.output<typeof marketplaceAResponseSchema>;
export type MarketplaceASummary = z.output<typeof marketplaceASummarySchema>;
