// Catalog search (POST /svc/data/search, spec 2.4 and 4.1) as SQL over `event_search`: the
// query's words against the full-text index (search_vector), typo alternatives from the
// in-memory vocabulary, the client's filterExpression compiled to parameterised SQL, one of
// the sort orders, and the page plus the exact hit count in one statement. Used by the route,
// the benchmark and the tests alike, so what is measured is what is served.
//
// Matching: the query is cut into words by the same tokenizer as the catalog (search_words()
// in migration 005). Every word must match a word of the event's name, artist, venue or city:
// exactly, and the last word also as a prefix (it is still being typed) unless the query ends
// with a space. When the words as typed match no event, the search runs again with typo
// tolerance (search-vocabulary.ts) for the first MAX_FUZZY_WORDS words.
//
// `recommended` with words ranks by, in order: fewer typos; more words found in the event or
// artist name (rather than only in the venue or city); more words matched whole (not as a typed
// prefix); then popularity (tickets_sold_24h, then tickets_sold, both descending); then event_id.
// Without words `recommended` is that popularity order. Every other sortBy orders by its
// attribute, NULLs last in both directions, ties broken by event_id in the same direction.
//
// Counting (issue 40): every count but the whole catalog's (`{}`, kept by a trigger) stops at
// COUNT_CAP, as Algolia-style APIs do: past it `nbHits` is COUNT_CAP, a lower bound, and
// `exhaustiveNbHits` false. Counting every hit was what cost the broad searches their time at a
// million events (one heap visit per matching row: 34,379 rows, 287 ms), not the page.
//
// Filters (migration 040): the indexes a filtered search reads carry the attributes filters use
// most, so a filter's count and its page's event ids are read index-only; the page's rows are
// read after, 20 heap visits rather than one per row examined.
//
// Ranking reads the hits from search_postings (migration 039: one row per word of an event, with
// its name flag and the event's popularity) rather than event_search: the words' index ranges,
// index-only, grouped by event; event_search is visited for the page and for a filter only.
import type { Pool } from '../../db/pool.ts';
import {
  bindColumns,
  compileFilter,
  FILTERABLE_ATTRIBUTES,
  FilterSyntaxError,
  type CompiledFilter,
  type FilterAttribute,
  type FilterableAttributeName,
} from '../apis/market-data/filter-expression.ts';
import {
  eventsWithWords,
  groupedPostings,
  lexeme,
  likePrefix,
  MANY_WORDS,
  POSTINGS_PER_EVENT_PROBED,
  termBranches,
  ONE_WORD_ORDER,
  POSTING_FILTER_ATTRIBUTES,
  postingsOfTerms,
  oneWordShape,
  rankedMatches,
  rankingSource,
  statementParams,
  termQuery,
  topRowsOfOneWord,
  type OneWordShape,
  type RankingPlan,
  type Bind,
  type RankingSource,
  type WordTerms,
} from './search-ranking.ts';
import type { NearWord, SearchVocabulary } from './search-vocabulary.ts';

export const SORT_BY = [
  'recommended',
  'event_date',
  'event_date.desc',
  'event_name',
  'event_name.desc',
  'average_ticket_price_sold',
  'average_ticket_price_sold.desc',
  'tickets_sold',
  'tickets_sold.desc',
  'tickets_sold_24h',
  'tickets_sold_24h.desc',
  'available_tickets',
  'available_tickets.desc',
  'capacity',
  'capacity.desc',
] as const;
export type SortBy = (typeof SORT_BY)[number];

export interface SearchParams {
  query: string;
  /** 1-based. */
  page: number;
  hitsPerPage: number;
  sortBy: SortBy;
  filterExpression: string;
}

/** Spec 2.4. Fields the catalog has no value for are null. */
export interface SearchHit {
  objectID: string;
  event_id: number;
  event_name: string;
  event_date: number | null;
  category_name: string | null;
  artist_id: number | null;
  artist_name: string | null;
  venue_id: number | null;
  venue_name: string | null;
  venue_city: string | null;
  venue_country: string | null;
  venue_country_code: string | null;
  tickets_sold: number;
  tickets_sold_24h: number;
  available_tickets: number;
  capacity: number | null;
  average_ticket_price_sold: number | null;
}

export interface SearchResult {
  hits: SearchHit[];
  page: number;
  hitsPerPage: number;
  nbHits: number;
  nbPages: number;
  exhaustiveNbHits: boolean;
  processingTimeMS: number;
}

/** Pages a client may ask for (spec section 8); nbPages never counts past it. */
export const MAX_PAGE = 1000;
/** Hits counted exactly, where counting is not already part of the ranking (see above). */
export const COUNT_CAP = 1_000;
/** Words that get typo alternatives; later ones match exactly (or as the typed prefix). */
export const MAX_FUZZY_WORDS = 10;

/** The filterable attributes on event_search, whose columns carry the hit's names. */
const FILTER_COLUMNS = bindColumns(
  Object.fromEntries(Object.keys(FILTERABLE_ATTRIBUTES).map((n) => [n, `s.${n}`])) as Record<FilterableAttributeName, string>,
);

/** A filterExpression as SQL over event_search `s` (parameters from $1); throws FilterSyntaxError. */
export function compileSearchFilter(expression: string): CompiledFilter {
  return compileFilter(expression, FILTER_COLUMNS, 1);
}

// Each must match an index of migration 005 (040 for the covering ones) expression for
// expression, so a page in this order is read straight from the index.
const POPULAR = 's.tickets_sold_24h DESC, s.tickets_sold DESC, s.event_id ASC';
const ORDER_BY: Record<SortBy, string> = {
  recommended: POPULAR,
  event_date: 's.event_date ASC NULLS LAST, s.event_id ASC',
  'event_date.desc': 's.event_date DESC NULLS LAST, s.event_id DESC',
  event_name: '(lower(s.event_name) COLLATE "C") ASC, s.event_id ASC',
  'event_name.desc': '(lower(s.event_name) COLLATE "C") DESC, s.event_id DESC',
  average_ticket_price_sold: 's.average_ticket_price_sold ASC NULLS LAST, s.event_id ASC',
  'average_ticket_price_sold.desc': 's.average_ticket_price_sold DESC NULLS LAST, s.event_id DESC',
  tickets_sold: 's.tickets_sold ASC, s.event_id ASC',
  'tickets_sold.desc': 's.tickets_sold DESC, s.event_id DESC',
  tickets_sold_24h: 's.tickets_sold_24h ASC, s.event_id ASC',
  'tickets_sold_24h.desc': 's.tickets_sold_24h DESC, s.event_id DESC',
  available_tickets: 's.available_tickets ASC, s.event_id ASC',
  'available_tickets.desc': 's.available_tickets DESC, s.event_id DESC',
  capacity: 's.capacity ASC NULLS LAST, s.event_id ASC',
  'capacity.desc': 's.capacity DESC NULLS LAST, s.event_id DESC',
};
const relevance = (t: string) =>
  `${t}.typos ASC, ${t}.in_name DESC, ${t}.exact DESC, ${t}.tickets_sold_24h DESC, ${t}.tickets_sold DESC, ${t}.event_id ASC`;

const HIT_JSON = `json_build_object(
  'objectID', s.event_id::text, 'event_id', s.event_id, 'event_name', s.event_name, 'event_date', s.event_date,
  'category_name', s.category_name, 'artist_id', s.artist_id, 'artist_name', s.artist_name, 'venue_id', s.venue_id,
  'venue_name', s.venue_name, 'venue_city', s.venue_city, 'venue_country', s.venue_country,
  'venue_country_code', s.venue_country_code, 'tickets_sold', s.tickets_sold, 'tickets_sold_24h', s.tickets_sold_24h,
  'available_tickets', s.available_tickets, 'capacity', s.capacity, 'average_ticket_price_sold', s.average_ticket_price_sold)`;

/**
 * Runs one search. Throws FilterSyntaxError (before any query) for a bad filterExpression;
 * database failures propagate as thrown by pg. `vocabulary` is the gateway's
 * (Services.searchVocabulary), over the same database as `pool`: it caches the word list that
 * typo tolerance matches against, so each search does not load it again.
 */
export async function searchEvents(
  pool: Pool,
  params: SearchParams,
  vocabulary: SearchVocabulary,
  /** COUNT_CAP, unless a test shows what happens past a smaller one. */
  countCap = COUNT_CAP,
  /** Where to rank from, whatever rankingSource would choose ('top': for one word as typed, else the postings): for tests holding all to one answer. */
  rankFrom?: RankingSource,
): Promise<SearchResult> {
  const started = performance.now();
  const filter = compileSearchFilter(params.filterExpression);
  const typing = !/\s$/u.test(params.query);
  const { words, lastExpands } = await queryWords(pool, params.query, typing);
  const terms: WordTerms[] = words.map((word, i) =>
    typing && i === words.length - 1 ? { word, prefix: true, near: [], ...(lastExpands ? { expands: lastExpands } : {}) } : { word, prefix: false, near: [] },
  );
  // The vocabulary also knows the common words several-word searches need; its first load is
  // started here, not waited for (until it is done, none counts as known).
  if (terms.length > 1 && vocabulary.commonWords() === null) vocabulary.ready().catch(() => {});
  let found = await runSearch(pool, params, filter, terms, countCap, rankFrom, vocabulary);
  // Typos only when the words as typed match nothing: a word that exists is not also read as
  // every word one letter away from it (and broad short words stay cheap). Words that match
  // events the filter then excludes do match: no typo pass (an EXISTS decides, only then).
  if (found.nbHits === 0 && terms.length && (filter.sql === 'TRUE' || !(await wordsMatchAnyEvent(pool, terms)))) {
    await vocabulary.ready();
    const fuzzy = terms.map((t, i) => ({ ...t, near: i < MAX_FUZZY_WORDS ? vocabulary.near(t.word, t.prefix) : [] }));
    if (fuzzy.some((t) => t.near.length)) found = await runSearch(pool, params, filter, fuzzy, countCap, rankFrom, vocabulary);
  }
  return {
    hits: found.hits,
    page: params.page,
    hitsPerPage: params.hitsPerPage,
    nbHits: found.nbHits,
    nbPages: Math.min(MAX_PAGE, Math.ceil(found.nbHits / params.hitsPerPage)),
    exhaustiveNbHits: found.exhaustive,
    processingTimeMS: Math.round(performance.now() - started),
  };
}

/** Whether the words as typed (no filter, no typos) match at least one event. */
async function wordsMatchAnyEvent(pool: Pool, terms: readonly WordTerms[]): Promise<boolean> {
  const { rows } = await pool.query<{ found: boolean }>(
    'SELECT EXISTS (SELECT 1 FROM event_search s WHERE s.search_vector @@ $1::tsquery) AS found',
    [terms.map(termQuery).join(' & ')],
  );
  return rows[0]!.found;
}

async function runSearch(
  pool: Pool,
  params: SearchParams,
  filter: CompiledFilter,
  terms: readonly WordTerms[],
  countCap: number,
  rankFrom: RankingSource | undefined,
  vocabulary: SearchVocabulary,
): Promise<{ nbHits: number; exhaustive: boolean; hits: SearchHit[] }> {
  if (terms.length && params.sortBy === 'recommended') {
    // One mistyped word (this is the typo pass: as typed it matched nothing), no filter: the top
    // of its closest alternatives, when they match more than the cap.
    if (terms.length === 1 && terms[0]!.near.length && filter.sql === 'TRUE' && rankFrom === undefined) {
      const walked = await walkNearTop(pool, params, terms[0]!, countCap);
      if (walked) return { nbHits: countCap, exhaustive: false, hits: walked };
    }
    // Words and a filter on the attributes the postings carry: their postings that pass it,
    // read index-only (one typed word alone under its prefix: the first of them, in order),
    // unless the words have too many postings (a common word: the rows, which stop at the cap's
    // worth of matches, cost less than reading them all).
    const onPostings = filter.sql === 'TRUE' ? null : compilePostingsFilter(params.filterExpression);
    if (onPostings && rankFrom === undefined && terms.length === 1) {
      const top = await filteredTopOfOneWord(pool, params, terms[0]!, onPostings, countCap);
      if (top) return { nbHits: Math.min(top.matches, countCap), exhaustive: top.matches <= countCap, hits: top.hits };
    }
    if (onPostings && (rankFrom === undefined || rankFrom === 'postings')) {
      const found = await rankedFromFilteredPostings(pool, params, terms, onPostings, rankFrom === undefined ? FILTERED_POSTINGS_PER_CAP * (countCap + 1) : undefined);
      if (found) return { nbHits: Math.min(found.matches, countCap), exhaustive: found.matches <= countCap, hits: found.hits };
    }
    const plan: RankingPlan =
      rankFrom === undefined
        ? await rankingSource(pool, terms, filter.sql !== 'TRUE', countCap, vocabulary.commonWords())
        : rankFrom === 'top'
          ? terms.length === 1 && terms[0]!.near.length === 0 && filter.sql === 'TRUE'
            ? { source: 'top', shape: await oneWordShape(pool, terms[0]!, countCap) }
            : { source: 'postings' }
          : { source: rankFrom };
    if (plan.source === 'top') return rankedTop(pool, params, terms, plan.shape, countCap);
    const upTo = plan.source === 'rows' ? plan.upTo : undefined;
    // Counted off the postings first: past the cap, no row is read before the walk; within it,
    // every match's row is read anyway.
    const counted = plan.source === 'rows' && plan.countFirst ? await eventsWithWords(pool, plan.countFirst, countCap + 1) : null;
    if (counted !== null && counted > countCap) return pastTheCap(pool, params, filter, terms, countCap);
    const found = await rankedPage(pool, params, filter, terms, plan.source, counted === null ? upTo : undefined);
    if (upTo !== undefined && counted === null && found.matches > upTo) return pastTheCap(pool, params, filter, terms, countCap);
    const reached = found.matches > countCap;
    return { nbHits: reached ? countCap : found.matches, exhaustive: !reached, hits: found.hits };
  }
  const page = indexOrderedPage(params, filter, terms, countCap);
  const sql = `SELECT (${page.countSql})::int AS nb_hits,
           (SELECT coalesce(json_agg(${HIT_JSON} ORDER BY ${ORDER_BY[params.sortBy]}), '[]'::json)
            FROM (${page.idsSql}) page JOIN event_search s ON s.event_id = page.event_id) AS hits`;
  const { rows } = await pool.query<{ nb_hits: number; hits: SearchHit[] }>(sql, page.values);
  const counted = rows[0]!.nb_hits;
  const reached = page.capped && counted > countCap;
  return { nbHits: reached ? countCap : counted, exhaustive: !reached, hits: rows[0]!.hits };
}

/**
 * Words as typed matching more than the cap (known before it is called): the top of the last
 * word's ranking, walked until no event further down can beat the page; else the postings rank
 * every match (the rows, filtered).
 */
async function pastTheCap(
  pool: Pool,
  params: SearchParams,
  filter: CompiledFilter,
  terms: readonly WordTerms[],
  countCap: number,
): Promise<{ nbHits: number; exhaustive: boolean; hits: SearchHit[] }> {
  const walked = await walkFromLastWord(pool, params, terms, filter);
  if (walked) return { nbHits: countCap, exhaustive: false, hits: walked };
  const all = await rankedPage(pool, params, filter, terms, filter.sql === 'TRUE' ? 'postings' : 'rows');
  return { nbHits: Math.min(all.matches, countCap), exhaustive: all.matches <= countCap, hits: all.hits };
}

/**
 * A page in an index's order (no words, or a sortBy other than recommended), as two statements
 * over one parameter list: the count (up to one past the cap, which tells a count that reached
 * it) and the page's event ids in order. The ids, not the rows: they come index-only from a
 * covering index (migration 040) where whole rows would cost a heap visit per row examined;
 * the caller reads the page's rows after. Exported for the test that holds the covering
 * indexes to that.
 */
export function indexOrderedPage(
  params: SearchParams,
  filter: CompiledFilter,
  terms: readonly WordTerms[],
  countCap: number,
): { countSql: string; idsSql: string; values: unknown[]; capped: boolean } {
  const { values, bind } = statementParams(filter.params);
  const whereSql = terms.length ? `s.search_vector @@ ${bind(terms.map(termQuery).join(' & '), 'tsquery')} AND (${filter.sql})` : `(${filter.sql})`;
  // No words and no filter: every event matches, and a trigger keeps their number.
  const capped = terms.length > 0 || filter.sql !== 'TRUE';
  const countSql = capped ? `SELECT count(*) FROM (SELECT 1 FROM event_search s WHERE ${whereSql} LIMIT ${bind(countCap + 1, 'int')}) c` : 'SELECT n FROM event_search_count';
  const idsSql = `SELECT s.event_id FROM event_search s WHERE ${whereSql}
    ORDER BY ${ORDER_BY[params.sortBy]} LIMIT ${bind(params.hitsPerPage, 'int')} OFFSET ${bind((params.page - 1) * params.hitsPerPage, 'int')}`;
  return { countSql, idsSql, values, capped };
}

/** Select-list items over `m` (ranked matches, rankedMatches' columns): their number as `matches`, and the page's hits in relevance order as `hits`. */
function countAndPageOfRanked(params: SearchParams, bind: Bind): string {
  return `(SELECT count(*) FROM m)::int AS matches,
           (SELECT coalesce(json_agg(${HIT_JSON} ORDER BY ${relevance('p')}), '[]'::json)
            FROM (SELECT * FROM m ORDER BY ${relevance('m')} LIMIT ${bind(params.hitsPerPage, 'int')} OFFSET ${bind((params.page - 1) * params.hitsPerPage, 'int')}) p
            JOIN event_search s ON s.event_id = p.event_id) AS hits`;
}

/**
 * Postings a filtered search reads at most, per match the count stops at, before it ranks from
 * the rows instead: a posting read index-only costs ~0.15 µs, a row ~3-7 µs, and the rows are
 * read until the cap's worth of matches pass the filter (at least that many rows).
 */
const FILTERED_POSTINGS_PER_CAP = 32;

/** The attributes the postings carry (migration 041), as columns of a posting `p`. */
const POSTING_FILTER_COLUMNS: Record<string, FilterAttribute> = Object.fromEntries(
  POSTING_FILTER_ATTRIBUTES.map((a) => [a, { type: FILTERABLE_ATTRIBUTES[a], column: `p.${a}` }]),
);

/** The filterExpression over a posting's columns; null when it names an attribute the postings do not carry. Exported for a test. */
export function compilePostingsFilter(expression: string): CompiledFilter | null {
  try {
    return compileFilter(expression, POSTING_FILTER_COLUMNS, 1);
  } catch (err) {
    // The expression was compiled against every attribute already: what fails here is an
    // attribute the postings lack.
    if (err instanceof FilterSyntaxError) return null;
    throw err;
  }
}

/**
 * Words ranked from their postings that pass a filter on the postings' own columns (index-only
 * off search_postings_rank), the count of those events, and the page. With `readAtMost`, null
 * when the words have more postings than that (the filter is applied after that many are read,
 * so the cost is bounded whatever it lets through).
 */
async function rankedFromFilteredPostings(
  pool: Pool,
  params: SearchParams,
  terms: readonly WordTerms[],
  filter: CompiledFilter,
  readAtMost: number | undefined,
): Promise<{ matches: number; hits: SearchHit[] } | null> {
  const { values, bind } = statementParams(filter.params);
  const read = postingsOfTerms(terms, bind, true);
  const bounded = readAtMost === undefined ? read : `SELECT * FROM (${read}) u LIMIT ${bind(readAtMost + 1, 'bigint')}`;
  const sql = `
    WITH h AS MATERIALIZED (${bounded}),
         m AS MATERIALIZED (${groupedPostings(terms, `(SELECT * FROM h p WHERE ${filter.sql})`)})
    SELECT (SELECT count(*) FROM h)::int AS read, ${countAndPageOfRanked(params, bind)}`;
  const { rows } = await pool.query<{ read: number; matches: number; hits: SearchHit[] }>(sql, values);
  const r = rows[0]!;
  return readAtMost !== undefined && r.read > readAtMost ? null : r;
}

/**
 * One typed word that a single catalog word starts with (WordTerms.expands), and a filter on
 * the attributes the postings carry: that word's postings read in search_postings_rank's order,
 * index-only, those passing the filter kept, until one past the cap pass. Its order is the
 * ranking's: every event has one posting of the word, whole or not alike for all ("exact" is
 * the same for every event), and its prefix_in_name is the prefix's "in name" (a name word
 * starting with the prefix can only be that word). A common word with a filter most of its
 * events pass ("festival" in the Festival category: 19,321 postings) was grouped in full,
 * 28 ms at a million events; the first thousand passing are enough. The read stops where the
 * rows' would (the cap's worth passing), a posting for a row: no bound on it is needed. Null
 * when the word is not alone under the prefix, or when the page lies past the cap. Exported
 * for its test.
 */
export async function filteredTopOfOneWord(
  pool: Pool,
  params: SearchParams,
  term: WordTerms,
  filter: CompiledFilter,
  countCap: number,
): Promise<{ matches: number; hits: SearchHit[] } | null> {
  const only = term.prefix && term.near.length === 0 && term.expands?.length === 1 ? term.expands[0]! : undefined;
  const offset = (params.page - 1) * params.hitsPerPage;
  if (only === undefined || offset + params.hitsPerPage > countCap + 1) return null;
  const { values, bind } = statementParams(filter.params);
  const order = 'p.prefix_in_name DESC, p.tickets_sold_24h DESC, p.tickets_sold DESC, p.event_id';
  const { rows } = await pool.query<{ matches: number; hits: SearchHit[] }>(
    `WITH f AS MATERIALIZED (
       SELECT p.event_id, row_number() OVER (ORDER BY ${order}) AS n FROM (
         SELECT p.* FROM search_postings p WHERE p.word = ${bind(only, 'text')} AND (${filter.sql})
         ORDER BY ${order} LIMIT ${bind(countCap + 1, 'int')}) p)
     SELECT (SELECT count(*) FROM f)::int AS matches,
            (SELECT coalesce(json_agg(${HIT_JSON} ORDER BY page.n), '[]'::json)
             FROM (SELECT * FROM f ORDER BY n LIMIT ${bind(params.hitsPerPage, 'int')} OFFSET ${bind(offset, 'int')}) page
             JOIN event_search s ON s.event_id = page.event_id) AS hits`,
    values,
  );
  return rows[0]!;
}

/**
 * Every match ranked (rankedMatches), its count, and the page. With `upTo`, the rows' matches
 * are read up to one past it: past it, `matches` says so and the page is not to be used.
 */
async function rankedPage(
  pool: Pool,
  params: SearchParams,
  filter: CompiledFilter,
  terms: readonly WordTerms[],
  source: 'postings' | 'rows',
  upTo?: number,
): Promise<{ matches: number; hits: SearchHit[] }> {
  const { values, bind } = statementParams(filter.params);
  const matched = rankedMatches(source, terms, filter.sql, bind);
  // Read up to one past `upTo`, but planned as if every match were read (OFFSET 0 keeps the
  // LIMIT out of the matches' plan): told only a few rows are wanted, the planner takes the
  // matches to be spread evenly and scans the table for the first ones, where the words and a
  // filter are seldom together (a festival in the US: 152,000 rows, 47 ms, against 13 through
  // the GIN index).
  const limited = upTo === undefined ? matched : `SELECT * FROM (${matched} OFFSET 0) r LIMIT ${bind(upTo + 1, 'int')}`;
  const sql = `
    WITH m AS MATERIALIZED (${limited})
    SELECT ${countAndPageOfRanked(params, bind)}`;
  const { rows } = await pool.query<{ matches: number; hits: SearchHit[] }>(sql, values);
  return rows[0]!;
}

/**
 * One word matching more events than the cap: the page from the top of its ranking
 * (topRowsOfOneWord), each event at its first posting, and nbHits the cap. Postings are read a
 * few past the events the page needs (an event has a posting per word of it under the prefix);
 * when those held too few events and more remain, four times as many.
 */
async function rankedTop(
  pool: Pool,
  params: SearchParams,
  terms: readonly WordTerms[],
  shape: OneWordShape,
  countCap: number,
): Promise<{ nbHits: number; exhaustive: boolean; hits: SearchHit[] }> {
  const term = terms[0]!;
  if (terms.length !== 1 || term.near.length) throw new Error('rankedTop ranks one word as typed');
  const needed = params.page * params.hitsPerPage;
  for (let n = needed + 32; ; n *= 4) {
    const { values, bind } = statementParams();
    const sql = `
      WITH r AS (SELECT u.*, row_number() OVER (ORDER BY ${ONE_WORD_ORDER}) AS rn FROM (${topRowsOfOneWord(term, shape, bind(n, 'int'), bind)}) u),
           e AS (SELECT event_id, min(rn) AS rn FROM r GROUP BY event_id ORDER BY min(rn) LIMIT ${bind(needed, 'int')}),
           page AS (SELECT * FROM e ORDER BY rn LIMIT ${bind(params.hitsPerPage, 'int')} OFFSET ${bind(needed - params.hitsPerPage, 'int')})
      SELECT (SELECT count(*) FROM r)::int AS postings, (SELECT count(*) FROM e)::int AS events,
             (SELECT coalesce(json_agg(${HIT_JSON} ORDER BY page.rn), '[]'::json)
              FROM page JOIN event_search s ON s.event_id = page.event_id) AS hits`;
    const { rows } = await pool.query<{ postings: number; events: number; hits: SearchHit[] }>(sql, values);
    const r = rows[0]!;
    if (r.events >= needed || r.postings < n) {
      // Chosen only past the cap (rankingSource); a test may read a smaller word's top too.
      if (shape.beyondCap) return { nbHits: countCap, exhaustive: false, hits: r.hits };
      if (shape.allRead) return { nbHits: shape.events, exhaustive: true, hits: r.hits };
      throw new Error('rankedTop: a word within the cap, with more postings than the probe read');
    }
  }
}

/**
 * What topRowsOfOneWord needs of a walk's last word: how many catalog words a typed prefix
 * stands for (known from the query's words when they were few). A walk is past the cap, so the
 * word's ranges are read, never all its postings at once: its postings are not probed (that
 * read 4,004 of them, 1.3 ms, for an artist's last word).
 */
async function walkShape(pool: Pool, t: WordTerms): Promise<OneWordShape> {
  const past = { beyondCap: true, allRead: false, events: 0 };
  if (!t.prefix) return { ...past, words: 1 };
  if (t.expands) return { ...past, words: t.expands.length };
  const { rows } = await pool.query<{ words: number }>('SELECT count(*)::int AS words FROM (SELECT 1 FROM search_dictionary WHERE word LIKE $1::text LIMIT $2) d', [
    likePrefix(t.word),
    MANY_WORDS + 1,
  ]);
  return { ...past, words: rows[0]!.words };
}

/** Postings of the last word a walk reads at most before the postings rank every match instead. */
const MAX_WALK = 8_192;

/**
 * Words as typed (several, or one with a filter) matching more than the cap: the last word's
 * postings in its own ranking order (topRowsOfOneWord), each new event's row read for every
 * word's terms and the filter, until the page's events are known. An event not reached yet has its best posting of the last
 * word after the last one read, so its terms are at most that posting's plus one in name and one
 * whole per other word, and its popularity at most that posting's: once the page's last event
 * beats that bound, nothing further down can enter the page. When the walk reaches MAX_WALK
 * postings first (the words seldom in names, as a city's), null.
 */
async function walkFromLastWord(
  pool: Pool,
  params: SearchParams,
  terms: readonly WordTerms[],
  filter: CompiledFilter,
): Promise<SearchHit[] | null> {
  const last = terms[terms.length - 1]!;
  if (terms.some((t) => t.near.length)) return null;
  const shape = await walkShape(pool, last);
  const needed = params.page * params.hitsPerPage;
  const others = terms.length - 1;
  type Rank = { in_name: number; exact: number; tickets_sold_24h: number; tickets_sold: number; event_id: number };
  type Key = Rank & { hit: SearchHit };
  // Relevance order (typos are 0 for every word as typed): negative when a ranks first.
  const order = (a: Rank, b: Rank) =>
    b.in_name - a.in_name || b.exact - a.exact || b.tickets_sold_24h - a.tickets_sold_24h || b.tickets_sold - a.tickets_sold || a.event_id - b.event_id;
  // Hundreds at first: a team's name is one of a few dozen with its last word.
  for (let n = Math.max(needed + 32, 512); ; ) {
    const { values, bind } = statementParams(filter.params);
    const rowsSql = topRowsOfOneWord(last, shape, bind(Math.min(n, MAX_WALK), 'int'), bind);
    const all = bind(terms.map(termQuery).join(' & '), 'tsquery');
    const inName = terms.map((t) => `(s.name_vector @@ ${bind(termQuery(t), 'tsquery')})::int`).join(' + ');
    const whole = terms.map((t) => `(s.search_vector @@ ${bind(lexeme(t.word, false), 'tsquery')})::int`).join(' + ');
    // A walked event without a posting of every other word cannot match: asked of the postings'
    // primary key, index-only, before any row is read (an artist's last word walks hundreds of
    // events that seldom have the others: "Kingston Lions", 38 of 512, each row a page of its
    // own). Whether the rest have every word (and pass the filter) is a column of `j`, not the
    // join's WHERE: there the planner takes it for an index condition and reads every match of
    // the words through the GIN index (18,570 rows for "San Francisco": 29 ms) to join the few
    // walked. Only the best `needed` of them come back, with their hits: a city's walk finds
    // all 512, and building every one's hit cost 4 ms.
    const haveOthers = terms
      .slice(0, -1)
      .map((t) => `EXISTS (SELECT 1 FROM search_postings p WHERE p.word = ${bind(t.word, 'text')} AND p.event_id = e.event_id)`);
    // `order`, in SQL.
    const relevance = (t: string) => `${t}in_name DESC, ${t}exact DESC, ${t}tickets_sold_24h DESC, ${t}tickets_sold DESC, ${t}event_id`;
    const { rows } = await pool.query<{ matched: number; events: Key[] | null; postings: number; bound: (Rank & { pin: boolean; exact_posting: boolean }) | null }>(
      `WITH r AS (SELECT u.*, row_number() OVER (ORDER BY ${ONE_WORD_ORDER}) AS rn FROM (${rowsSql}) u),
            e AS (SELECT event_id, min(rn) AS rn FROM r GROUP BY event_id),
            j AS MATERIALIZED (
              SELECT s.event_id, s.search_vector @@ ${all} AND (${filter.sql}) AS matches, ${inName} AS in_name, ${whole} AS exact,
                     s.tickets_sold_24h, s.tickets_sold
              FROM e JOIN event_search s ON s.event_id = e.event_id
              ${haveOthers.length ? `WHERE ${haveOthers.join(' AND ')}` : ''}),
            top AS (SELECT * FROM j WHERE matches ORDER BY ${relevance('')} LIMIT ${bind(needed, 'int')})
       SELECT (SELECT count(*) FROM j WHERE matches)::int AS matched,
              (SELECT json_agg(json_build_object('event_id', t.event_id, 'in_name', t.in_name, 'exact', t.exact,
                 'tickets_sold_24h', t.tickets_sold_24h, 'tickets_sold', t.tickets_sold, 'hit', ${HIT_JSON}) ORDER BY ${relevance('t.')})
               FROM top t JOIN event_search s ON s.event_id = t.event_id) AS events,
              (SELECT count(*) FROM r)::int AS postings,
              (SELECT json_build_object('pin', pin, 'exact_posting', exact, 'tickets_sold_24h', tickets_sold_24h,
                 'tickets_sold', tickets_sold, 'event_id', event_id) FROM r ORDER BY rn DESC LIMIT 1) AS bound`,
      values,
    );
    const r = rows[0]!;
    const found = (r.events ?? []).map((e) => ({ ...e, event_id: Number(e.event_id) })).sort(order);
    const exhausted = r.postings < Math.min(n, MAX_WALK);
    const b = r.bound;
    const decided =
      exhausted ||
      (found.length >= needed &&
        b !== null &&
        order(found[needed - 1]!, {
          in_name: Number(b.pin) + others,
          exact: Number(b.exact_posting) + others,
          tickets_sold_24h: b.tickets_sold_24h,
          tickets_sold: b.tickets_sold,
          event_id: Number(b.event_id),
        }) < 0);
    // The page's hits came with the best rows, read anyway.
    if (decided) return found.slice(needed - params.hitsPerPage, needed).map((e) => e.hit);
    if (n >= MAX_WALK) return null;
    // Enough postings for the page at the rate they gave events that have every word and pass
    // the filter, and a quarter more; at least twice as many, at most four times.
    const wanted = r.matched ? Math.ceil(((needed * r.postings) / r.matched) * 1.25) : n * 4;
    n = Math.min(n * 4, Math.max(n * 2, wanted));
  }
}

/** Postings of a mistyped word's closest alternatives a walk starts with (it grows by four at most). */
const NEAR_WALK_FIRST = 256;

/**
 * One word that matched no event as typed, read through its typo alternatives, when they match
 * more events than the cap: the page from the top of its closest alternatives, nbHits the cap.
 * Ranking every match (the postings of every alternative, grouped) cost up to 25 ms at a million
 * events for a word as common as "harbour"; the page needs the first few dozen.
 *
 * Every event having an alternative of the fewest typos ranks before every other (typos come
 * first), and the word as typed is no event's whole word ("exact" is 0 for all: it matched
 * nothing). So while those events fill the page, it is the first of them by "in name", then
 * popularity. Their postings are read in popularity order (each of those words' two ranges of
 * search_postings_rank, by prefix_in_name, merged); an event's "in name" comes from a posting
 * in its name, else from its row (an alternative of more typos may be in its name). An event
 * not reached yet has popularity below the last posting read and at best "in name": once the
 * page's last event is in name, nothing further down can enter the page. Null, for the
 * postings to rank every match, when the alternatives match at most the cap, when the closest
 * are more than MANY_WORDS catalog words, or when they hold too few events in name within
 * MAX_WALK postings. Exported for its test.
 */
export async function walkNearTop(
  pool: Pool,
  params: SearchParams,
  term: WordTerms,
  countCap: number,
  /** Postings read first (a test makes it small, to see the walk decide before the end). */
  first?: number,
): Promise<SearchHit[] | null> {
  if (!term.near.length) return null;
  const fewest = Math.min(...term.near.map((n) => n.typos));
  const closest = term.near.filter((n) => n.typos === fewest);
  const closestWords = await beyondCapClosestWords(pool, term, closest, countCap);
  if (!closestWords) return null;
  const needed = params.page * params.hitsPerPage;
  const othersExist = term.near.some((n) => n.typos > fewest);
  type Key = { in_name: number; tickets_sold_24h: number; tickets_sold: number; event_id: number };
  const order = (a: Key, b: Key) => b.in_name - a.in_name || b.tickets_sold_24h - a.tickets_sold_24h || b.tickets_sold - a.tickets_sold || a.event_id - b.event_id;
  for (let n = first ?? Math.max(needed + 32, NEAR_WALK_FIRST); ; n = Math.min(n * 4, MAX_WALK)) {
    const { values, bind } = statementParams();
    const byPopularity = (t: string) => `${t}.tickets_sold_24h DESC, ${t}.tickets_sold DESC, ${t}.event_id`;
    const { rows } = await pool.query<{ events: Key[] | null; postings: number }>(
      `WITH r AS MATERIALIZED (
         SELECT x.* FROM unnest(${bind(closestWords, 'text[]')}) d(word)
         CROSS JOIN (VALUES (true), (false)) b(pin)
         CROSS JOIN LATERAL (
           SELECT p.event_id, p.in_name, p.tickets_sold_24h, p.tickets_sold FROM search_postings p
           WHERE p.word = d.word AND p.prefix_in_name = b.pin ORDER BY ${byPopularity('p')} LIMIT ${bind(n, 'int')}) x
         ORDER BY ${byPopularity('x')} LIMIT ${bind(n, 'int')}),
       e AS (SELECT event_id, bool_or(in_name) AS in_name, max(tickets_sold_24h) AS tickets_sold_24h, max(tickets_sold) AS tickets_sold FROM r GROUP BY event_id)
       SELECT (SELECT json_agg(json_build_object('event_id', e.event_id, 'tickets_sold_24h', e.tickets_sold_24h, 'tickets_sold', e.tickets_sold,
                 'in_name', CASE WHEN e.in_name THEN 1 ELSE (SELECT (s.name_vector @@ ${bind(termQuery(term), 'tsquery')})::int FROM event_search s WHERE s.event_id = e.event_id) END))
               FROM e) AS events,
              (SELECT count(*) FROM r)::int AS postings`,
      values,
    );
    const r = rows[0]!;
    const found = (r.events ?? []).map((e) => ({ ...e, event_id: Number(e.event_id) })).sort(order);
    const exhausted = r.postings < n;
    // Every event read comes before every one not read in popularity: the page's last event
    // beats them all when it is in name. Read to the end, the closest alternatives' events are
    // all known, and they are the page while they are enough for it (or no other event exists).
    const decided = found.length >= needed ? found[needed - 1]!.in_name === 1 || exhausted : exhausted && !othersExist;
    if (decided) return hitsOf(pool, found.slice(needed - params.hitsPerPage, needed).map((e) => e.event_id));
    if (exhausted || n >= MAX_WALK) return null;
  }
}

/**
 * The catalog words of `closest` (a mistyped word's alternatives of the fewest typos, a prefix
 * standing for every word under it) when every alternative of `term` together matches more
 * events than the cap (the distinct events among their first postings, as oneWordShape counts)
 * and those words are MANY_WORDS at most; else null.
 */
async function beyondCapClosestWords(pool: Pool, term: WordTerms, closest: readonly NearWord[], countCap: number): Promise<string[] | null> {
  const { values, bind } = statementParams();
  const probed = termBranches(term, bind, () => 'p.event_id').join(' UNION ALL ');
  const words = [
    `SELECT unnest(${bind(closest.filter((n) => !n.prefix).map((n) => n.text), 'text[]')}) AS word`,
    ...closest.filter((n) => n.prefix).map((n) => `SELECT word FROM search_dictionary WHERE word LIKE ${bind(likePrefix(n.text), 'text')}`),
  ].join(' UNION ');
  const { rows } = await pool.query<{ events: number; words: string[] | null }>(
    `SELECT (SELECT count(DISTINCT event_id) FROM (SELECT * FROM (${probed}) u LIMIT ${bind(POSTINGS_PER_EVENT_PROBED * (countCap + 1), 'int')}) x)::int AS events,
            (SELECT array_agg(word) FROM (SELECT word FROM (${words}) w LIMIT ${bind(MANY_WORDS + 1, 'int')}) w) AS words`,
    values,
  );
  const probe = rows[0]!;
  return probe.events > countCap && probe.words && probe.words.length <= MANY_WORDS ? probe.words : null;
}

/** The hits of these events, in this order. */
async function hitsOf(pool: Pool, ids: readonly number[]): Promise<SearchHit[]> {
  const { rows } = await pool.query<{ hits: SearchHit[] }>(
    `SELECT coalesce(json_agg(${HIT_JSON} ORDER BY array_position($1::bigint[], s.event_id)), '[]'::json) AS hits
     FROM event_search s WHERE s.event_id = ANY ($1::bigint[])`,
    [ids],
  );
  return rows[0]!.hits;
}

/** Catalog words a typed prefix is matched as, at most (more: matched as a prefix). */
const MAX_EXPANDED = 8;

/**
 * The query's words, cut and case-folded by the database exactly as the catalog's were; and
 * when the last is a typed prefix that at most MAX_EXPANDED catalog words start with, those
 * words (WordTerms.expands says why).
 */
async function queryWords(pool: Pool, query: string, typing: boolean): Promise<{ words: string[]; lastExpands?: string[] }> {
  if (query.trim() === '') return { words: [] };
  // All of them: a word too long to be stored can match nothing, and must not vanish from the
  // query (which would then match more, not less).
  const { rows } = await pool.query<{ words: string[]; under: string[] | null }>(
    `SELECT w AS words,
            CASE WHEN $2::boolean AND cardinality(w) > 0 THEN
              (SELECT array_agg(word ORDER BY word) FROM (
                 SELECT word FROM search_dictionary
                 WHERE word LIKE replace(replace(replace(w[cardinality(w)], '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%'
                 ORDER BY word LIMIT $3::int) d)
            END AS under
     FROM search_words(lower($1::text)) AS w`,
    [query, typing, MAX_EXPANDED + 1],
  );
  const { words, under } = rows[0]!;
  return under && under.length <= MAX_EXPANDED ? { words, lastExpands: under } : { words };
}
