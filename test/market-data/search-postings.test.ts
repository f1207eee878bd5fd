// Issue 40: ranked search (words, sortBy recommended) reads search_postings (migration 039)
// instead of event_search's vectors. The postings are a copy, kept by triggers: this file holds
// them to their source, and the answers to the ones before them.
// - The oracle below is the ranked SQL search ran before the postings (every term computed from
//   event_search's search_vector and name_vector by PostgreSQL's own tsquery matching), with the
//   same typo pass. Over random queries (catalog words whole, typed as prefixes, with typos, two
//   or three at a time, with filters and pages), the answers are identical.
// - After random writes of every kind event_search sees (renames, new popularity, the tracker's
//   upsert of unchanged rows, deletes, new events, truncation), the postings are exactly the
//   words of the vectors, with their name flag and the popularity of the row.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { createPool, type Pool } from '../../db/pool.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { bindColumns, compileFilter, FILTERABLE_ATTRIBUTES, type FilterableAttributeName } from '../../src/apis/market-data/filter-expression.ts';
import { refreshSearchRange, refreshSearchRows } from '../../src/market-data/search-index.ts';
import {
  compilePostingsFilter,
  COUNT_CAP,
  filteredTopOfOneWord,
  searchEvents,
  walkNearTop,
  type SearchHit,
  type SearchParams,
} from '../../src/market-data/search-query.ts';
import { eventsWithWords, oneWordShape, rankingSource, type WordTerms } from '../../src/market-data/search-ranking.ts';
import { SearchVocabulary, type NearWord } from '../../src/market-data/search-vocabulary.ts';
import { seedCatalog } from '../../src/market-data/seed/seed.ts';
import { databaseUrl } from '../support/harness.ts';

let scratch: ScratchDatabase;
let db: Db;
let pool: Pool;
let vocabulary: SearchVocabulary;
let words: string[] = [];
/** Each event's words: a query made of one event's words matches at least that event, as typed. */
let eventWords: string[][] = [];
/** Words sharing a two-character prefix with more than MANY_WORDS others (a short prefix's buckets). */
let crowded: string[] = [];

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_search_postings', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 2 });
  await seedCatalog(db, { events: 400, detail: 'light', seed: 23, now: new Date('2026-01-15T12:00:00Z') });
  pool = createPool({ connectionString: scratch.url, max: 2 });
  // 120 events renamed to words of one two-character beginning, "zq…": more than a prefix's
  // words are read one by one, so "zq" is read by its bucket.
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  crowded = Array.from({ length: 120 }, (_, i) => `zq${letters[i % 26]}${letters[Math.floor(i / 26)]}${i % 3 === 0 ? 'x' : ''}`);
  await pool.query(
    `UPDATE event_search s SET event_name = n.name, search_text = lower(concat_ws(' ', n.name, s.artist_name, s.venue_name, s.venue_city))
     FROM (SELECT unnest($1::text[]) AS name, generate_series(0, 119) AS i) n
     WHERE s.event_id = (SELECT min(event_id) FROM event_search) + n.i * 3`,
    [crowded.map((w, i) => (i % 4 === 0 ? `${w} Live` : `Live ${w} ${crowded[(i * 7) % 120]}`))],
  );
  vocabulary = new SearchVocabulary(pool);
  await vocabulary.ready();
  const { rows } = await pool.query<{ word: string }>('SELECT word FROM search_dictionary ORDER BY word');
  words = rows.map((r) => r.word);
  const events = await pool.query<{ words: string[] }>('SELECT tsvector_to_array(search_vector) AS words FROM event_search ORDER BY event_id');
  eventWords = events.rows.map((r) => r.words);
}, 120_000);

afterAll(async () => {
  await pool?.end();
  await db?.destroy();
  await scratch?.drop();
});

// ---------------------------------------------------------------------------------------------
// The oracle: search-query.ts's ranked search as it was before the postings (7febbdb's SQL).

interface Term {
  word: string;
  prefix: boolean;
  near: NearWord[];
}
const FILTER_COLUMNS = bindColumns(
  Object.fromEntries(Object.keys(FILTERABLE_ATTRIBUTES).map((n) => [n, `s.${n}`])) as Record<FilterableAttributeName, string>,
);
const lexeme = (text: string, prefix: boolean) => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "''")}'${prefix ? ':*' : ''}`;
const anyOf = (ops: readonly string[]) => (ops.length === 1 ? ops[0]! : `(${ops.join(' | ')})`);
const termQuery = (t: Term) => anyOf([lexeme(t.word, t.prefix), ...t.near.map((n) => lexeme(n.text, n.prefix))]);

async function oracleRanked(params: SearchParams, terms: Term[]): Promise<{ nbHits: number; ids: number[] }> {
  const filter = compileFilter(params.filterExpression, FILTER_COLUMNS, 1);
  const values: unknown[] = [...filter.params];
  const bind = (v: unknown, type: string) => {
    values.push(v);
    return `$${values.length}::${type}`;
  };
  const alternatives = terms.map(termQuery);
  const where = `s.search_vector @@ ${bind(alternatives.join(' & '), 'tsquery')} AND (${filter.sql})`;
  const typos = terms
    .filter((t) => t.near.length)
    .map((t) => {
      const exact = bind(lexeme(t.word, t.prefix), 'tsquery');
      const one = t.near.filter((n) => n.typos === 1).map((n) => lexeme(n.text, n.prefix));
      const oneTest = one.length ? ` WHEN s.search_vector @@ ${bind(anyOf(one), 'tsquery')} THEN 1` : '';
      return `CASE WHEN s.search_vector @@ ${exact} THEN 0${oneTest} ELSE 2 END`;
    });
  const inName = alternatives.map((a) => `(s.name_vector @@ ${bind(a, 'tsquery')})::int`);
  const whole = terms.map((t) => `(s.search_vector @@ ${bind(lexeme(t.word, false), 'tsquery')})::int`);
  const { rows } = await pool.query<{ event_id: string; n: number }>(
    `SELECT event_id, count(*) OVER ()::int AS n FROM (
       SELECT s.event_id, s.tickets_sold_24h, s.tickets_sold, ${typos.length ? typos.join(' + ') : '0'} AS typos,
              ${inName.join(' + ')} AS in_name, ${whole.join(' + ')} AS exact
       FROM event_search s WHERE ${where}) m
     ORDER BY typos ASC, in_name DESC, exact DESC, tickets_sold_24h DESC, tickets_sold DESC, event_id ASC`,
    values,
  );
  const from = (params.page - 1) * params.hitsPerPage;
  return { nbHits: rows[0]?.n ?? 0, ids: rows.slice(from, from + params.hitsPerPage).map((r) => Number(r.event_id)) };
}

async function oracleSearch(params: SearchParams): Promise<{ nbHits: number; ids: number[] }> {
  const { rows } = await pool.query<{ words: string[] }>('SELECT search_words(lower($1::text)) AS words', [params.query]);
  const typing = !/\s$/u.test(params.query);
  const terms: Term[] = rows[0]!.words.map((word, i, all) => ({ word, prefix: typing && i === all.length - 1, near: [] }));
  let found = await oracleRanked(params, terms);
  if (found.nbHits === 0) {
    const asTyped = await pool.query<{ found: boolean }>('SELECT EXISTS (SELECT 1 FROM event_search s WHERE s.search_vector @@ $1::tsquery) AS found', [
      terms.map(termQuery).join(' & '),
    ]);
    if (params.filterExpression === '' || !asTyped.rows[0]!.found) {
      const fuzzy = terms.map((t, i) => ({ ...t, near: i < 10 ? vocabulary.near(t.word, t.prefix) : [] }));
      if (fuzzy.some((t) => t.near.length)) found = await oracleRanked(params, fuzzy);
    }
  }
  return found;
}

/**
 * Searches with the count's cap at `cap` and holds the answer to the oracle's: the same page,
 * and nbHits the cap (not exhaustive) past it, else exact. Returns the oracle's answer.
 */
async function expectOraclePageWithCap(params: SearchParams, cap: number): Promise<{ nbHits: number; ids: number[] }> {
  const want = await oracleSearch(params);
  const got = await searchEvents(pool, params, vocabulary, cap);
  expect(got.hits.map((h) => h.event_id), params.query).toEqual(want.ids);
  expect({ nbHits: got.nbHits, exhaustive: got.exhaustiveNbHits }, params.query).toEqual(
    want.nbHits > cap ? { nbHits: cap, exhaustive: false } : { nbHits: want.nbHits, exhaustive: true },
  );
  return want;
}

// ---------------------------------------------------------------------------------------------

/** A query a user could type from catalog words: whole, cut short while typing, or misspelt. */
const queryArb = () =>
  fc
    .record({
      // Mostly one event's words (they match it at least), sometimes any catalog words.
      event: fc.option(fc.nat(), { freq: 5 }),
      parts: fc.array(
        fc.record({
          i: fc.nat(),
          form: fc.constantFrom('whole', 'whole', 'prefix', 'typo', 'upper'),
          cut: fc.integer({ min: 1, max: 6 }),
          at: fc.nat(),
        }),
        { minLength: 1, maxLength: 3 },
      ),
      trailingSpace: fc.boolean(),
    })
    .map(({ event, parts, trailingSpace }) => {
      const from = event === null ? words : eventWords[event % eventWords.length]!;
      const typed = parts.map(({ i, form, cut, at }) => {
        const w = from[i % from.length]!;
        if (form === 'prefix') return w.slice(0, Math.min(w.length, cut));
        if (form === 'upper') return w.toUpperCase();
        if (form === 'typo' && w.length >= 4) {
          const k = at % w.length;
          return w.slice(0, k) + (w[k] === 'x' ? 'q' : 'x') + w.slice(k + 1);
        }
        return w;
      });
      return typed.join(' ') + (trailingSpace ? ' ' : '');
    });

// All but the last on attributes the postings carry (read off them); the last on a city, which
// they do not (read off the rows).
const FILTERS = [
  '',
  '',
  'tickets_sold > 10',
  'venue_country_code:US',
  'NOT venue_country_code:US AND available_tickets < 800',
  'capacity > 1000000',
  'average_ticket_price_sold:20 TO 200 OR category_name:Rock',
  'NOT venue_city:London AND tickets_sold >= 1',
];

describe('ranked search from the postings', () => {
  it('property: the same page and count as the ranked SQL over event_search, typos and filters included', async () => {
    let withHits = 0;
    let typoPass = 0;
    await fc.assert(
      fc.asyncProperty(
        queryArb(),
        fc.constantFrom(...FILTERS),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 25 }),
        async (query, filterExpression, page, hitsPerPage) => {
          const params: SearchParams = { query, filterExpression, page, hitsPerPage, sortBy: 'recommended' };
          const want = await oracleSearch(params);
          // As rankingSource chooses, and from each source whatever it would choose.
          for (const rankFrom of [undefined, 'postings', 'rows'] as const) {
            const got = await searchEvents(pool, params, vocabulary, COUNT_CAP, rankFrom);
            expect({ nbHits: got.nbHits, ids: got.hits.map((h: SearchHit) => h.event_id) }, rankFrom).toEqual(want);
            expect(got.exhaustiveNbHits).toBe(true);
          }
          if (want.nbHits > 0) withHits++;
          if (want.nbHits > 0 && /x/.test(query)) typoPass++;
        },
      ),
      { numRuns: Number(process.env.SEARCH_POSTINGS_RUNS ?? 200) },
    );
    // Both kinds of answer came up: a property over empty answers only would prove nothing.
    expect(withHits).toBeGreaterThan(50);
    expect(typoPass).toBeGreaterThan(3);
  }, 120_000);

  it('a word matched by two alternatives counts its fewest typos', async () => {
    // A has a word one typo from the query's and another two away; B only the first. Counted
    // by its fewest, A ties B on typos and wins on popularity; counted by its most, it would not.
    const { rows } = await pool.query<{ id: string }>('SELECT event_id::text AS id FROM event_search ORDER BY event_id LIMIT 2');
    const [a, b] = rows.map((r) => Number(r.id)) as [number, number];
    const name = (id: number, text: string, sold24h: number) =>
      pool.query('UPDATE event_search SET event_name = $2, search_text = lower($2), tickets_sold_24h = $3 WHERE event_id = $1', [id, text, sold24h]);
    await name(a, 'Qwertyui Qwertxzz Night', 999_999);
    await name(b, 'Qwertyui Day', 999_998);
    const fresh = new SearchVocabulary(pool);
    await fresh.ready();
    const params: SearchParams = { query: 'qwertyuz ', filterExpression: '', page: 1, hitsPerPage: 10, sortBy: 'recommended' };
    for (const rankFrom of ['postings', 'rows'] as const) {
      const got = await searchEvents(pool, params, fresh, COUNT_CAP, rankFrom);
      expect(got.hits.map((h) => h.event_id), rankFrom).toEqual([a, b]);
    }
    expect(fresh.near('qwertyuz', false).map((n) => [n.text, n.typos]).sort()).toEqual([
      ['qwertxzz', 2],
      ['qwertyui', 1],
    ]);
  });

  it('rankingSource: one word from the postings (its top past the cap); several, or a filter, from the rows up to the cap', async () => {
    const { rows } = await pool.query<{ word: string; n: number }>(
      'SELECT word, count(*)::int AS n FROM search_postings GROUP BY word ORDER BY count(*) DESC, word LIMIT 1',
    );
    const common = rows[0]!;
    const term = (word: string, prefix = false): WordTerms => ({ word, prefix, near: [] });
    const plan = async (terms: WordTerms[], filtered: boolean, cap = COUNT_CAP) => rankingSource(pool, terms, filtered, cap, new Set());
    expect(await plan([term(common.word)], false)).toEqual({ source: 'postings' });
    expect(await plan([term(common.word)], false, common.n - 1)).toMatchObject({ source: 'top', shape: { beyondCap: true } });
    expect(await plan([term(common.word)], false, common.n)).toEqual({ source: 'postings' });
    // Each a single catalog word: counted off the postings first; a prefix many words start with is not one.
    expect(await plan([term(common.word), term(common.word)], false, 7)).toEqual({ source: 'rows', upTo: 7, countFirst: [common.word, common.word] });
    expect(await plan([term(common.word), term(common.word.slice(0, 1), true)], false, 7)).toEqual({ source: 'rows', upTo: 7 });
    expect(await plan([term(common.word), { ...term('x', true), expands: [common.word] }], false, 7)).toEqual({
      source: 'rows',
      upTo: 7,
      countFirst: [common.word, common.word],
    });
    expect(await plan([term(common.word), term(common.word)], true)).toEqual({ source: 'rows', upTo: COUNT_CAP });
    expect(await plan([term(common.word)], true, 7)).toEqual({ source: 'rows', upTo: 7 });
  });

  it('the broadest queries (one letter, two) rank every match alike', async () => {
    for (const query of ['a', 's', 'th', 'lo', 'new york', 'the ']) {
      const params: SearchParams = { query, filterExpression: '', page: 1, hitsPerPage: 50, sortBy: 'recommended' };
      const want = await oracleSearch(params);
      for (const rankFrom of [undefined, 'postings', 'rows'] as const) {
        const got = await searchEvents(pool, params, vocabulary, COUNT_CAP, rankFrom);
        expect({ nbHits: got.nbHits, ids: got.hits.map((h) => h.event_id) }, `${query} ${rankFrom}`).toEqual(want);
      }
    }
  });
});

describe('one word past the cap: the top of its ranking from the postings’ order', () => {
  it('an event whose name has a longer word, and which has the word itself elsewhere, ranks as "in name" and "whole word"', async () => {
    // A: "vkw" in its venue, "vkwxyz" in its name; B: "vkw" in its name; C: only "vkwxyz", in its
    // name; D: only "vkw", in its venue. Most popular: D, C, A, B. Ranked: A and B (in name and
    // whole), then C (in name), then D (whole only): an event's best posting must carry both.
    const { rows } = await pool.query<{ id: string }>('SELECT event_id::text AS id FROM event_search ORDER BY event_id DESC LIMIT 4');
    const [a, b, c, d] = rows.map((r) => Number(r.id)) as [number, number, number, number];
    const set = (id: number, name: string, venue: string, sold24h: number) =>
      pool.query(
        `UPDATE event_search SET event_name = $2, artist_name = NULL, venue_name = $3, venue_city = 'Nowhere',
           search_text = lower(concat_ws(' ', $2::text, $3::text, 'Nowhere')), tickets_sold_24h = $4 WHERE event_id = $1`,
        [id, name, venue, sold24h],
      );
    await set(a, 'Vkwxyz Night', 'Vkw Hall', 800_002);
    await set(b, 'Vkw Night', 'Main Hall', 800_001);
    await set(c, 'Vkwxyz Day', 'Main Hall', 800_003);
    await set(d, 'Evening', 'Vkw Hall', 800_004);
    for (const query of ['vkw', 'vk', 'v']) {
      const params: SearchParams = { query, filterExpression: '', page: 1, hitsPerPage: 4, sortBy: 'recommended' };
      for (const rankFrom of [undefined, 'postings', 'rows', 'top'] as const) {
        const got = await searchEvents(pool, params, vocabulary, 1, rankFrom);
        const ids = got.hits.map((h) => h.event_id);
        if (query === 'vkw') expect(ids, `${query} ${rankFrom}`).toEqual([a, b, c, d]);
        expect(ids, `${query} ${rankFrom}`).toEqual((await oracleSearch(params)).ids);
      }
    }
  });

  it('property: the page the full ranking has, nbHits the cap, through every way of reading the top, filtered or not', async () => {
    const seen = { whole: 0, allRead: 0, byWord: 0, byBucket: 0, oneChar: 0 };
    await fc.assert(
      fc.asyncProperty(
        fc.oneof({ weight: 2, arbitrary: fc.nat().map((i) => words[i % words.length]!) }, { weight: 1, arbitrary: fc.constantFrom(...crowded) }),
        fc.integer({ min: 1, max: 6 }),
        fc.constantFrom('prefix', 'prefix', 'prefix', 'whole'),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 15 }),
        fc.constantFrom('', '', '', ...FILTERS),
        async (w, cut, form, cap, page, hitsPerPage, filterExpression) => {
          const query = form === 'whole' ? `${w} ` : w.slice(0, Math.min(cut, w.length));
          const params: SearchParams = { query, filterExpression, page, hitsPerPage, sortBy: 'recommended' };
          const want = await expectOraclePageWithCap(params, cap);
          // Whatever the count, read from the top: the same page.
          const top = await searchEvents(pool, params, vocabulary, cap, 'top');
          expect(top.hits.map((h) => h.event_id), `${query} from the top`).toEqual(want.ids);
          // The ways the top is read, counted where it is read: a filtered query is ranked from the rows.
          const term = { word: query.trim(), prefix: form !== 'whole', near: [] };
          const shape = await oneWordShape(pool, term, cap);
          if (filterExpression !== '') return;
          if (!term.prefix) seen.whole++;
          else if (shape.allRead) seen.allRead++;
          else if (shape.words <= 64) seen.byWord++;
          else if ([...term.word].length >= 2) seen.byBucket++;
          else seen.oneChar++;
        },
      ),
      { numRuns: Number(process.env.SEARCH_TOP_RUNS ?? 250) },
    );
    // Every way of reading the top came up: one never taken would be proven by nothing.
    for (const [way, n] of Object.entries(seen)) expect(n, way).toBeGreaterThan(0);
  }, 120_000);
});

describe('search_events_with_words (migration 042): the events having every word, counted off the postings', () => {
  it('property: the number of events whose words include them all, up to the bound', async () => {
    let some = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.nat(),
        fc.array(fc.nat(), { minLength: 1, maxLength: 3 }),
        fc.boolean(),
        fc.integer({ min: 1, max: 60 }),
        async (e, picks, anyWord, atMost) => {
          // Words of one event (they meet at least there), or any catalog words (they may not).
          const from = anyWord ? words : eventWords[e % eventWords.length]!;
          const chosen = picks.map((i) => from[i % from.length]!);
          const { rows } = await pool.query<{ n: number }>(
            'SELECT count(*)::int AS n FROM event_search WHERE tsvector_to_array(search_vector) @> $1::text[]',
            [chosen],
          );
          const truth = rows[0]!.n;
          expect(await eventsWithWords(pool, chosen, atMost), chosen.join(' ')).toBe(Math.min(truth, atMost));
          if (truth > 0) some++;
        },
      ),
      { numRuns: Number(process.env.SEARCH_WITH_WORDS_RUNS ?? 150) },
    );
    expect(some).toBeGreaterThan(50);
  });

  it('counts exactly what is asked, and a vocabulary knows the words its statistics put past the common bound', async () => {
    await pool.query('ANALYZE search_postings');
    const { rows } = await pool.query<{ word: string; n: number }>(
      'SELECT word, count(*)::int AS n FROM search_postings GROUP BY word ORDER BY count(*) DESC, word LIMIT 1',
    );
    const common = rows[0]!;
    expect(await eventsWithWords(pool, [common.word, common.word], 1_000_000)).toBe(common.n);
    expect(await eventsWithWords(pool, [], 10)).toBe(0);
    const strict = new SearchVocabulary(pool, common.n / 2);
    expect(strict.commonWords()).toBeNull();
    await strict.ready();
    expect(strict.commonWords()?.has(common.word)).toBe(true);
    const term = (word: string): WordTerms => ({ word, prefix: false, near: [] });
    // A common word among them: the full-text index intersects them, no count off the postings.
    expect(await rankingSource(pool, [term(words[0]!), term(common.word)], false, 7, strict.commonWords())).toEqual({ source: 'rows', upTo: 7 });
    const lenient = new SearchVocabulary(pool);
    await lenient.ready();
    expect(lenient.commonWords()?.size).toBe(0);
    expect(await rankingSource(pool, [term(words[0]!), term(common.word)], false, 7, lenient.commonWords())).toMatchObject({ countFirst: [words[0], common.word] });
  });
});

describe('one typed word alone under its prefix, with a filter on the postings: their top, in order', () => {
  it('property: the page and count the full ranking has, read from the first postings that pass', async () => {
    let answered = 0;
    let past = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.nat(),
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 6 }),
        fc.constantFrom(...FILTERS.slice(0, -1)),
        async (i, cut, cap, page, hitsPerPage, filterExpression) => {
          // Words of events (common ones come up often), typed in part.
          const from = eventWords[i % eventWords.length]!;
          const w = from[i % from.length]!;
          const typed = w.slice(0, Math.min(cut, w.length));
          const under = words.filter((d) => d.startsWith(typed));
          const params: SearchParams = { query: typed, filterExpression, page, hitsPerPage, sortBy: 'recommended' };
          const term = { word: typed, prefix: true, near: [], expands: under };
          const got = await filteredTopOfOneWord(pool, params, term, compilePostingsFilter(filterExpression)!, cap);
          if (under.length !== 1 || (page - 1) * hitsPerPage + hitsPerPage > cap + 1) {
            expect(got).toBeNull();
            return;
          }
          const want = await oracleSearch(params);
          expect(got, typed).not.toBeNull();
          expect(got!.hits.map((h) => h.event_id), `${typed} ${filterExpression}`).toEqual(want.ids);
          expect(Math.min(got!.matches, cap + 1)).toBe(Math.min(want.nbHits, cap + 1));
          answered++;
          if (want.nbHits > cap) past++;
        },
      ),
      { numRuns: Number(process.env.SEARCH_FILTERED_TOP_RUNS ?? 200) },
    );
    expect(answered).toBeGreaterThan(40);
    expect(past).toBeGreaterThan(10);
  }, 120_000);
});

describe('several words, or words and a filter, past the cap: the rows up to it, then a walk down the last word, or the postings', () => {
  it('the walk down the last word stops only when no event further down can enter the page', async () => {
    // 40 events with "qqbw" in the name and "qqaw" in the venue; one more, the most popular, the
    // other way round. All have one word in name and both whole, so the most popular ranks first:
    // yet its posting of the last word, "qqbw", not in its name, comes after the 40 others'.
    const { rows } = await pool.query<{ id: string }>('SELECT event_id::text AS id FROM event_search ORDER BY event_id DESC OFFSET 10 LIMIT 41');
    const ids = rows.map((r) => Number(r.id));
    const set = (id: number, name: string, venue: string, sold24h: number) =>
      pool.query(
        `UPDATE event_search SET event_name = $2, artist_name = NULL, venue_name = $3, venue_city = 'Nowhere',
           search_text = lower(concat_ws(' ', $2::text, $3::text, 'Nowhere')), tickets_sold_24h = $4 WHERE event_id = $1`,
        [id, name, venue, sold24h],
      );
    for (const [i, id] of ids.slice(0, 40).entries()) await set(id, `Qqbw Night ${i}`, 'Qqaw Hall', 900_000 + i);
    await set(ids[40]!, 'Qqaw Night', 'Qqbw Hall', 990_000);
    for (const query of ['qqaw qqbw', 'qqaw qqb', 'qqaw qqbw ']) {
      const params: SearchParams = { query, filterExpression: '', page: 1, hitsPerPage: 3, sortBy: 'recommended' };
      const got = await searchEvents(pool, params, vocabulary, 5);
      expect(got.hits.map((h) => h.event_id), query).toEqual([ids[40], ids[39], ids[38]]);
      expect(got.hits.map((h) => h.event_id), query).toEqual((await oracleSearch(params)).ids);
      expect(got).toMatchObject({ nbHits: 5, exhaustiveNbHits: false });
    }
  });

  it('property: the page the full ranking has, nbHits the cap past it, whichever side of the cap', async () => {
    let past = 0;
    let within = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.nat(),
        fc.nat(),
        fc.nat(),
        fc.boolean(),
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 3 }),
        fc.constantFrom('', '', ...FILTERS),
        async (e, i, j, typing, cap, page, filterExpression) => {
        const from = eventWords[e % eventWords.length]!;
        const query = `${from[i % from.length]!} ${from[j % from.length]!.slice(0, typing ? 3 : undefined)}${typing ? '' : ' '}`;
        const params: SearchParams = { query, filterExpression, page, hitsPerPage: 5, sortBy: 'recommended' };
        const want = await expectOraclePageWithCap(params, cap);
        if (want.nbHits > cap) past++;
        else within++;
      },
      ),
      { numRuns: Number(process.env.SEARCH_WORDS_RUNS ?? 150) },
    );
    expect(past).toBeGreaterThan(10);
    expect(within).toBeGreaterThan(10);
  }, 120_000);
});

describe('one mistyped word past the cap: the top of its closest alternatives', () => {
  it('decides the page once its last event is in name, and takes "in name" from any alternative', async () => {
    // Twelve events with "pqvxjklz" (one typo from the query) in the venue. Two have it in the
    // name too; one, the least popular, has "pqvxjkzz" (two typos) in its name instead: it ranks
    // third, before every event not in name, though its posting of "pqvxjklz" comes last.
    const { rows } = await pool.query<{ id: string }>('SELECT event_id::text AS id FROM event_search ORDER BY event_id OFFSET 100 LIMIT 12');
    const ids = rows.map((r) => Number(r.id));
    const set = (id: number, name: string, sold24h: number) =>
      pool.query(
        `UPDATE event_search SET event_name = $2, artist_name = NULL, venue_name = 'Pqvxjklz Hall', venue_city = 'Nowhere',
           search_text = lower(concat_ws(' ', $2::text, 'Pqvxjklz Hall', 'Nowhere')), tickets_sold_24h = $3 WHERE event_id = $1`,
        [id, name, sold24h],
      );
    const plain = ids.slice(0, 9);
    const [n1, n2, x] = ids.slice(9) as [number, number, number];
    // Popularity order: plain 4..0, n1, n2, plain 8..5, x.
    for (const [i, id] of plain.entries()) await set(id, `Plain Night ${i}`, i < 5 ? 900_000 + i : 100 + i);
    await set(n1, 'Pqvxjklz Live', 800_001);
    await set(n2, 'Pqvxjklz Night', 800_000);
    await set(x, 'Pqvxjkzz Night', 5);
    // The oracle's vocabulary too: it must know the new words.
    vocabulary = new SearchVocabulary(pool);
    await vocabulary.ready();
    const fresh = vocabulary;
    const term = { word: 'pqvxjklm', prefix: false, near: fresh.near('pqvxjklm', false) };
    expect(term.near.map((n) => [n.text, n.typos]).sort()).toEqual([
      ['pqvxjklz', 1],
      ['pqvxjkzz', 2],
    ]);
    const params = (page: number): SearchParams => ({ query: 'pqvxjklm ', filterExpression: '', page, hitsPerPage: 2, sortBy: 'recommended' });
    const want = [
      [n1, n2],
      [x, plain[4]],
    ];
    for (const page of [1, 2]) {
      // Two postings first: page 1 is decided after 8 (n1 and n2 are in name), page 2 only at the end (x).
      const walked = await walkNearTop(pool, params(page), term, 3, 2);
      expect(walked?.map((h) => h.event_id), `page ${page}`).toEqual(want[page - 1]);
      const got = await searchEvents(pool, params(page), fresh, 3);
      expect(got.hits.map((h) => h.event_id), `page ${page}`).toEqual(want[page - 1]);
      expect(got.hits.map((h) => h.event_id), `page ${page}`).toEqual((await oracleSearch(params(page))).ids);
      expect(got).toMatchObject({ nbHits: 3, exhaustiveNbHits: false });
    }
    // Within the cap the postings rank every match: no walk.
    expect(await walkNearTop(pool, params(1), term, 12)).toBeNull();
  });

  it('property: the page the full ranking has, for a mistyped word of any size, whole or typed', async () => {
    let walks = 0;
    let typoPass = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.nat(),
        fc.nat(),
        fc.nat(),
        fc.boolean(),
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 8 }),
        async (e, i, at, typing, cap, page, first) => {
          const from = eventWords[e % eventWords.length]!.filter((w) => w.length >= 4 && !/[0-9]/.test(w));
          if (!from.length) return;
          const w = from[i % from.length]!;
          const k = at % w.length;
          const typed = w.slice(0, k) + (w[k] === 'x' ? 'q' : 'x') + w.slice(k + 1);
          const params: SearchParams = { query: typing ? typed : `${typed} `, filterExpression: '', page, hitsPerPage: 5, sortBy: 'recommended' };
          const want = await expectOraclePageWithCap(params, cap);
          // The walk itself, from a few postings: whenever it answers, the full ranking's page.
          const asTyped = await pool.query<{ found: boolean }>('SELECT EXISTS (SELECT 1 FROM event_search s WHERE s.search_vector @@ $1::tsquery) AS found', [
            `'${typed}'${typing ? ':*' : ''}`,
          ]);
          if (asTyped.rows[0]!.found) return;
          typoPass++;
          const walked = await walkNearTop(pool, params, { word: typed, prefix: typing, near: vocabulary.near(typed, typing) }, cap, first);
          if (walked === null) return;
          walks++;
          expect(walked.map((h) => h.event_id), params.query).toEqual(want.ids);
        },
      ),
      { numRuns: Number(process.env.SEARCH_NEAR_RUNS ?? 150) },
    );
    expect(typoPass).toBeGreaterThan(50);
    expect(walks).toBeGreaterThan(10);
  }, 120_000);
});

/** Values each carried attribute is set to by the writes below (nulls where the column takes them). */
const CARRIED_VALUES: Record<string, { cast: string; values: unknown[] }> = {
  venue_country_code: { cast: 'text', values: ['US', 'GB', 'DK', null] },
  category_name: { cast: 'text', values: ['Rock', 'Pop', null] },
  event_date: { cast: 'bigint', values: [1_700_000_000, 1_800_000_000, null] },
  average_ticket_price_sold: { cast: 'numeric', values: ['12.50', '480.00', null] },
  available_tickets: { cast: 'int', values: [0, 17, 900] },
  capacity: { cast: 'int', values: [500, 80_000, null] },
};

/** Postings that differ from what event_search's rows say they must be (both directions). */
async function postingsDrift(): Promise<{ missing: number; extra: number; postings: number }> {
  // Written here from the definition (migration 039's header), not copied from its triggers.
  const carried = 'venue_country_code, category_name, event_date, average_ticket_price_sold, available_tickets, capacity';
  const truth = `SELECT w AS word, s.event_id, w = ANY (tsvector_to_array(s.name_vector)) AS in_name,
                        EXISTS (SELECT 1 FROM unnest(tsvector_to_array(s.name_vector)) AS n WHERE left(n, length(w)) = w) AS prefix_in_name,
                        s.tickets_sold_24h, s.tickets_sold, ${carried.split(', ').map((c) => `s.${c}`).join(', ')}
                 FROM event_search s, unnest(tsvector_to_array(s.search_vector)) AS w`;
  const held = `SELECT word, event_id, in_name, prefix_in_name, tickets_sold_24h, tickets_sold, ${carried} FROM search_postings`;
  const { rows } = await pool.query<{ missing: number; extra: number; postings: number }>(
    `SELECT (SELECT count(*) FROM (${truth} EXCEPT ${held}) x)::int AS missing,
            (SELECT count(*) FROM (${held} EXCEPT ${truth}) x)::int AS extra,
            (SELECT count(*) FROM search_postings)::int AS postings`,
  );
  return rows[0]!;
}

describe('search_postings kept by the triggers on event_search', () => {
  it('property: after any sequence of writes, the postings are exactly the rows’ words, name flags, popularity and carried attributes', async () => {
    const { rows } = await pool.query<{ lo: string; hi: string }>('SELECT min(event_id)::text AS lo, max(event_id)::text AS hi FROM event_search');
    const lo = Number(rows[0]!.lo);
    const hi = Number(rows[0]!.hi);
    const write = fc.oneof(
      fc.record({ kind: fc.constant('rename' as const), id: fc.integer({ min: lo, max: hi }), w: fc.nat(), name: fc.boolean() }),
      fc.record({ kind: fc.constant('popularity' as const), from: fc.integer({ min: lo, max: hi }), n: fc.integer({ min: 1, max: 30 }), d: fc.integer({ min: -5, max: 50 }) }),
      fc.record({ kind: fc.constant('refresh' as const), from: fc.integer({ min: lo, max: hi }), n: fc.integer({ min: 1, max: 40 }) }),
      fc.record({ kind: fc.constant('delete' as const), from: fc.integer({ min: lo, max: hi }), n: fc.integer({ min: 1, max: 5 }) }),
      // One attribute a posting carries for filters (migration 041), alone: it must reach them by itself.
      fc.record({
        kind: fc.constant('attribute' as const),
        from: fc.integer({ min: lo, max: hi }),
        n: fc.integer({ min: 0, max: 20 }),
        column: fc.constantFrom(...Object.keys(CARRIED_VALUES)),
        v: fc.nat(),
      }),
    );
    let changed = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(write, { minLength: 1, maxLength: 6 }), async (writes) => {
        for (const w of writes) {
          if (w.kind === 'rename') {
            // A word added and the old ones gone, in the name (name flag) or the venue text only.
            const word = `${words[w.w % words.length]!}x${w.w % 7}`;
            const column = w.name ? 'event_name' : 'venue_name';
            const r = await pool.query(`UPDATE event_search SET ${column} = $2, search_text = lower(concat_ws(' ', CASE WHEN $3 THEN $2 ELSE event_name END, artist_name, CASE WHEN $3 THEN venue_name ELSE $2 END, venue_city)) WHERE event_id = $1`, [
              w.id,
              `${word} Live`,
              w.name,
            ]);
            changed += r.rowCount ?? 0;
          } else if (w.kind === 'popularity') {
            const r = await pool.query(
              // An even change moves the last 24 h alone: each column must reach the postings by itself.
              'UPDATE event_search SET tickets_sold_24h = greatest(0, tickets_sold_24h + $3), tickets_sold = tickets_sold + CASE WHEN $3 % 2 = 0 THEN 0 ELSE abs($3) END WHERE event_id BETWEEN $1 AND $1 + $2',
              [w.from, w.n, w.d],
            );
            changed += r.rowCount ?? 0;
          } else if (w.kind === 'refresh') {
            // The tracker's write: the row rebuilt from the catalog (its original words back).
            await refreshSearchRange(db, w.from, w.from + w.n);
          } else if (w.kind === 'attribute') {
            const { cast, values } = CARRIED_VALUES[w.column]!;
            const r = await pool.query(`UPDATE event_search SET ${w.column} = $3::${cast} WHERE event_id BETWEEN $1 AND $1 + $2`, [w.from, w.n, values[w.v % values.length]]);
            changed += r.rowCount ?? 0;
          } else {
            await pool.query('DELETE FROM event_search WHERE event_id BETWEEN $1 AND $1 + $2', [w.from, w.n]);
          }
        }
        expect(await postingsDrift()).toMatchObject({ missing: 0, extra: 0 });
      }),
      { numRuns: Number(process.env.SEARCH_POSTINGS_WRITE_RUNS ?? 40) },
    );
    expect(changed).toBeGreaterThan(20);
    // Every event back as the catalog has it, and the postings with them; then none at all.
    await refreshSearchRange(db, lo, hi);
    const whole = await postingsDrift();
    expect(whole).toMatchObject({ missing: 0, extra: 0 });
    expect(whole.postings).toBeGreaterThan(1_000);
    await refreshSearchRows(db, [lo, lo + 1]);
    expect(await postingsDrift()).toMatchObject({ missing: 0, extra: 0 });
    await pool.query('TRUNCATE event_search');
    expect(await postingsDrift()).toEqual({ missing: 0, extra: 0, postings: 0 });
    await refreshSearchRange(db, lo, hi);
    expect(await postingsDrift()).toMatchObject({ missing: 0, extra: 0 });
  }, 120_000);
});
