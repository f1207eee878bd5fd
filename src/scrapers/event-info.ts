// spec 2.5's `event_info`, filled the same way by every adapter: what the page states (name,
// venue, city, start, currency), the country derived from the scrape's region, and the event's
// public URL on the platform's own host (never the simulator's or a configured base URL).
import type { EventRef } from '../platform/event-ref.ts';
import { PLATFORMS, type PlatformKey } from '../platform/registry.ts';
import type { EventInfo } from './types.ts';

/** Region codes that are not the country's ISO 3166 code. */
const COUNTRY_BY_REGION: Record<string, string> = { uk: 'GB' };

/** ISO 3166-1 alpha-2 country of a region code, or null when the region is not a country. */
export function countryOf(region: string): string | null {
  if (Object.hasOwn(COUNTRY_BY_REGION, region)) return COUNTRY_BY_REGION[region]!;
  return /^[a-z]{2}$/.test(region) ? region.toUpperCase() : null;
}

/** The event's public page: `path` below the platform's first (canonical) host, or `host` if given. */
export function publicUrl(platform: PlatformKey, path: string, host?: string): string {
  return `https://${host ?? PLATFORMS[platform].hosts[0]}${path}`;
}

export type EventDetails = Pick<EventInfo, 'name' | 'venue' | 'city' | 'starts_at' | 'currency'> & { country?: string | null };

export function eventInfo(ref: EventRef, url: string, details: EventDetails): EventInfo {
  return {
    name: details.name,
    venue: details.venue,
    city: details.city,
    country: details.country ?? countryOf(ref.region),
    starts_at: details.starts_at,
    currency: details.currency,
    url,
  };
}
