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
    region: z.string().meta({
      description:
        "Region code, case-insensitive; one of the platform's regions when it lists them. pf_08 takes its region from the " +
        "event URL's domain (spec 2.6): this one is then not checked, and the response carries the domain's",
    }),
  })
  .meta({ id: 'ScrapeRequest' });

/** Why a platform cannot be scraped in full right now (GET /events/platforms); see platformEntrySchema. */
export const platformDegradedSchema = z.enum(['browser_missing']);
export type PlatformDegraded = z.infer<typeof platformDegradedSchema>;

export const platformEntrySchema = z
  .object({
    description: z.string().nullable(),
    sections_type: z.enum(['OfferSections', 'SeatMapSections']),
    regions: z.array(z.string()).nullable().meta({ description: 'Lower-case region codes; null means not restricted' }),
    event_id_example: z.string().meta({ description: 'A bare id or a full event URL' }),
    degraded: platformDegradedSchema
      .nullable()
      .meta({
        description:
          'Added to spec 2.6 (an additive field): null when the platform can be scraped in full. `browser_missing`: a scrape ' +
          'worker has no Chromium, so scrapes of this client-rendered platform answer 500 until it is installed.',
      }),
  })
  .meta({ id: 'PlatformEntry' });

export const platformsResponseSchema = z.object({ platforms: z.record(z.string(), platformEntrySchema) }).meta({ id: 'Platforms' });

export const detailSchema = z.object({ detail: z.string() }).meta({ id: 'LiveAvailabilityError' });
