// Request and response schemas of the Live Availability API (spec 2.5, 2.6, 4.2): used to
// validate, to type, and to write the OpenAPI document. The scrape response's entries live
// with the scrapers (src/scrapers/schema.ts), which produce them.
import { z } from 'zod';
import { PLATFORM_KEYS } from '../../platform/registry.ts';

export { scrapeResponseSchema } from '../../scrapers/schema.ts';

export const scrapeRequestSchema = z
  .object({
    platform: z.string().meta({ description: `One of ${PLATFORM_KEYS.join(', ')} (GET /events/platforms)` }),
    event_id: z.string().meta({ description: "Bare id or full event URL per the platform's event_id_example; a URL must name one of the platform's own hosts" }),
    region: z.string().meta({ description: "Region code, case-insensitive; one of the platform's regions when it lists them" }),
  })
  .meta({ id: 'ScrapeRequest' });

export const platformEntrySchema = z
  .object({
    description: z.string().nullable(),
    sections_type: z.enum(['OfferSections', 'SeatMapSections']),
    regions: z.array(z.string()).nullable().meta({ description: 'Lower-case region codes; null means not restricted' }),
    event_id_example: z.string().meta({ description: 'A bare id or a full event URL' }),
  })
  .meta({ id: 'PlatformEntry' });

export const platformsResponseSchema = z.object({ platforms: z.record(z.string(), platformEntrySchema) }).meta({ id: 'Platforms' });

export const detailSchema = z.object({ detail: z.string() }).meta({ id: 'LiveAvailabilityError' });
