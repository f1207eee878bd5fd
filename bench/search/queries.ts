// The requests bench:search sends, drawn from the seeded catalog itself so every text query can
// find something: artist names as typed in full, cities, prefixes as a user types them, names
// with a typo, two words, text with filters, filters alone, every sort order, and the broad
// queries (one letter, a common word, a deep page) that cost the most and are reported apart.
import type { Pool } from '../../db/pool.ts';
import { SORT_BY, type SearchParams } from '../../src/market-data/search-query.ts';
import { Random } from '../../src/market-data/seed/random.ts';

export interface Scenario {
  name: string;
  /** Typical traffic (counted for the p95 target) or a worst case shown for information. */
  kind: 'typical' | 'broad';
  requests: SearchParams[];
}

const BASE: SearchParams = { query: '', page: 1, hitsPerPage: 20, sortBy: 'recommended', filterExpression: '' };

/** One keyboard slip: a swapped pair, a dropped, doubled or replaced letter. */
function typo(r: Random, word: string): string {
  const i = r.int(1, word.length - 2);
  switch (r.int(0, 3)) {
    case 0:
      return word.slice(0, i) + word[i + 1] + word[i] + word.slice(i + 2);
    case 1:
      return word.slice(0, i) + word.slice(i + 1);
    case 2:
      return word.slice(0, i) + word[i] + word.slice(i);
    default:
      return word.slice(0, i) + 'aeiou'[r.int(0, 4)] + word.slice(i + 1);
  }
}

const words = (s: string) => s.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean);

export async function buildScenarios(pool: Pool, perScenario: number): Promise<Scenario[]> {
  // A fixed sample of the catalog (same seed, same sample), popular events over-represented as
  // search traffic is.
  const { rows } = await pool.query<{ artist_name: string; venue_city: string; venue_country_code: string; category_name: string; event_date: number }>(
    `SELECT artist_name, venue_city, venue_country_code, category_name, event_date FROM event_search
     WHERE artist_name IS NOT NULL AND venue_city IS NOT NULL
     ORDER BY md5(event_id::text) LIMIT 2000`,
  );
  const r = new Random(20240601);
  const pick = () => rows[r.int(0, rows.length - 1)]!;
  const make = (fn: (i: number) => Partial<SearchParams>): SearchParams[] => Array.from({ length: perScenario }, (_, i) => ({ ...BASE, ...fn(i) }));
  const longWord = (name: string) => words(name).filter((w) => w.length >= 5 && !/[0-9]/.test(w))[0];
  // What someone looking for this artist would type first: its longest word, not "the" or "dj"
  // (single common words are measured as the broad worst case).
  const distinctive = (name: string) => words(name).reduce((a, b) => (b.length > a.length ? b : a), '');
  const now = Math.floor(Date.now() / 1000);

  const scenarios: Scenario[] = [
    { name: 'text: artist name', kind: 'typical', requests: make(() => ({ query: pick().artist_name })) },
    { name: 'text: city', kind: 'typical', requests: make(() => ({ query: pick().venue_city })) },
    {
      name: 'text: prefix while typing',
      kind: 'typical',
      requests: make(() => {
        const w = distinctive(pick().artist_name);
        return { query: w.slice(0, Math.min(w.length, r.int(3, 6))) };
      }),
    },
    {
      name: 'text: one typo',
      kind: 'typical',
      requests: make(() => {
        let w: string | undefined;
        while (!w) w = longWord(pick().artist_name);
        return { query: typo(r, w) };
      }),
    },
    {
      name: 'text: two words',
      kind: 'typical',
      requests: make(() => {
        const e = pick();
        return { query: `${distinctive(e.artist_name)} ${words(e.venue_city)[0]}` };
      }),
    },
    {
      name: 'text + filters',
      kind: 'typical',
      requests: make((i) => {
        const e = pick();
        const filters = [`venue_country_code:${e.venue_country_code}`, `tickets_sold > 10 AND event_date > ${now}`, `category_name:"${e.category_name}"`];
        return { query: distinctive(e.artist_name), filterExpression: filters[i % filters.length]! };
      }),
    },
    {
      name: 'filters only',
      kind: 'typical',
      requests: make((i) => {
        const e = pick();
        const filters = [
          `venue_country_code:${e.venue_country_code} AND tickets_sold > 100`,
          `category_name:"${e.category_name}" AND average_ticket_price_sold:50 TO 150`,
          `event_date:${now} TO ${now + 30 * 86_400} AND (venue_country_code:GB OR venue_country_code:IE)`,
          `NOT category_name:"${e.category_name}" AND available_tickets >= 500`,
        ];
        return { filterExpression: filters[i % filters.length]! };
      }),
    },
    {
      name: 'filters only, sorted',
      kind: 'typical',
      requests: make((i) => ({ filterExpression: `venue_country_code:${pick().venue_country_code}`, sortBy: SORT_BY[(i % (SORT_BY.length - 1)) + 1]! })),
    },
    ...SORT_BY.map((sortBy): Scenario => ({ name: `sort: ${sortBy}`, kind: 'typical', requests: make(() => ({ sortBy, page: r.int(1, 5) })) })),
    { name: 'broad: one letter', kind: 'broad', requests: make(() => ({ query: 'abcdefghijklmnoprstw'[r.int(0, 19)]! })) },
    { name: 'broad: common word', kind: 'broad', requests: make((i) => ({ query: ['the', 'live', 'tour', 'festival', 'vs'][i % 5]! })) },
    { name: 'broad: deep page (page 500)', kind: 'broad', requests: make(() => ({ page: r.int(450, 500), sortBy: 'event_date' })) },
  ];
  return scenarios;
}
