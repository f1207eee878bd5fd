// Typo tolerance for search: the catalog's vocabulary (every word of every event's search text,
// from `search_dictionary`) held in memory as a prefix tree, and a walk over it that finds the
// catalog words within a few typos of a query word, and for the word being typed also the
// prefixes within a few typos of what was typed. Search then asks the full-text index for
// those, so typo tolerance costs one in-memory walk (well under a millisecond for 200,000
// words) instead of a similarity scan of the table.
//
// A typo is one character inserted, deleted or replaced, or two neighbours swapped (optimal
// string alignment distance). Allowed typos by the query word's length: 0 below 4 characters,
// 1 from 4, 2 from 8; none for a word containing a digit (a year or a number means itself).
// A typed prefix is compared with prefixes at least as long as itself: "tour" reaches "toul…"
// (a replaced letter) but not every word starting with "tou" (that would ignore the "r").
//
// Freshness: loaded on the first search, then new words are fetched in the background at most
// every few seconds and the whole list is reloaded every minute (a word committed out of id
// order is picked up then). Exact and prefix matches never depend on it: only typo matches for a
// word first seen in a newly tracked event can lag, by at most a minute. A reload holds the
// gateway's event loop only briefly, since every request of every account waits it out: the words
// come as one text value, in order (node-postgres parsing 180,000 rows held it for 30-70 ms),
// and the new tree is built a slice at a time, between other work (built in one go: 35-50 ms).
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Pool } from '../../db/pool.ts';

export const MIN_LENGTH_FOR_1_TYPO = 4;
export const MIN_LENGTH_FOR_2_TYPOS = 8;
/** Longer query words are matched exactly or as typed prefixes only (bounds the walk's work). */
const MAX_FUZZY_LENGTH = 40;
const INCREMENTAL_EVERY_MS = 3_000;
const FULL_RELOAD_EVERY_MS = 60_000;
/** Words added to a tree between two turns of the event loop while it is built (a few ms each). */
export const BUILD_SLICE_WORDS = 20_000;

/** Typos a query word may carry (see the module comment). */
export function allowedTypos(word: string): number {
  if (/[0-9]/.test(word) || word.length > MAX_FUZZY_LENGTH) return 0;
  if (word.length >= MIN_LENGTH_FOR_2_TYPOS) return 2;
  return word.length >= MIN_LENGTH_FOR_1_TYPO ? 1 : 0;
}

/** A catalog word, or a prefix standing for every word that starts with it, near a query word. */
export interface NearWord {
  text: string;
  /** 1 or 2. */
  typos: number;
  prefix: boolean;
}

/**
 * Postings past which a word counts as common (by the planner's statistics): "the", on a quarter
 * of the catalog, where "new" has 36,394 at a million events. Searches do not count the events
 * having several words off the postings when one of them is this common (search-ranking.ts).
 */
export const COMMON_WORD_POSTINGS = 60_000;

/** Built once per gateway (Services.searchVocabulary), so the words are loaded once, not per search. */
export class SearchVocabulary {
  /** Every word as of the last full load, and the words fetched since (a small second trie). */
  private main = Trie.build([]);
  private recent = Trie.build([]);
  private recentWords: string[] = [];
  private watermark = 0;
  private loaded: Promise<void> | null = null;
  private refreshing: Promise<void> | null = null;
  private refreshedAt = 0;
  private fullAt = 0;
  private common: ReadonlySet<string> | null = null;

  constructor(
    private readonly pool: Pool,
    /** COMMON_WORD_POSTINGS, unless a test makes words of a small catalog common. */
    private readonly commonWordPostings = COMMON_WORD_POSTINGS,
  ) {}

  /** Loads on first use; afterwards refreshes in the background and never waits for it. */
  async ready(): Promise<void> {
    if (!this.loaded) {
      this.loaded = this.reload();
      // A failed first load (database down) is retried by the next search, not cached.
      this.loaded.catch(() => (this.loaded = null));
    }
    await this.loaded;
    const now = Date.now();
    if (!this.refreshing && now - this.refreshedAt > INCREMENTAL_EVERY_MS) {
      this.refreshing = (now - this.fullAt > FULL_RELOAD_EVERY_MS ? this.reload() : this.addNew())
        // Keep serving the words we have; the next search tries again.
        .catch(() => {})
        .finally(() => (this.refreshing = null));
    }
  }

  private async reload(): Promise<void> {
    const started = Date.now();
    // One value, the words in the column's order (COLLATE "C": code points), a line each (a word
    // never holds a newline: search_words() splits at every ASCII control character).
    const { rows } = await this.pool.query<{ words: string | null; last: string | null }>(
      `SELECT string_agg(word, E'\\n' ORDER BY word) AS words, max(id)::text AS last FROM search_dictionary`,
    );
    // The most common words the planner's statistics know, with the postings' row estimate
    // (the statistics' frequencies are shares of it); none before the postings are analysed.
    const common = await this.pool.query<{ word: string }>(
      `SELECT m.word FROM pg_stats s, unnest(s.most_common_vals::text::text[], s.most_common_freqs) AS m(word, freq)
       WHERE s.schemaname = current_schema() AND s.tablename = 'search_postings' AND s.attname = 'word'
         AND m.freq * (SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = 'search_postings'::regclass) > $1`,
      [this.commonWordPostings],
    );
    this.common = new Set(common.rows.map((r) => r.word));
    const words = rows[0]?.words ? rows[0].words.split('\n') : [];
    this.main = await Trie.buildYielding(words);
    this.recent = Trie.build([]);
    this.recentWords = [];
    this.watermark = Number(rows[0]?.last ?? 0);
    this.refreshedAt = this.fullAt = started;
  }

  private async addNew(): Promise<void> {
    const started = Date.now();
    const { rows } = await this.pool.query<{ word: string; id: string }>(
      'SELECT word, id::text FROM search_dictionary WHERE id > $1 ORDER BY id',
      [this.watermark],
    );
    this.refreshedAt = started;
    if (rows.length === 0) return;
    this.watermark = Number(rows[rows.length - 1]!.id);
    this.recentWords = [...this.recentWords, ...rows.map((r) => r.word)].sort(compare);
    this.recent = Trie.build(this.recentWords);
  }

  /** Words on more postings than the common bound (COMMON_WORD_POSTINGS by default), as of the last full load; null before the first. */
  commonWords(): ReadonlySet<string> | null {
    return this.common;
  }

  /**
   * Catalog words within `allowedTypos(word)` of `word` (excluding the word itself). With
   * `prefix`, the word is still being typed: also prefixes of catalog words, at least as long as
   * the word, within the typos.
   */
  near(word: string, prefix: boolean): NearWord[] {
    const k = allowedTypos(word);
    if (k === 0) return [];
    const found: NearMap = new Map();
    this.main.near(word, k, prefix, found);
    this.recent.near(word, k, prefix, found);
    return [...found.values()];
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * A prefix tree in flat arrays (UTF-16 code units), walked depth first with one row of the
 * edit-distance table per depth: a node whose row has no value within k cannot lead to a match,
 * so its whole subtree is skipped. 200,000 words take about 1,000,000 nodes, 13 MB.
 */
export class Trie {
  private constructor(
    readonly words: readonly string[],
    private readonly char: Uint16Array,
    private readonly firstChild: Int32Array,
    private readonly nextSibling: Int32Array,
    /** Index into `words` of the word ending at the node, or -1. */
    private readonly wordAt: Int32Array,
  ) {}

  /**
   * From words in lexicographic order, without duplicates: by code unit (JavaScript's `<`) or by
   * code point (the database's COLLATE "C"), which differ only in where a character past U+FFFF
   * falls; either keeps the words that share a prefix together, which is all the build needs.
   */
  static build(sorted: readonly string[]): Trie {
    const steps = Trie.building(sorted, Infinity);
    for (;;) {
      const step = steps.next();
      if (step.done) return step.value;
    }
  }

  /** As build, letting the event loop turn after every `slice` words. */
  static async buildYielding(sorted: readonly string[], slice = BUILD_SLICE_WORDS): Promise<Trie> {
    const steps = Trie.building(sorted, slice);
    for (;;) {
      const step = steps.next();
      if (step.done) return step.value;
      await nextTurn();
    }
  }

  /** The build, pausing (yield) after every `slice` words of each of its two passes. */
  private static *building(sorted: readonly string[], slice: number): Generator<void, Trie> {
    let nodes = 1;
    for (let i = 0; i < sorted.length; i++) {
      nodes += sorted[i]!.length - commonPrefix(i ? sorted[i - 1]! : '', sorted[i]!);
      if ((i + 1) % slice === 0) yield;
    }
    const char = new Uint16Array(nodes);
    const firstChild = new Int32Array(nodes).fill(-1);
    const nextSibling = new Int32Array(nodes).fill(-1);
    const lastChild = new Int32Array(nodes).fill(-1);
    const wordAt = new Int32Array(nodes).fill(-1);
    const path = [0];
    let next = 1;
    for (let i = 0; i < sorted.length; i++) {
      const word = sorted[i]!;
      const shared = commonPrefix(i ? sorted[i - 1]! : '', word);
      path.length = shared + 1;
      for (let d = shared; d < word.length; d++) {
        const parent = path[d]!;
        const node = next++;
        char[node] = word.charCodeAt(d);
        if (lastChild[parent] === -1) firstChild[parent] = node;
        else nextSibling[lastChild[parent]!] = node;
        lastChild[parent] = node;
        path.push(node);
      }
      wordAt[path[word.length]!] = i;
      if ((i + 1) % slice === 0) yield;
    }
    return new Trie(sorted, char, firstChild, nextSibling, wordAt);
  }

  /** Adds to `found` the words, and when typing the prefixes, within k typos of w. */
  near(w: string, k: number, prefix: boolean, found: NearMap): void {
    if (this.words.length === 0) return;
    const L = w.length;
    const maxDepth = L + k;
    // rows[d][j]: distance between the node path's first d characters and w's first j. Only
    // cells within k of the diagonal are computed; the band's edges hold k + 1 ("too far").
    const rows = Array.from({ length: maxDepth + 1 }, () => new Int32Array(L + 2).fill(k + 1));
    for (let j = 0; j <= Math.min(L, k); j++) rows[0]![j] = j;
    const pathChar = new Uint16Array(maxDepth + 1);
    // Typing: the best distance of a prefix on the path so far; deeper ones must beat it (a
    // word under an emitted prefix is covered by it, with at most that many typos).
    const best = new Int32Array(maxDepth + 1).fill(k + 1);
    const stack: number[] = [];
    const depthOf: number[] = [];
    for (let c = this.firstChild[0]!; c !== -1; c = this.nextSibling[c]!) {
      stack.push(c);
      depthOf.push(1);
    }
    const lastCell = (d: number) => (Math.abs(d - L) <= k ? rows[d]![L]! : k + 1);
    while (stack.length) {
      const node = stack.pop()!;
      const d = depthOf.pop()!;
      const ch = this.char[node]!;
      pathChar[d] = ch;
      const row = rows[d]!;
      const up = rows[d - 1]!;
      const lo = Math.max(1, d - k);
      const hi = Math.min(L, d + k);
      row[lo - 1] = lo === 1 ? d : k + 1;
      row[hi + 1] = k + 1;
      let rowMin = lo === 1 && d <= k ? d : k + 1;
      for (let j = lo; j <= hi; j++) {
        let v = Math.min(up[j]! + 1, row[j - 1]! + 1, up[j - 1]! + (ch === w.charCodeAt(j - 1) ? 0 : 1));
        if (d > 1 && j > 1 && ch === w.charCodeAt(j - 2) && pathChar[d - 1] === w.charCodeAt(j - 1)) {
          v = Math.min(v, rows[d - 2]![j - 2]! + 1);
        }
        if (v > k) v = k + 1;
        row[j] = v;
        if (v < rowMin) rowMin = v;
      }
      best[d] = best[d - 1]!;
      if (rowMin > k || (prefix && rowMin >= best[d]!)) continue;
      const last = lastCell(d);
      if (prefix && d >= L && last < best[d]!) {
        best[d] = last;
        // Distance 0: the query word itself, which search looks up as a prefix anyway.
        if (last === 0) continue;
        keep(found, String.fromCharCode(...pathChar.subarray(1, d + 1)), last, true);
      } else if (this.wordAt[node] !== -1 && last > 0 && last <= k) {
        keep(found, this.words[this.wordAt[node]!]!, last, false);
      }
      if (d === maxDepth) continue;
      for (let c = this.firstChild[node]!; c !== -1; c = this.nextSibling[c]!) {
        stack.push(c);
        depthOf.push(d + 1);
      }
    }
  }
}

/** Found words and prefixes, keyed by kind and text. */
export type NearMap = Map<string, NearWord>;

function keep(found: NearMap, text: string, typos: number, prefix: boolean): void {
  const key = `${prefix ? '*' : '='}${text}`;
  const had = found.get(key);
  if (had === undefined || typos < had.typos) found.set(key, { text, typos, prefix });
}

function commonPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}
