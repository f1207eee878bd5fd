// The eleven live-availability platforms of spec 2.6: keys, section shapes, regions and the
// form of their event ids. Shared by the Watchlist (what may be monitored) and, later, the
// Live Availability API and scrapers.

export type SectionsType = 'OfferSections' | 'SeatMapSections';
export type EventIdForm = 'bare' | 'url';

export interface PlatformInfo {
  description: string | null;
  sections_type: SectionsType;
  /** Lower-case region codes; null means not restricted. */
  regions: readonly string[] | null;
  eventIdForm: EventIdForm;
}

export const PLATFORMS = {
  pf_01: {
    description: 'Primary and resale ticketing, worldwide',
    sections_type: 'SeatMapSections',
    regions: ['us', 'ca', 'uk', 'ie', 'au', 'nz', 'mx', 'de', 'es', 'nl', 'at', 'dk', 'be', 'no', 'ch', 'se', 'fi', 'pl', 'ae', 'cz', 'fr', 'it', 'za'],
    eventIdForm: 'bare',
  },
  pf_02: { description: null, sections_type: 'SeatMapSections', regions: ['uk', 'us', 'nu', 'de'], eventIdForm: 'url' },
  pf_03: { description: null, sections_type: 'OfferSections', regions: null, eventIdForm: 'url' },
  pf_04: {
    description: 'Europe; scraping strategy chosen automatically by region',
    sections_type: 'OfferSections',
    regions: ['de', 'it', 'uk', 'fi', 'fr', 'nl', 'no', 'sk', 'es', 'ch', 'se', 'pl', 'dk', 'at', 'si', 'hr', 'ro', 'hu'],
    eventIdForm: 'url',
  },
  pf_05: { description: null, sections_type: 'OfferSections', regions: ['it'], eventIdForm: 'bare' },
  pf_06: { description: null, sections_type: 'OfferSections', regions: null, eventIdForm: 'bare' },
  pf_07: {
    description: 'Resale, worldwide; UK events routed to a dedicated UK monitor automatically',
    sections_type: 'OfferSections',
    regions: null,
    eventIdForm: 'url',
  },
  pf_08: {
    description: 'Region inferred from event URL domain',
    sections_type: 'OfferSections',
    regions: ['au', 'nz', 'sg', 'my', 'uk', 'ph'],
    eventIdForm: 'url',
  },
  pf_09: { description: null, sections_type: 'OfferSections', regions: ['cz', 'sk'], eventIdForm: 'bare' },
  pf_10: { description: null, sections_type: 'OfferSections', regions: null, eventIdForm: 'bare' },
  pf_11: { description: null, sections_type: 'OfferSections', regions: null, eventIdForm: 'url' },
} as const satisfies Record<string, PlatformInfo>;

export type PlatformKey = keyof typeof PLATFORMS;
export const PLATFORM_KEYS = Object.keys(PLATFORMS) as PlatformKey[];

export function isPlatformKey(value: string): value is PlatformKey {
  return Object.hasOwn(PLATFORMS, value);
}

/** Region codes are compared case-insensitively; unrestricted platforms accept any 2-8 letter code. */
export function normaliseRegion(platform: PlatformKey, region: string): string | null {
  const r = region.trim().toLowerCase();
  const allowed: readonly string[] | null = PLATFORMS[platform].regions;
  if (allowed) return allowed.includes(r) ? r : null;
  return /^[a-z]{2,8}$/.test(r) ? r : null;
}
