// The words the catalog seed builds names from: countries with real cities and their currency,
// categories with a typical ticket price, and parts of artist, team, show and venue names.
// Real place names make search examples read naturally ("london", "münchen"); every artist,
// team and venue name is invented.

export interface Country {
  code: string;
  name: string;
  currency: string;
  /** Units of the currency per US dollar, so prices read plausibly in each. */
  perUsd: number;
  /** Share of the catalog's events (relative). */
  weight: number;
  cities: readonly string[];
}

export const COUNTRIES: readonly Country[] = [
  { code: 'US', name: 'United States', currency: 'USD', perUsd: 1, weight: 34, cities: ['New York', 'Los Angeles', 'Chicago', 'Houston', 'Las Vegas', 'Nashville', 'Austin', 'Seattle', 'Boston', 'Atlanta', 'Miami', 'Denver', 'San Francisco', 'Philadelphia', 'New Orleans', 'Detroit', 'Phoenix', 'Minneapolis'] },
  { code: 'GB', name: 'United Kingdom', currency: 'GBP', perUsd: 0.79, weight: 12, cities: ['London', 'Manchester', 'Glasgow', 'Birmingham', 'Liverpool', 'Leeds', 'Bristol', 'Cardiff', 'Edinburgh', 'Newcastle', 'Belfast'] },
  { code: 'DE', name: 'Germany', currency: 'EUR', perUsd: 0.92, weight: 9, cities: ['Berlin', 'Hamburg', 'München', 'Köln', 'Frankfurt', 'Düsseldorf', 'Stuttgart', 'Leipzig'] },
  { code: 'FR', name: 'France', currency: 'EUR', perUsd: 0.92, weight: 6, cities: ['Paris', 'Lyon', 'Marseille', 'Toulouse', 'Bordeaux', 'Lille', 'Nantes'] },
  { code: 'ES', name: 'Spain', currency: 'EUR', perUsd: 0.92, weight: 5, cities: ['Madrid', 'Barcelona', 'Valencia', 'Sevilla', 'Bilbao', 'Málaga'] },
  { code: 'IT', name: 'Italy', currency: 'EUR', perUsd: 0.92, weight: 4, cities: ['Milano', 'Roma', 'Torino', 'Bologna', 'Napoli', 'Firenze'] },
  { code: 'NL', name: 'Netherlands', currency: 'EUR', perUsd: 0.92, weight: 4, cities: ['Amsterdam', 'Rotterdam', 'Utrecht', 'Eindhoven'] },
  { code: 'CA', name: 'Canada', currency: 'CAD', perUsd: 1.36, weight: 6, cities: ['Toronto', 'Montréal', 'Vancouver', 'Calgary', 'Ottawa', 'Edmonton'] },
  { code: 'AU', name: 'Australia', currency: 'AUD', perUsd: 1.52, weight: 4, cities: ['Sydney', 'Melbourne', 'Brisbane', 'Perth', 'Adelaide'] },
  { code: 'IE', name: 'Ireland', currency: 'EUR', perUsd: 0.92, weight: 2, cities: ['Dublin', 'Cork', 'Galway'] },
  { code: 'SE', name: 'Sweden', currency: 'SEK', perUsd: 10.5, weight: 2, cities: ['Stockholm', 'Göteborg', 'Malmö'] },
  { code: 'DK', name: 'Denmark', currency: 'DKK', perUsd: 6.9, weight: 1, cities: ['København', 'Aarhus'] },
  { code: 'NO', name: 'Norway', currency: 'NOK', perUsd: 10.7, weight: 1, cities: ['Oslo', 'Bergen'] },
  { code: 'PL', name: 'Poland', currency: 'PLN', perUsd: 4, weight: 2, cities: ['Warszawa', 'Kraków', 'Gdańsk', 'Wrocław'] },
  { code: 'AT', name: 'Austria', currency: 'EUR', perUsd: 0.92, weight: 1, cities: ['Wien', 'Graz', 'Salzburg'] },
  { code: 'CH', name: 'Switzerland', currency: 'CHF', perUsd: 0.88, weight: 1, cities: ['Zürich', 'Genève', 'Basel'] },
  { code: 'BE', name: 'Belgium', currency: 'EUR', perUsd: 0.92, weight: 1, cities: ['Bruxelles', 'Antwerpen', 'Gent'] },
  { code: 'PT', name: 'Portugal', currency: 'EUR', perUsd: 0.92, weight: 1, cities: ['Lisboa', 'Porto'] },
  { code: 'MX', name: 'Mexico', currency: 'MXN', perUsd: 17, weight: 2, cities: ['Ciudad de México', 'Guadalajara', 'Monterrey'] },
  { code: 'BR', name: 'Brazil', currency: 'BRL', perUsd: 5, weight: 2, cities: ['São Paulo', 'Rio de Janeiro', 'Belo Horizonte'] },
  { code: 'JP', name: 'Japan', currency: 'JPY', perUsd: 150, weight: 1, cities: ['Tokyo', 'Osaka', 'Yokohama'] },
];

/** What kind of "artist" performs in a category; it shapes artist and event names. */
export type PerformerKind = 'band' | 'solo' | 'team' | 'show' | 'comedian' | 'festival';

export interface Category {
  name: string;
  kind: PerformerKind;
  /** Median face value in US dollars. */
  medianUsd: number;
  weight: number;
}

export const CATEGORIES: readonly Category[] = [
  { name: 'Rock', kind: 'band', medianUsd: 95, weight: 12 },
  { name: 'Pop', kind: 'solo', medianUsd: 120, weight: 14 },
  { name: 'Hip-Hop', kind: 'solo', medianUsd: 105, weight: 8 },
  { name: 'Electronic', kind: 'solo', medianUsd: 70, weight: 6 },
  { name: 'Country', kind: 'solo', medianUsd: 85, weight: 5 },
  { name: 'Metal', kind: 'band', medianUsd: 75, weight: 4 },
  { name: 'Indie', kind: 'band', medianUsd: 45, weight: 6 },
  { name: 'Jazz', kind: 'solo', medianUsd: 55, weight: 2 },
  { name: 'Classical', kind: 'solo', medianUsd: 65, weight: 3 },
  { name: 'Latin', kind: 'solo', medianUsd: 90, weight: 4 },
  { name: 'R&B', kind: 'solo', medianUsd: 95, weight: 3 },
  { name: 'Football', kind: 'team', medianUsd: 110, weight: 8 },
  { name: 'Basketball', kind: 'team', medianUsd: 140, weight: 5 },
  { name: 'Baseball', kind: 'team', medianUsd: 60, weight: 4 },
  { name: 'Ice Hockey', kind: 'team', medianUsd: 95, weight: 3 },
  { name: 'Theatre', kind: 'show', medianUsd: 85, weight: 4 },
  { name: 'Musical', kind: 'show', medianUsd: 125, weight: 4 },
  { name: 'Comedy', kind: 'comedian', medianUsd: 55, weight: 4 },
  { name: 'Festival', kind: 'festival', medianUsd: 190, weight: 2 },
];

export const FIRST_NAMES = [
  'Ava', 'Leo', 'Maya', 'Noah', 'Iris', 'Felix', 'Nora', 'Oscar', 'Luna', 'Jonah', 'Stella', 'Milo', 'Clara', 'Elias', 'Hazel', 'Theo',
  'Ruby', 'Silas', 'Vera', 'Jasper', 'Lena', 'Marcus', 'Sofia', 'Dante', 'Alma', 'Victor', 'June', 'Rafael', 'Nina', 'Hugo', 'Talia', 'Otis',
  'Camila', 'Ezra', 'Willa', 'Kai', 'Delia', 'Rowan', 'Esme', 'Bruno', 'Freya', 'Idris', 'Mabel', 'Anton', 'Zara', 'Lucian', 'Greta', 'Omar',
] as const;

export const LAST_NAMES = [
  'Carter', 'Reyes', 'Holloway', 'Nakamura', 'Lindqvist', 'Okafor', 'Moreau', 'Castellano', 'Whitfield', 'Brennan', 'Kowalski', 'Adeyemi',
  'Sinclair', 'Vasquez', 'Hartmann', 'Delacroix', 'Osei', 'Fairbanks', 'Marchetti', 'Quinlan', 'Rasmussen', 'Abernathy', 'Sorensen', 'Takahashi',
  'Montgomery', 'Duarte', 'Ellington', 'Farrow', 'Galloway', 'Haddad', 'Ivanova', 'Jablonski', 'Kingsley', 'Lockhart', 'Mendoza', 'Novak',
  'Pemberton', 'Rousseau', 'Stanton', 'Thornbury', 'Underwood', 'Valentine', 'Winslow', 'Yamamoto', 'Zielinski', 'Ashford', 'Blackwood', 'Calloway',
] as const;

export const ADJECTIVES = [
  'Midnight', 'Electric', 'Silver', 'Velvet', 'Neon', 'Golden', 'Crimson', 'Hollow', 'Wild', 'Quiet', 'Burning', 'Frozen', 'Lonely', 'Savage',
  'Cosmic', 'Broken', 'Northern', 'Paper', 'Iron', 'Violet', 'Endless', 'Restless', 'Distant', 'Static', 'Lucky', 'Scarlet', 'Hidden', 'Rusty',
  'Sonic', 'Lunar', 'Amber', 'Glass', 'Stone', 'Royal', 'Desert', 'Ocean', 'Thunder', 'Copper', 'Phantom', 'Radiant',
] as const;

export const NOUNS = [
  'Foxes', 'Harbor', 'Lanterns', 'Wolves', 'Mirrors', 'Satellites', 'Ravens', 'Tides', 'Engines', 'Orchards', 'Comets', 'Giants', 'Pilots',
  'Shadows', 'Rivers', 'Kings', 'Saints', 'Sparrows', 'Machines', 'Horizons', 'Arrows', 'Dreamers', 'Echoes', 'Hearts', 'Owls', 'Strangers',
  'Sirens', 'Tigers', 'Ghosts', 'Valleys', 'Parade', 'Circus', 'Radio', 'Garden', 'Empire', 'Avenue', 'Collective', 'Orchestra', 'Society', 'Club',
] as const;

export const TEAM_PLACES = [
  'Riverside', 'Harbor City', 'Northfield', 'Westbrook', 'Lakeshore', 'Eastport', 'Kingston', 'Summit', 'Redwood', 'Bayview', 'Granite',
  'Oakmont', 'Silverton', 'Fairview', 'Highland', 'Portland', 'Clearwater', 'Maplewood', 'Stonebridge', 'Brookhaven',
] as const;

export const TEAM_MASCOTS = [
  'Rovers', 'United', 'Falcons', 'Bears', 'Storm', 'Mariners', 'Comets', 'Wolves', 'Titans', 'Royals', 'Rangers', 'Hawks', 'Lions', 'Knights',
  'Thunder', 'Pirates', 'Stallions', 'Vipers', 'Blizzard', 'Miners',
] as const;

export const SHOW_WORDS = [
  'Phantom', 'Garden', 'Winter', 'Crown', 'Lantern', 'Ballad', 'Wicked', 'Glass', 'Kingdom', 'Mermaid', 'Carousel', 'Empire', 'Harbour',
  'Velvet', 'Secret', 'Tempest', 'Candle', 'Orchard', 'Railway', 'Moonlight', 'Letters', 'Dancers', 'Tailor', 'Island',
] as const;

export const TOUR_WORDS = [
  'World', 'Eras', 'Horizon', 'Homecoming', 'Afterglow', 'Reunion', 'Farewell', 'Renaissance', 'Overdrive', 'Gravity', 'Wildfire', 'Daydream',
  'Tidal', 'Aurora', 'Northern Lights', 'Encore', 'Odyssey', 'Nightfall', 'Satellite', 'Summer Nights', 'Revival', 'Echo Chamber',
] as const;

/** Venue names: `{city}` and `{word}` (a surname or an adjective) are filled in. */
export const VENUE_PATTERNS = [
  '{city} Arena', '{word} Hall', 'The {word} Room', '{word} Theatre', '{city} {word} Club', '{word} Ballroom', '{city} Amphitheater',
  '{word} Music Center', '{word} Pavilion', '{city} Opera House',
] as const;

/** For venues of 30,000 seats or more. */
export const STADIUM_PATTERNS = ['{city} Stadium', '{word} Park', '{word} Field', '{city} Olympic Stadium'] as const;

/** Sections of a seated venue (sales and marketplace B rows). */
export const SECTIONS = ['Floor', 'Lower 101', 'Lower 105', 'Lower 112', 'Upper 204', 'Upper 215', 'Balcony', 'Mezzanine', 'Pit', 'Terrace'];

export const SOCIAL_NETWORKS = ['spotify', 'instagram', 'youtube', 'tiktok', 'x', 'facebook'] as const;

// Invented words, so the vocabulary grows with the catalog as a real one does (tens of thousands
// of distinct artist names, not a few hundred recombined), which is what typo lookups and the
// posting lists of the search index meet in production.
const ONSETS = ['b', 'br', 'c', 'ch', 'd', 'dr', 'f', 'fl', 'g', 'gr', 'h', 'j', 'k', 'kl', 'l', 'm', 'n', 'p', 'pr', 'r', 's', 'sh', 'st', 't', 'tr', 'v', 'w', 'z', 'th', 'qu'];
const VOWELS = ['a', 'e', 'i', 'o', 'u', 'ai', 'ea', 'io', 'ou', 'y', 'ae', 'ee'];
const CODAS = ['', '', '', 'n', 'r', 'l', 's', 'x', 'th', 'nd', 'm', 'k', 'rt', 'ss'];

/** A pronounceable invented word of 2 or 3 syllables, capitalised ("Brailon", "Zeamith"). */
export function inventedWord(next: () => number): string {
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!;
  const syllables = next() < 0.7 ? 2 : 3;
  let word = '';
  for (let i = 0; i < syllables; i++) word += pick(ONSETS) + pick(VOWELS) + (i === syllables - 1 || next() < 0.3 ? pick(CODAS) : '');
  return word[0]!.toUpperCase() + word.slice(1);
}
