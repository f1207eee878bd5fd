// The scrape result's shapes as zod schemas: the one definition behind the TypeScript types
// (types.ts, response.ts), the OpenAPI document of POST /events/scrape, and the tests that
// check adapters' output. Spec 2.5 leaves the entries of `sections` and `event_info` to us.
import { z } from 'zod';

export const ticketTypeSchema = z
  .enum(['standard', 'resale', 'platinum', 'general_admission'])
  .meta({ description: 'Kind of ticket: primary standard, resale, platinum (dynamic primary), general admission' });

const flags = {
  ticket_type: ticketTypeSchema,
  restricted_view: z.boolean().meta({ description: 'The platform marks the view as restricted' }),
  accessible: z.boolean().meta({ description: 'Wheelchair or accessibility ticket' }),
  presale: z.boolean().meta({ description: 'Only on sale in a presale' }),
};

const price = z.number().min(0).meta({ description: 'Price per ticket in the section currency, a number rounded to cents' });

export const offerSchema = z
  .object({
    id: z.string().meta({ description: "The platform's offer or listing id (stable between scrapes when the platform has one)" }),
    price,
    quantity: z.number().int().min(0).meta({ description: 'Tickets available in this offer' }),
    ...flags,
  })
  .meta({ id: 'Offer' });

export const seatSchema = z
  .object({
    row: z.string(),
    seat: z.string(),
    price,
    ...flags,
  })
  .meta({ id: 'Seat' });

const summary = {
  name: z.string().meta({ description: 'Section name as the platform shows it (also the key in `sections`)' }),
  currency: z.string().nullable().meta({ description: 'ISO 4217 code; null when the page does not say' }),
  min_price: z.number().nullable().meta({ description: 'Lowest price on sale; null when nothing is' }),
  max_price: z.number().nullable().meta({ description: 'Highest price on sale; null when nothing is' }),
  stock: z.number().int().min(0).meta({ description: 'Tickets available in the section' }),
};

export const offerSectionSchema = z
  .object({ ...summary, offers: z.array(offerSchema).meta({ description: 'Offers on sale, cheapest first' }) })
  .meta({ id: 'OfferSection', description: 'Entry of `sections` when sections_type is OfferSections' });

export const seatMapSectionSchema = z
  .object({
    ...summary,
    seats: z.array(seatSchema).meta({ description: 'Available seats; empty when seat-level detail is missing (pf_01 degraded `v2`)' }),
    offers: z
      .array(offerSchema)
      .meta({ description: 'Tickets on sale without a seat of their own (pf_01 resale lots and general-admission counts), with their flags, cheapest first; empty on a platform that lists every ticket as a seat, and without the tickets of a missing arm (pf_01 degraded `v1`)' }),
    by_ticket_type: z
      .partialRecord(ticketTypeSchema, z.number().int().min(0))
      .meta({ description: "Tickets per ticket type; a missing arm's types are absent (pf_01 degraded `v1`)" }),
  })
  .meta({ id: 'SeatMapSection', description: 'Entry of `sections` when sections_type is SeatMapSections' });

export const eventInfoSchema = z
  .object({
    name: z.string().nullable(),
    venue: z.string().nullable(),
    city: z.string().nullable(),
    country: z.string().nullable().meta({ description: 'Lower-case region or country code' }),
    starts_at: z.string().nullable().meta({ description: 'Start time as the platform states it (RFC 3339)' }),
    currency: z.string().nullable(),
    url: z.string().nullable().meta({ description: "The event's public page on the platform" }),
  })
  .meta({ id: 'EventInfo', description: 'What the platform says about the event; every field may be null' });

export const degradedSchema = z.enum(['v1', 'v2']);

export const scrapeResponseSchema = z
  .object({
    success: z.boolean(),
    platform: z.string(),
    event_id: z.string(),
    region: z.string(),
    scrape_timestamp: z.iso.datetime(),
    sections_type: z.enum(['OfferSections', 'SeatMapSections']).nullable(),
    total_stock: z.number().int().nullable().meta({ description: 'Tickets across all sections; 0 when sold out' }),
    sections: z
      .record(z.string(), z.union([offerSectionSchema, seatMapSectionSchema]))
      .meta({ description: 'Keyed by section name; entries are OfferSection or SeatMapSection per sections_type' }),
    event_info: eventInfoSchema.nullable(),
    degraded: degradedSchema.nullable().meta({ description: 'pf_01 only: `v1` resale/GA arm missing, `v2` seat-level arm missing' }),
    error: z.string().nullable(),
  })
  .meta({ id: 'ScrapeResponse' });
