// Which events match a query's words, and the terms `recommended` ranks them by (search-query.ts
// has the order): three ways to the same pages, and the choice between them.
//
// - From the rows: event_search's GIN index finds the events having every word (it intersects
//   the words' lists itself, skipping through a common word's with a rare one's), then each
//   match's row is read for its vectors and popularity: one heap visit per match, ~7 µs at a
//   million events (a city, 20,000 matches: 126-190 ms).
// - From the postings (migration 039): each alternative of each word is one range of
//   search_postings_rank (word first), read index-only, and grouped by event: ~0.75 µs
//   per posting (the same city: 15 ms). But every posting of every word is read: a rare word
//   beside "the" (248,000 postings) reads all of "the"'s. Each posting also carries its event's
//   filtered attributes (migration 041), so a filter on those is applied to the postings as
//   they are read, still index-only (search-query.ts, rankedFromFilteredPostings).
// - One word matching more events than the count's cap (a letter, "the", a city): the top of
//   its ranking read in ranking order off the postings' own B-trees (topRowsOfOneWord), with no
//   grouping: an event's best posting orders it (migration 039 says why), so the first postings
//   in order, each event taken at its first, are the first events. The count stops at the cap.
// So words with a filter on the carried attributes are ranked from their postings that pass it
// (one typed word alone under its prefix: the first of them in the index's order, which is the
// ranking's; search-query.ts, filteredTopOfOneWord), unless they have many (a common word: 32
// postings per match counted, at most); one word as typed from its top when it matches more
// than the cap, else from the postings; several words, or another filter, from the rows when
// they match at most the cap (several whole words are counted off the postings first,
// eventsWithWords), else from the last word's top walked until the page is decided
// (search-query.ts, walkFromLastWord), or failing that the postings (the rows, filtered). One
// mistyped word (the typo pass) past the cap: the top of its closest alternatives, merged in
// popularity order (search-query.ts, walkNearTop). All give the same pages: a test
// (test/market-data/search-postings.test.ts) holds them to the ranked SQL that read every row.
import type { Pool } from '../../db/pool.ts';
import type { NearWord } from './search-vocabulary.ts';

/** One query word and what may stand for it. */
export interface WordTerms {
  word: string;
  /** Matched as a typed prefix (the last word of a query not ending in a space). */
  prefix: boolean;
  near: NearWord[];
  /**
   * For a prefix, the catalog words starting with it (search_dictionary holds every word an
   * event has had) when they are few: the full-text index then matches them as whole words,
   * intersecting with the other words' lists as it goes, where a prefix has every matching
   * word's list read out first ("new york" typed: 17.8 ms in the index, 4.3 as "new" and "york").
   * The same events: a word added to the catalog since is not in the list, as if the search ran
   * a moment earlier.
   */
  expands?: readonly string[];
}

export type RankingSource = 'postings' | 'rows' | 'top';
/** A source, and for one word's top what the probe found of it. */
export type RankingPlan =
  | { source: 'postings' }
  /**
   * With upTo: from the rows only if they are that many at most, else from the postings. With
   * countFirst (each word a single catalog word): the events having them all are counted off
   * the postings before any row is read (eventsWithWords), unless a word is too common.
   */
  | { source: 'rows'; upTo?: number; countFirst?: string[] }
  | { source: 'top'; shape: OneWordShape };

/** Appends a parameter to the statement being built and returns its placeholder, cast to `type`. */
export type Bind = (value: unknown, type: string) => string;

/** A statement's parameters, starting with `first` (a compiled filter's, which number from $1), and the Bind that adds more. */
export function statementParams(first: readonly unknown[] = []): { values: unknown[]; bind: Bind } {
  const values = [...first];
  return {
    values,
    bind: (v, type) => {
      values.push(v);
      return `$${values.length}::${type}`;
    },
  };
}

/** A tsquery operand for one lexeme: quoted, so no character of it is tsquery syntax. */
export function lexeme(text: string, prefix: boolean): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "''")}'${prefix ? ':*' : ''}`;
}

function anyOf(operands: readonly string[]): string {
  return operands.length === 1 ? operands[0]! : `(${operands.join(' | ')})`;
}

/** A word and its typo alternatives as one tsquery operand. */
export function termQuery(t: WordTerms): string {
  const itself = t.prefix && t.expands?.length ? t.expands.map((w) => lexeme(w, false)) : [lexeme(t.word, t.prefix)];
  return anyOf([...itself, ...t.near.map((n) => lexeme(n.text, n.prefix))]);
}

/**
 * Where to rank this query from. A filter: the rows. One word as typed: its top when it matches
 * more events than `countCap`, else the postings (with typo alternatives: the postings). Several:
 * the rows up to `countCap` matches, past it a walk down the last word's top or the postings.
 */
export async function rankingSource(
  pool: Pool,
  terms: readonly WordTerms[],
  filtered: boolean,
  countCap: number,
  /** SearchVocabulary.commonWords(): with none known (null), no count off the postings. */
  common: ReadonlySet<string> | null = null,
): Promise<RankingPlan> {
  // A filter needs each match's row: the rows, up to the cap; past it the top of the last word
  // walked, each event's row read for the filter too. Past the cap means at least that many of
  // the word's events pass, so the walk meets the page's soon. (Walking the top first, before
  // knowing that, was tried: a filter that lets few of its events through walks them all,
  // 180-190 ms at a million.)
  if (filtered) return { source: 'rows', upTo: countCap };
  if (terms.length === 1) {
    if (terms[0]!.near.length) return { source: 'postings' };
    const shape = await oneWordShape(pool, terms[0]!, countCap);
    return shape.beyondCap ? { source: 'top', shape } : { source: 'postings' };
  }
  // Several words: the rows cost one heap visit per match, the postings every posting of every
  // word; which is less depends on how many events have all the words, which only the GIN
  // intersection knows. So the rows are read first, up to the count's cap: few matches (a rare
  // word beside common ones, two words that seldom meet) are ranked there; more, and the
  // postings rank them (a city's two words, "new york"). When each word is one catalog word and
  // none is common, the events having them all are counted off the postings first (migration
  // 042): "new york" in 1-3 ms, where the full-text index's intersection alone took ~7, and past
  // the cap no row is read before the walk. A common word ("the") is left to the full-text
  // index, whose compressed lists it intersects for less than a merge reading its postings.
  const words = terms.map(singleWord);
  if (common && words.every((w) => w !== null && !common.has(w))) return { source: 'rows', upTo: countCap, countFirst: words as string[] };
  return { source: 'rows', upTo: countCap };
}

/** The one catalog word a term matches: itself when whole, the only word under it when a typed prefix; else null. */
function singleWord(t: WordTerms): string | null {
  if (t.near.length) return null;
  if (!t.prefix) return t.word;
  return t.expands?.length === 1 ? t.expands[0]! : null;
}

/** Events having every one of `words` (whole catalog words), counted up to `atMost`, index-only (migration 042). */
export async function eventsWithWords(pool: Pool, words: readonly string[], atMost: number): Promise<number> {
  const { rows } = await pool.query<{ n: number }>('SELECT search_events_with_words($1::text[], $2::int) AS n', [words, atMost]);
  return rows[0]!.n;
}

/** What reading one word's top needs to know of it (oneWordShape). */
export interface OneWordShape {
  /** It matches more events than the cap. */
  beyondCap: boolean;
  /** The probe read all its postings (so few that sorting them all is cheap). */
  allRead: boolean;
  /** The events among the postings the probe read: all of them when allRead. */
  events: number;
  /** Catalog words it stands for (a prefix), counted up to MANY_WORDS + 1. */
  words: number;
}

/** Postings a one-word probe reads at most, per unit of the cap (a word's events, several postings each). */
export const POSTINGS_PER_EVENT_PROBED = 4;
/** Past this many catalog words, a prefix's other words are read by their first two characters. */
export const MANY_WORDS = 64;

/**
 * One index-only probe of a word's postings: whether it matches more than `countCap` events
 * (the distinct events among its first postings), and how many postings and catalog words it has.
 */
export async function oneWordShape(pool: Pool, t: WordTerms, countCap: number): Promise<OneWordShape> {
  const match = t.prefix ? 'word LIKE $1::text' : 'word = $1::text';
  const { rows } = await pool.query<{ postings: number; events: number; words: number }>(
    `SELECT count(*)::int AS postings, count(DISTINCT event_id)::int AS events,
            (SELECT count(*) FROM (SELECT 1 FROM search_dictionary WHERE ${match} LIMIT $3) d)::int AS words
     FROM (SELECT event_id FROM search_postings WHERE ${match} LIMIT $2) p`,
    [t.prefix ? likePrefix(t.word) : t.word, POSTINGS_PER_EVENT_PROBED * (countCap + 1), MANY_WORDS + 1],
  );
  const r = rows[0]!;
  // Fewer than cap + 1 events among that many postings: too few to say, so not beyond (the
  // exact path ranks it, and counts it).
  return { beyondCap: r.events > countCap, allRead: r.postings < POSTINGS_PER_EVENT_PROBED * (countCap + 1), events: r.events, words: r.words };
}

/** The order of postings (and of events, at each one's first) in a one-word ranking. */
export const ONE_WORD_ORDER = 'pin DESC, exact DESC, tickets_sold_24h DESC, tickets_sold DESC, event_id ASC';

/**
 * The first `n` postings of one word (no typo alternatives) in ONE_WORD_ORDER, as rows
 * (event_id, pin, exact, tickets_sold_24h, tickets_sold): pin is the event's "in name" as this
 * posting tells it, exact whether the posting is of the word itself. Each range is read in its
 * index's order and stops at `n`:
 * - a whole word (the query ended in a space): its postings by in_name, sorted (one range);
 * - a prefix with few postings: all of them, sorted;
 * - else the word itself off search_postings_rank, and its other words off the same index one by
 *   one (up to MANY_WORDS of them), or off search_postings_bucket by their first two characters
 *   (a one-character prefix: each two-character bucket under it, found by a loose scan of the
 *   dictionary, and each two-character word).
 */
export function topRowsOfOneWord(t: WordTerms, shape: OneWordShape, n: string, bind: Bind): string {
  const ranked = 'ORDER BY p.prefix_in_name DESC, p.tickets_sold_24h DESC, p.tickets_sold DESC, p.event_id LIMIT';
  const row = (exact: string) => `p.event_id, p.prefix_in_name AS pin, ${exact} AS exact, p.tickets_sold_24h, p.tickets_sold`;
  if (!t.prefix) {
    return `SELECT p.event_id, p.in_name AS pin, true AS exact, p.tickets_sold_24h, p.tickets_sold FROM search_postings p
            WHERE p.word = ${bind(t.word, 'text')} ORDER BY p.in_name DESC, p.tickets_sold_24h DESC, p.tickets_sold DESC, p.event_id LIMIT ${n}`;
  }
  const word = bind(t.word, 'text');
  const pattern = bind(likePrefix(t.word), 'text');
  if (shape.allRead) {
    return `SELECT ${row(`p.word = ${word}`)} FROM search_postings p WHERE p.word LIKE ${pattern} ORDER BY ${ONE_WORD_ORDER} LIMIT ${n}`;
  }
  const itself = `(SELECT ${row('true')} FROM search_postings p WHERE p.word = ${word} ${ranked} ${n})`;
  const byWord = (words: string) =>
    `(SELECT r.* FROM (${words}) d(word) CROSS JOIN LATERAL (
        SELECT ${row('false')} FROM search_postings p WHERE p.word = d.word ${ranked} ${n}) r)`;
  const byBucket = (buckets: string, filter: string) =>
    `(SELECT r.* FROM (${buckets}) b(bucket) CROSS JOIN LATERAL (
        SELECT ${row('false')} FROM search_postings p
        WHERE left(p.word, 2) = b.bucket AND length(p.word) > 2${filter} ${ranked} ${n}) r)`;
  let others: string[];
  const chars = [...t.word];
  if (shape.words <= MANY_WORDS) {
    others = [byWord(`SELECT word FROM search_dictionary WHERE word LIKE ${pattern} AND word <> ${word}`)];
  } else if (chars.length >= 2) {
    others = [byBucket(`SELECT ${bind(chars.slice(0, 2).join(''), 'text')}`, ` AND p.word LIKE ${pattern} AND p.word <> ${word}`)];
  } else {
    // The two-character beginnings of the dictionary's words under this character, one index
    // probe each: the first word past every word of the last beginning found.
    const buckets = `WITH RECURSIVE b(w) AS (
        SELECT (SELECT word FROM search_dictionary WHERE word LIKE ${pattern} AND word > ${word} ORDER BY word LIMIT 1)
        UNION ALL
        SELECT (SELECT word FROM search_dictionary WHERE word > left(b.w, 2) || chr(1114111) AND word LIKE ${pattern} ORDER BY word LIMIT 1)
        FROM b WHERE b.w IS NOT NULL)
      SELECT left(w, 2) FROM b WHERE w IS NOT NULL`;
    others = [byBucket(buckets, ''), byWord(`SELECT word FROM search_dictionary WHERE word LIKE ${pattern} AND length(word) = 2`)];
  }
  return `SELECT * FROM (${[itself, ...others].join(' UNION ALL ')}) u ORDER BY ${ONE_WORD_ORDER} LIMIT ${n}`;
}

/**
 * One term's postings, one SELECT per kind of alternative: the word itself and each typed
 * prefix as a range (LIKE on a COLLATE "C" column is one), whole-word alternatives as one
 * `= ANY` per typo count. `columns` is what each SELECT returns, given its typo count.
 */
export function termBranches(t: WordTerms, bind: Bind, columns: (typos: number) => string): string[] {
  const select = (typos: number, where: string) => `SELECT ${columns(typos)} FROM search_postings p WHERE ${where}`;
  const branches: string[] = [];
  const wholeWords = new Map<number, string[]>();
  for (const a of [{ text: t.word, prefix: t.prefix, typos: 0 }, ...t.near]) {
    if (a.prefix) branches.push(select(a.typos, `p.word LIKE ${bind(likePrefix(a.text), 'text')}`));
    else wholeWords.set(a.typos, [...(wholeWords.get(a.typos) ?? []), a.text]);
  }
  for (const [typos, words] of wholeWords) branches.push(select(typos, `p.word = ANY (${bind(words, 'text[]')})`));
  return branches;
}

/** A LIKE pattern for the words starting with `text` (byte order: the postings' words are COLLATE "C"). */
export function likePrefix(text: string): string {
  return `${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * The events matching every term, one row each: event_id, tickets_sold_24h, tickets_sold, and
 * - `typos`: per word, 0 when the word (or its typed prefix) itself matches, else the fewest
 *   typos among the alternatives the event has; summed over the words;
 * - `in_name`: the words with some matching alternative in the event or artist name;
 * - `exact`: the words the event has whole (as typed, not as a prefix).
 * `filterSql` is over `s`, event_search's row: from the postings, a filter joins every match's
 * row (which is why rankingSource ranks filtered queries from the rows).
 */
export function rankedMatches(source: 'postings' | 'rows', terms: readonly WordTerms[], filterSql: string, bind: Bind): string {
  if (source === 'rows') return fromRows(terms, filterSql, bind);
  const grouped = fromPostings(terms, bind);
  return filterSql === 'TRUE' ? grouped : `SELECT g.* FROM (${grouped}) g JOIN event_search s ON s.event_id = g.event_id WHERE (${filterSql})`;
}

/** The attributes of its event a posting carries for filters (migration 041), beside its popularity. */
const CARRIED_FOR_FILTERS = ['venue_country_code', 'category_name', 'event_date', 'average_ticket_price_sold', 'available_tickets', 'capacity'] as const;

/** What a filter read off the postings may name: the event, its popularity, the carried attributes. */
export const POSTING_FILTER_ATTRIBUTES = ['event_id', 'tickets_sold', 'tickets_sold_24h', ...CARRIED_FOR_FILTERS] as const;

/**
 * Every posting of every term, one row each (term, typos, event_id, in_name, exact,
 * tickets_sold_24h, tickets_sold), and with `carried` the event attributes a filter over the
 * postings reads besides those (CARRIED_FOR_FILTERS).
 */
export function postingsOfTerms(terms: readonly WordTerms[], bind: Bind, carried = false): string {
  const extra = carried ? `, ${CARRIED_FOR_FILTERS.map((a) => `p.${a}`).join(', ')}` : '';
  return terms
    .flatMap((t, i) => {
      const whole = bind(t.word, 'text');
      return termBranches(
        t,
        bind,
        (typos) => `${i} AS term, ${typos} AS typos, p.event_id, p.in_name, p.word = ${whole} AS exact, p.tickets_sold_24h, p.tickets_sold${extra}`,
      );
    })
    .join(' UNION ALL ');
}

/** The events among `postings` (postingsOfTerms' rows, as a relation) that have every term, ranked terms per event as rankedMatches says. */
export function groupedPostings(terms: readonly WordTerms[], postings: string): string {
  const per = (agg: (i: number) => string) => terms.map((_, i) => agg(i)).join(' + ');
  return `
    SELECT h.event_id, max(h.tickets_sold_24h) AS tickets_sold_24h, max(h.tickets_sold) AS tickets_sold,
           ${per((i) => `coalesce(min(h.typos) FILTER (WHERE h.term = ${i}), 0)`)} AS typos,
           ${per((i) => `coalesce(bool_or(h.in_name) FILTER (WHERE h.term = ${i}), false)::int`)} AS in_name,
           ${per((i) => `coalesce(bool_or(h.exact) FILTER (WHERE h.term = ${i}), false)::int`)} AS exact
    FROM ${postings} h
    GROUP BY h.event_id
    HAVING ${terms.map((_, i) => `bool_or(true) FILTER (WHERE h.term = ${i})`).join(' AND ')}`;
}

function fromPostings(terms: readonly WordTerms[], bind: Bind): string {
  return groupedPostings(terms, `(${postingsOfTerms(terms, bind)})`);
}

function fromRows(terms: readonly WordTerms[], filterSql: string, bind: Bind): string {
  // Typo count per word: 0 when the word (or its typed prefix) itself matches, else the fewest
  // typos among the alternatives this event has.
  const typos = terms
    .filter((t) => t.near.length)
    .map((t) => {
      const exact = bind(lexeme(t.word, t.prefix), 'tsquery');
      const one = t.near.filter((n) => n.typos === 1).map((n) => lexeme(n.text, n.prefix));
      const oneTest = one.length ? ` WHEN s.search_vector @@ ${bind(anyOf(one), 'tsquery')} THEN 1` : '';
      return `CASE WHEN s.search_vector @@ ${exact} THEN 0${oneTest} ELSE 2 END`;
    });
  const alternatives = terms.map(termQuery);
  const inName = alternatives.map((a) => `(s.name_vector @@ ${bind(a, 'tsquery')})::int`);
  const whole = terms.map((t) => `(s.search_vector @@ ${bind(lexeme(t.word, false), 'tsquery')})::int`);
  // The filter as `IS TRUE` (the same rows in a WHERE) is no index condition: ANDing the words'
  // matches with the bitmap of a filter's index reads the filter's whole range (the US: 336,625
  // entries, 25-40 ms; "tickets_sold > 10" more) to spare heap visits among a few hundred rows.
  return `
    SELECT s.event_id, s.tickets_sold_24h, s.tickets_sold,
           ${typos.length ? typos.join(' + ') : '0'} AS typos,
           ${inName.join(' + ')} AS in_name,
           ${whole.join(' + ')} AS exact
    FROM event_search s WHERE s.search_vector @@ ${bind(alternatives.join(' & '), 'tsquery')} AND ((${filterSql}) IS TRUE)`;
}
