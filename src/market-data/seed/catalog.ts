// The seed's catalog: venues, artists and events, each generated from its index alone (see
// random.ts), so any slice of the catalog can be built without the rest. Shapes follow the
// catalog tables of migration 005; ids are assigned by the writer.
import { DAY_MS } from '../rollup.ts';
import { MARKETPLACE_INFO } from '../tracking-ref.ts';
import { Random, STREAM } from './random.ts';
import {
  ADJECTIVES,
  CATEGORIES,
  COUNTRIES,
  FIRST_NAMES,
  LAST_NAMES,
  NOUNS,
  SHOW_WORDS,
  STADIUM_PATTERNS,
  TEAM_MASCOTS,
  TEAM_PLACES,
  TOUR_WORDS,
  VENUE_PATTERNS,
  inventedWord,
  type Category,
  type Country,
} from './vocabulary.ts';

/** Marketplace A's public site (tracking-ref.ts), where artist pages live: /artist/{slug}. */
export const MARKETPLACE_A_SITE = `https://${MARKETPLACE_INFO.marketplace_a.hosts[0]}`;
/** Where seeded images and seat maps point (invented; nothing fetches them). */
export const MARKETPLACE_A_IMAGES = 'https://img.marketplace-a.example';

/** The seed's hour (its day is rollup.ts's DAY_MS, the tracker's). */
export const HOUR_MS = 3_600_000;

/** One venue per 25 events and one artist per 4: venues and artists recur across events. */
export function catalogSizes(events: number): { venues: number; artists: number } {
  return { venues: Math.max(8, Math.ceil(events / 25)), artists: Math.max(10, Math.ceil(events / 4)) };
}

export interface SeedVenue {
  name: string;
  city: string;
  country: Country;
  capacity: number;
}

export interface SeedArtist {
  name: string;
  slug: string;
  category: Category;
  country: Country;
  /** Tour title shared by the artist's events. */
  tour: string;
  /** 0..1, from the artist's rank: drives prices, demand and social audiences. */
  popularity: number;
}

export interface SeedEvent {
  name: string;
  eventDate: Date;
  artistIndex: number;
  venueIndex: number;
  /** Set on some events; otherwise the venue's capacity applies. */
  capacity: number | null;
  hasMarketplaceB: boolean;
  hasMarketplaceC: boolean;
}

const COUNTRY_WEIGHTS = COUNTRIES.map((c) => c.weight);
const CATEGORY_WEIGHTS = CATEGORIES.map((c) => c.weight);

function fill(pattern: string, city: string, word: string): string {
  return pattern.replace('{city}', city).replace('{word}', word);
}

export function slugify(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/&/g, ' and ')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

export function generateVenue(seed: number, index: number): SeedVenue {
  const r = new Random(seed, STREAM.venue, index);
  const country = r.weighted(COUNTRIES, COUNTRY_WEIGHTS);
  const city = r.pick(country.cities);
  // Clubs of a few hundred to stadiums of 80,000; most venues are mid-sized.
  const capacity = Math.round(Math.min(90_000, Math.max(200, r.logNormal(2_500, 1.2))) / 10) * 10;
  const word = r.weighted([r.pick(LAST_NAMES), r.pick(ADJECTIVES), inventedWord(() => r.next())], [2, 1, 2]);
  const name = fill(capacity >= 30_000 ? r.pick(STADIUM_PATTERNS) : r.pick(VENUE_PATTERNS), city, word);
  return { name, city, country, capacity };
}

// Half the names come from the word lists, half use invented words.
function performerName(r: Random, category: Category): string {
  const invented = () => inventedWord(() => r.next());
  const first = () => (r.chance(0.5) ? r.pick(FIRST_NAMES) : invented());
  const last = () => (r.chance(0.6) ? invented() : r.pick(LAST_NAMES));
  switch (category.kind) {
    case 'band':
      return r.weighted(
        [
          `The ${r.pick(ADJECTIVES)} ${r.pick(NOUNS)}`,
          `${r.pick(ADJECTIVES)} ${r.pick(NOUNS)}`,
          invented(),
          `${invented()} ${r.pick(NOUNS)}`,
          `${r.pick(LAST_NAMES)} & the ${r.pick(NOUNS)}`,
        ],
        [3, 2, 2, 2, 1],
      );
    case 'solo':
      if (category.name === 'Electronic' && r.chance(0.4)) return `DJ ${r.chance(0.5) ? r.pick(ADJECTIVES) : invented()}`;
      return r.chance(0.12) ? invented() : `${first()} ${last()}`;
    case 'team':
      return `${r.chance(0.5) ? r.pick(TEAM_PLACES) : invented()} ${r.pick(TEAM_MASCOTS)}`;
    case 'show':
      return r.chance(0.5) ? `The ${r.pick(SHOW_WORDS)} ${r.pick(SHOW_WORDS)}` : `${r.pick(SHOW_WORDS)} of the ${r.chance(0.5) ? r.pick(SHOW_WORDS) : invented()}`;
    case 'comedian':
      return `${first()} ${last()}`;
    case 'festival':
      return `${r.chance(0.5) ? r.pick(ADJECTIVES) : invented()} ${r.pick(NOUNS)} Festival`;
  }
}

export function generateArtist(seed: number, index: number, artistCount: number): SeedArtist {
  const r = new Random(seed, STREAM.artist, index);
  const category = r.weighted(CATEGORIES, CATEGORY_WEIGHTS);
  const country = r.weighted(COUNTRIES, COUNTRY_WEIGHTS);
  const name = performerName(r, category);
  // Events pick artists skewed towards low indexes (Random.skewedIndex), so rank is popularity.
  const popularity = 1 - Math.pow(index / artistCount, 0.25);
  return { name, slug: slugify(name), category, country, tour: r.pick(TOUR_WORDS), popularity };
}

/** The venues and artists an event draws from (the whole run's, held in memory). */
export interface CatalogParts {
  venues: readonly SeedVenue[];
  artists: readonly SeedArtist[];
  /** Venue indexes by country code. */
  venuesByCountry: ReadonlyMap<string, readonly number[]>;
}

export function catalogParts(seed: number, events: number): CatalogParts {
  const sizes = catalogSizes(events);
  const venues = Array.from({ length: sizes.venues }, (_, i) => generateVenue(seed, i));
  const artists = Array.from({ length: sizes.artists }, (_, i) => generateArtist(seed, i, sizes.artists));
  const venuesByCountry = new Map<string, number[]>();
  venues.forEach((v, i) => {
    const list = venuesByCountry.get(v.country.code) ?? [];
    list.push(i);
    venuesByCountry.set(v.country.code, list);
  });
  return { venues, artists, venuesByCountry };
}

export function generateEvent(seed: number, index: number, parts: CatalogParts, now: Date): SeedEvent {
  const r = new Random(seed, STREAM.event, index);
  const artistIndex = r.skewedIndex(parts.artists.length);
  const artist = parts.artists[artistIndex]!;
  // Most shows are in the artist's home country; tours and away games go elsewhere.
  const country = r.chance(0.6) ? artist.country : r.weighted(COUNTRIES, COUNTRY_WEIGHTS);
  const local = parts.venuesByCountry.get(country.code) ?? [];
  const venueIndex = local.length ? r.pick(local) : r.int(0, parts.venues.length - 1);
  const venue = parts.venues[venueIndex]!;
  // A year back to a year ahead, a little more ahead (catalogs list upcoming events), evenings.
  const dayOffset = Math.floor(r.next() < 0.45 ? -r.next() * 400 : r.next() * 365);
  const day = Math.floor(now.getTime() / DAY_MS) + dayOffset;
  const eventDate = new Date(day * DAY_MS + (17 * 60 + r.int(0, 9) * 30) * 60_000);
  return {
    name: eventName(r, artist, venue.city),
    eventDate,
    artistIndex,
    venueIndex,
    // A configured layout (seated, a closed tier) on some events; otherwise the venue's capacity.
    capacity: r.chance(0.3) ? Math.round((venue.capacity * (0.6 + 0.4 * r.next())) / 10) * 10 : null,
    hasMarketplaceB: r.chance(0.12),
    hasMarketplaceC: r.chance(0.08),
  };
}

function eventName(r: Random, artist: SeedArtist, city: string): string {
  const year = 2024 + r.int(0, 2);
  switch (artist.category.kind) {
    case 'band':
    case 'solo':
      return r.weighted(
        [
          artist.name,
          `${artist.name} - ${artist.tour} Tour`,
          `${artist.name} with ${r.pick(ADJECTIVES)} ${r.pick(NOUNS)}`,
          `${artist.name} Live in ${city}`,
        ],
        [40, 35, 15, 10],
      );
    case 'team':
      return `${artist.name} vs ${r.pick(TEAM_PLACES)} ${r.pick(TEAM_MASCOTS)}`;
    case 'show':
      return r.chance(0.8) ? artist.name : `${artist.name} (Touring Production)`;
    case 'comedian':
      return `${artist.name}: ${r.pick(ADJECTIVES)} ${r.pick(SHOW_WORDS)}`;
    case 'festival':
      return r.chance(0.5) ? `${artist.name} ${year}` : `${artist.name} ${year} - Day ${r.int(1, 3)}`;
  }
}
