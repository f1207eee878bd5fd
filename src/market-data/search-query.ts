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
// Counting (issue 40): where the page is read in an index's order (no words, or a sortBy other
// than `recommended`), the hits are counted exactly up to COUNT_CAP only, as Algolia-style APIs
// do: past it `nbHits` is COUNT_CAP, a lower bound, and `exhaustiveNbHits` false. Counting is
// what cost those searches their time at a million events (one heap visit per matching row:
// 34,379 rows, 287 ms), not the page. Ranking by relevance reads every hit anyway, so that
// count stays exact; so does the whole catalog's (a trigger keeps it).
import type { Pool } from '../../db/pool.ts';
import {
  bindColumns,
  compileFilter,
  FILTERABLE_ATTRIBUTES,
  type CompiledFilter,
  type FilterableAttributeName,
} from '../apis/market-data/filter-expression.ts';
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

// Each must match an index of migration 005 expression for expression, so a page in this order
// is read straight from the index.
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

/** One query word and what may stand for it. */
interface WordTerms {
  word: string;
  /** Matched as a typed prefix (the last word of a query not ending in a space). */
  prefix: boolean;
  near: NearWord[];
}

/** A tsquery operand for one lexeme: quoted, so no character of it is tsquery syntax. */
function lexeme(text: string, prefix: boolean): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "''")}'${prefix ? ':*' : ''}`;
}

function anyOf(operands: readonly string[]): string {
  return operands.length === 1 ? operands[0]! : `(${operands.join(' | ')})`;
}

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
): Promise<SearchResult> {
  const started = performance.now();
  const filter = compileFilter(params.filterExpression, FILTER_COLUMNS, 1);
  const words = await queryWords(pool, params.query);
  const typing = !/\s$/u.test(params.query);
  const terms: WordTerms[] = words.map((word, i) => ({ word, prefix: typing && i === words.length - 1, near: [] }));
  let found = await runSearch(pool, params, filter, terms, countCap);
  // Typos only when the words as typed match nothing: a word that exists is not also read as
  // every word one letter away from it (and broad short words stay cheap). Words that match
  // events the filter then excludes do match: no typo pass (an EXISTS decides, only then).
  if (found.nbHits === 0 && terms.length && (filter.sql === 'TRUE' || !(await wordsMatchAnyEvent(pool, terms)))) {
    await vocabulary.ready();
    const fuzzy = terms.map((t, i) => ({ ...t, near: i < MAX_FUZZY_WORDS ? vocabulary.near(t.word, t.prefix) : [] }));
    if (fuzzy.some((t) => t.near.length)) found = await runSearch(pool, params, filter, fuzzy, countCap);
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

/** A word and its typo alternatives as one tsquery operand. */
function termQuery(t: WordTerms): string {
  return anyOf([lexeme(t.word, t.prefix), ...t.near.map((n) => lexeme(n.text, n.prefix))]);
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
): Promise<{ nbHits: number; exhaustive: boolean; hits: SearchHit[] }> {
  const values: unknown[] = [...filter.params];
  const bind = (v: unknown, type: string) => {
    values.push(v);
    return `$${values.length}::${type}`;
  };
  const where = [`(${filter.sql})`];
  const alternatives = terms.map(termQuery);
  if (terms.length) where.unshift(`s.search_vector @@ ${bind(alternatives.join(' & '), 'tsquery')}`);
  const whereSql = where.join(' AND ');
  const limit = bind(params.hitsPerPage, 'int');
  const offset = bind((params.page - 1) * params.hitsPerPage, 'int');

  let sql: string;
  /** Whether the count stops at the cap (else it is exact, however large). */
  let capped = false;
  if (terms.length && params.sortBy === 'recommended') {
    // Typo count per word: 0 when the word (or its typed prefix) itself matches, else the
    // fewest typos among the alternatives this event has.
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
    sql = `
      WITH m AS MATERIALIZED (
        SELECT s.event_id, s.tickets_sold_24h, s.tickets_sold,
               ${typos.length ? typos.join(' + ') : '0'} AS typos,
               ${inName.join(' + ')} AS in_name,
               ${whole.join(' + ')} AS exact
        FROM event_search s WHERE ${whereSql}
      )
      SELECT (SELECT count(*) FROM m)::int AS nb_hits,
             (SELECT coalesce(json_agg(${HIT_JSON} ORDER BY ${relevance('p')}), '[]'::json)
              FROM (SELECT * FROM m ORDER BY ${relevance('m')} LIMIT ${limit} OFFSET ${offset}) p
              JOIN event_search s ON s.event_id = p.event_id) AS hits`;
  } else {
    // No words and no filter: every event matches, and a trigger keeps their number. Else one
    // more than the cap tells a count that reached it.
    capped = terms.length > 0 || filter.sql !== 'TRUE';
    const count = capped ? `SELECT count(*) FROM (SELECT 1 FROM event_search s WHERE ${whereSql} LIMIT ${bind(countCap + 1, 'int')}) c` : 'SELECT n FROM event_search_count';
    sql = `
      SELECT (${count})::int AS nb_hits,
             (SELECT coalesce(json_agg(${HIT_JSON} ORDER BY ${ORDER_BY[params.sortBy]}), '[]'::json) FROM (
                SELECT * FROM event_search s WHERE ${whereSql}
                ORDER BY ${ORDER_BY[params.sortBy]} LIMIT ${limit} OFFSET ${offset}) s) AS hits`;
  }
  const { rows } = await pool.query<{ nb_hits: number; hits: SearchHit[] }>(sql, values);
  const counted = rows[0]!.nb_hits;
  const reached = capped && counted > countCap;
  return { nbHits: reached ? countCap : counted, exhaustive: !reached, hits: rows[0]!.hits };
}

/** The query's words, cut and case-folded by the database exactly as the catalog's were. */
async function queryWords(pool: Pool, query: string): Promise<string[]> {
  if (query.trim() === '') return [];
  // All of them: a word too long to be stored can match nothing, and must not vanish from the
  // query (which would then match more, not less).
  const { rows } = await pool.query<{ words: string[] }>('SELECT search_words(lower($1::text)) AS words', [query]);
  return rows[0]!.words;
}
