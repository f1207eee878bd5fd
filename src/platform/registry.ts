// The eleven live-availability platforms of spec 2.6: keys, section shapes, regions and the
// form of their event ids, plus what the spec leaves to us: each platform's public hosts (the
// only hosts a full-URL event id may name) and an example id. Shared by the Watchlist, the Live
// Availability API, the scrapers and the simulator; event ids are parsed in event-ref.ts.

export type SectionsType = 'OfferSections' | 'SeatMapSections';
export type EventIdForm = 'bare' | 'url';

export interface PlatformInfo {
  description: string | null;
  sections_type: SectionsType;
  /** Lower-case region codes; null means not restricted. */
  regions: readonly string[] | null;
  eventIdForm: EventIdForm;
  /** Hosts of the platform's public event pages, lower case. A URL event id must name one. */
  hosts: readonly string[];
  event_id_example: string;
}

export const PLATFORMS = {
  pf_01: {
    description: 'Primary and resale ticketing, worldwide',
    sections_type: 'SeatMapSections',
    regions: ['us', 'ca', 'uk', 'ie', 'au', 'nz', 'mx', 'de', 'es', 'nl', 'at', 'dk', 'be', 'no', 'ch', 'se', 'fi', 'pl', 'ae', 'cz', 'fr', 'it', 'za'],
    eventIdForm: 'bare',
    hosts: ['pf01.example', 'www.pf01.example'],
    event_id_example: 'G5vYZ9fT1aB2cD3e',
  },
  pf_02: {
    description: null,
    sections_type: 'SeatMapSections',
    regions: ['uk', 'us', 'nu', 'de'],
    eventIdForm: 'url',
    hosts: ['www.pf02.example', 'pf02.example'],
    event_id_example: 'https://www.pf02.example/uk/event/ev-2024-0917',
  },
  pf_03: {
    description: null,
    sections_type: 'OfferSections',
    regions: null,
    eventIdForm: 'url',
    hosts: ['pf03.example', 'www.pf03.example'],
    event_id_example: 'https://pf03.example/e/summer-open-air-4411',
  },
  pf_04: {
    description: 'Europe; scraping strategy chosen automatically by region',
    sections_type: 'OfferSections',
    regions: ['de', 'it', 'uk', 'fi', 'fr', 'nl', 'no', 'sk', 'es', 'ch', 'se', 'pl', 'dk', 'at', 'si', 'hr', 'ro', 'hu'],
    eventIdForm: 'url',
    hosts: ['www.pf04.example', 'pf04.example'],
    event_id_example: 'https://www.pf04.example/de/tickets/883120',
  },
  pf_05: { description: null, sections_type: 'OfferSections', regions: ['it'], eventIdForm: 'bare', hosts: ['www.pf05.example'], event_id_example: '7730021' },
  pf_06: { description: null, sections_type: 'OfferSections', regions: null, eventIdForm: 'bare', hosts: ['pf06.example'], event_id_example: 'K7h2Lm9Q' },
  pf_07: {
    description: 'Resale, worldwide; UK events routed to a dedicated UK monitor automatically',
    sections_type: 'OfferSections',
    regions: null,
    eventIdForm: 'url',
    hosts: ['www.pf07.example', 'www.pf07.example.co.uk'],
    event_id_example: 'https://www.pf07.example/event/arena-tour-551902',
  },
  pf_08: {
    description: 'Region inferred from event URL domain',
    sections_type: 'OfferSections',
    regions: ['au', 'nz', 'sg', 'my', 'uk', 'ph'],
    eventIdForm: 'url',
    hosts: ['pf08.example.com.au', 'pf08.example.co.nz', 'pf08.example.sg', 'pf08.example.com.my', 'pf08.example.co.uk', 'pf08.example.com.ph'],
    event_id_example: 'https://pf08.example.com.au/event/SYD-20417',
  },
  pf_09: { description: null, sections_type: 'OfferSections', regions: ['cz', 'sk'], eventIdForm: 'bare', hosts: ['www.pf09.example'], event_id_example: '209311' },
  pf_10: {
    description: null,
    sections_type: 'OfferSections',
    regions: null,
    eventIdForm: 'bare',
    hosts: ['pf10.example'],
    event_id_example: '9b1f3c2e-4d5a-4f6b-8c7d-0e1f2a3b4c5d',
  },
  pf_11: {
    description: null,
    sections_type: 'OfferSections',
    regions: null,
    eventIdForm: 'url',
    hosts: ['tickets.pf11.example'],
    event_id_example: 'https://tickets.pf11.example/event/70215',
  },
} as const satisfies Record<string, PlatformInfo>;

export type PlatformKey = keyof typeof PLATFORMS;
export const PLATFORM_KEYS = Object.keys(PLATFORMS) as PlatformKey[];

/**
 * Platforms that render client-side, so are scraped in the warm Chromium (src/scrapers/browser-pages.ts)
 * rather than over HTTP: without the browser these, and only these, cannot be scraped.
 */
export const BROWSER_PLATFORMS = ['pf_01'] as const satisfies readonly PlatformKey[];

/**
 * Platforms whose offers carry a row: a row exists only on a seat, and only a seat map lists
 * seats (SeatMapSections: pf_01 and pf_02 read rows from their seat maps, src/scrapers/platforms).
 * OfferSections platforms sell offers by section and price, never by row, so a `row_filter` on
 * them would match nothing (the watchlist refuses it).
 */
export const ROW_PLATFORMS = PLATFORM_KEYS.filter((k) => PLATFORMS[k].sections_type === 'SeatMapSections');

export function offersHaveRows(platform: PlatformKey): boolean {
  return ROW_PLATFORMS.includes(platform);
}

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
