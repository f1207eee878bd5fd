// Response schema of GET /svc/data/marketplace_b/{tm_event_id} (spec 2.3): the three blocks
// marketplace_b_event, latest_stats and dashboard_v2. It documents the route in the OpenAPI
// document, types the handler's answer, and the tests hold real responses to it.
import { z } from 'zod';
import { calendarDate, decimalText, nullableDecimal, timestamp } from './response-schemas.ts';

const countText = z
  .string()
  .regex(/^[0-9]+$/)
  .nullable()
  .meta({ description: 'A count as text; null when the page did not show it' });

export const scrapeRunSchema = z.object({ region: z.string(), created_date_time: timestamp }).meta({ id: 'MarketplaceBScrapeRun' });

export const sectionStatSchema = z
  .object({
    section_name: z.string(),
    capacity: countText,
    available_stock: countText,
    sold_amount: countText,
    created_date_time: timestamp,
  })
  .meta({ id: 'MarketplaceBSectionStat' });

export const offerStatSchema = z
  .object({
    offer_name: z.string(),
    offer_stock: z.int(),
    average_price_fees: z.number(),
    average_price_no_fees: z.number(),
    offer_type: z.int().meta({ description: '1 standard, 2 resale, 3 platinum' }),
    currency: z.string(),
    created_date_time: timestamp,
  })
  .meta({ id: 'MarketplaceBOfferStat' });

export const statisticsHistoryEntrySchema = z
  .object({
    tickets_sold: z.int(),
    tickets_sold_24h: z.int(),
    available_tickets: z.int(),
    created_date_time: timestamp,
    highest_price: nullableDecimal,
    lowest_price: nullableDecimal,
    average_ticket_price_available: nullableDecimal,
    average_ticket_price_standard: nullableDecimal,
    average_ticket_price_resell: nullableDecimal,
    average_ticket_price_platinum: nullableDecimal,
    capacity: z.int().nullable(),
    currency: z.string(),
  })
  .meta({ id: 'MarketplaceBStatisticsEntry' });

export const marketplaceBEventBlockSchema = z
  .object({
    scrapeRuns: z.array(scrapeRunSchema).meta({ description: 'Newest first, at most `limit`' }),
    sectionStats: z.array(sectionStatSchema).meta({ description: 'Rows of the most recent scrape run only, in page order' }),
    offerStats: z.array(offerStatSchema).meta({ description: 'Rows of the most recent scrape run only, in page order' }),
    statisticsHistory: z.array(statisticsHistoryEntrySchema).meta({ description: 'Newest first, at most `limit`' }),
  })
  .meta({ id: 'MarketplaceBEventBlock' });

export const latestStatsSchema = z
  .object({ tickets_sold: z.int(), available_tickets: z.int() })
  .meta({ id: 'MarketplaceBLatestStats', description: 'From the newest statistics row; 0 and 0 before the first one' });

const percentage = z.number().nullable().meta({ description: 'Percent, 2 decimals; null when the earlier value is 0 or unknown' });

export const dashboardSchema = z
  .object({
    currency: z.string().meta({ description: 'Currency of the newest statistics row; USD before the first one' }),
    current_values: z.object({
      total_tickets_sold: z.int(),
      tickets_sold_last_24h: z.int(),
      tickets_sold_last_24h_percentage: percentage,
      available_tickets: z.int(),
      available_tickets_delta_percentage: percentage,
      listing_available: z.int(),
      average_sales_price: nullableDecimal,
      average_listing_price: nullableDecimal,
      get_in_price: nullableDecimal,
    }),
    charts: z
      .object({
        timestamps: z.array(calendarDate),
        total_tickets_sold: z.array(z.int()),
        tickets_sold_last_24h: z.array(z.int()),
        available_tickets: z.array(z.int()),
        listing_available: z.array(z.int()),
        average_listing_price: z.array(decimalText.nullable()),
        get_in_price: z.array(decimalText.nullable()),
      })
      .meta({
        description:
          "Parallel arrays, one point per UTC day that has statistics (that day's last row), oldest first; the newest `limit` days",
      }),
  })
  .meta({ id: 'MarketplaceBDashboard' });

export const marketplaceBResponseSchema = z
  .object({
    marketplace_b_event: marketplaceBEventBlockSchema,
    latest_stats: latestStatsSchema,
    dashboard_v2: dashboardSchema,
  })
  .meta({ id: 'MarketplaceBEventResponse' });

export type MarketplaceBResponse = z.output<typeof marketplaceBResponseSchema>;
