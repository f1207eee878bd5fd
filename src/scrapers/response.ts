// The scrape response of spec 2.5, assembled from an adapter's ScrapeData. Built in the scrape
// activity, carried through Temporal as is, and answered by POST /events/scrape (whose zod
// schema (schema.ts) also writes the OpenAPI document).
import type { EventRef } from '../platform/event-ref.ts';
import type { z } from 'zod';
import type { scrapeResponseSchema } from './schema.ts';
import type { OfferSection, ScrapeData, SeatMapSection } from './types.ts';

export type ScrapeResponse = z.infer<typeof scrapeResponseSchema>;

export function toScrapeResponse(ref: EventRef, data: ScrapeData, at: Date): ScrapeResponse {
  const sections: Record<string, OfferSection | SeatMapSection> = data.sections;
  const total = Object.values(sections).reduce((sum, s) => sum + s.stock, 0);
  return {
    success: true,
    platform: ref.platform,
    event_id: ref.eventId,
    region: ref.region,
    scrape_timestamp: at.toISOString(),
    sections_type: data.sections_type,
    total_stock: total,
    sections,
    event_info: data.event_info,
    degraded: data.degraded,
    error: null,
  };
}
