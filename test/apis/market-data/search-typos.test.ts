// Typo tolerance (src/market-data/search-vocabulary.ts): the pruned trie walk reaches exactly the
// vocabulary words that a brute-force optimal string alignment distance over the whole
// vocabulary reaches (whole words within k typos; for a word being typed also words with a
// prefix at least as long as it within k typos), with the same typo counts; a tree built from
// the database's order, or a slice at a time, answering as one built at once; and the rule for
// how many typos a word may carry.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { allowedTypos, Trie, type NearMap } from '../../../src/market-data/search-vocabulary.ts';

/** Optimal string alignment distance: insert, delete, replace, or swap two neighbours. */
function osa(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

function trieFor(words: readonly string[]): Trie {
  return Trie.build([...new Set(words)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
}

function near(trie: Trie, w: string, k: number, prefix: boolean): NearMap {
  const found: NearMap = new Map();
  trie.near(w, k, prefix, found);
  return found;
}

/** Whole words found, with their typos (what search asks for as exact words). */
function wholeWords(found: NearMap): Map<string, number> {
  return new Map([...found.values()].filter((n) => !n.prefix).map((n) => [n.text, n.typos]));
}

/** Each vocabulary word the walk's answer reaches for a typed `w`, with its fewest typos. */
function covered(words: readonly string[], w: string, found: NearMap): Map<string, number> {
  const out = new Map<string, number>();
  for (const x of words) {
    let best = x.startsWith(w) ? 0 : Infinity;
    for (const n of found.values()) if (n.prefix ? x.startsWith(n.text) : x === n.text) best = Math.min(best, n.typos);
    if (best !== Infinity) out.set(x, best);
  }
  return out;
}

/** The same by brute force: x itself, or a prefix of x at least as long as w, within k of w. */
function bruteCovered(words: readonly string[], w: string, k: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const x of words) {
    let best = osa(w, x);
    for (let n = w.length; n <= x.length; n++) best = Math.min(best, osa(w, x.slice(0, n)));
    if (best <= k) out.set(x, best);
  }
  return out;
}

// A small alphabet (with a non-ASCII letter) so near spellings are common.
const letter = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'ü');
const word = (min: number, max: number) => fc.array(letter, { minLength: min, maxLength: max }).map((l) => l.join(''));
const vocabulary = fc.uniqueArray(word(1, 9), { minLength: 1, maxLength: 200 });

describe('Trie.near', () => {
  it('finds exactly the whole words within k typos, with their distance', () => {
    fc.assert(
      fc.property(vocabulary, word(1, 10), fc.integer({ min: 1, max: 2 }), (words, w, k) => {
        const expected = new Map(words.map((x) => [x, osa(w, x)] as const).filter(([, d]) => d > 0 && d <= k));
        const found = near(trieFor(words), w, k, false);
        expect([...found.values()].every((n) => !n.prefix)).toBe(true);
        expect(wholeWords(found)).toEqual(expected);
      }),
      { numRuns: 400 },
    );
  });

  it('while typing, reaches exactly the words within k typos or with a prefix as long as the word within k', () => {
    fc.assert(
      fc.property(vocabulary, word(1, 10), fc.integer({ min: 1, max: 2 }), (words, w, k) => {
        const found = near(trieFor(words), w, k, true);
        for (const n of found.values()) {
          expect(n.typos >= 1 && n.typos <= k).toBe(true);
          if (n.prefix) expect(n.text.length).toBeGreaterThanOrEqual(w.length);
        }
        expect(covered(words, w, found)).toEqual(bruteCovered(words, w, k));
      }),
      { numRuns: 400 },
    );
  });

  it('handles the examples of docs/market-data.md', () => {
    const trie = trieFor(['london', 'londonderry', 'metallica', 'metal', 'münchen', 'tour', 'toulouse', 'tou', 'paris', 'paradiso']);
    expect(wholeWords(near(trie, 'lodnon', 1, false))).toEqual(new Map([['london', 1]]));
    expect(wholeWords(near(trie, 'metalica', 2, false))).toEqual(new Map([['metallica', 1]]));
    expect(wholeWords(near(trie, 'munchen', 1, false))).toEqual(new Map([['münchen', 1]]));
    expect(wholeWords(near(trie, 'toor', 1, false))).toEqual(new Map([['tour', 1]]));
    // Typing "tour": "toul…" is a replaced letter; the word "tou" is a dropped one; "tou…" is not.
    expect([...near(trie, 'tour', 1, true).values()]).toEqual(
      expect.arrayContaining([
        { text: 'toul', typos: 1, prefix: true },
        { text: 'tou', typos: 1, prefix: false },
      ]),
    );
    expect([...near(trie, 'tour', 1, true).values()].some((n) => n.prefix && n.text.length < 4)).toBe(false);
    expect([...near(trie, 'metallc', 1, true).values()].map((n) => n.text)).toEqual(['metalli']);
    expect(near(trieFor([]), 'london', 1, true)).toEqual(new Map());
  });
});

// Letters where the database's order (UTF-8 bytes: code points) and JavaScript's (code units)
// differ: a character past U+FFFF (two code units from U+D800) against ones from U+E000.
const wideLetter = fc.constantFrom('a', 'b', '\u{1F600}', '\u{1F601}', '\uE000', '\uFFFD');
const wideWord = fc.array(wideLetter, { minLength: 1, maxLength: 6 }).map((l) => l.join(''));
const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const byUtf8 = (a: string, b: string) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

describe('Trie.build and Trie.buildYielding', () => {
  it("answer alike from the database's order (code points), from code-unit order, and a slice at a time", async () => {
    let ordersDiffered = 0;
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(wideWord, { minLength: 1, maxLength: 80 }), wideWord, fc.integer({ min: 1, max: 2 }), fc.boolean(), fc.integer({ min: 1, max: 7 }), async (words, w, k, prefix, slice) => {
        const units = [...words].sort(byCodeUnit);
        const points = [...words].sort(byUtf8);
        if (units.some((x, i) => x !== points[i])) ordersDiffered++;
        const expected = near(Trie.build(units), w, k, prefix);
        expect(near(Trie.build(points), w, k, prefix)).toEqual(expected);
        expect(near(await Trie.buildYielding(points, slice), w, k, prefix)).toEqual(expected);
      }),
      { numRuns: 300 },
    );
    // The two orders did differ in some runs: the first check met a case that tells them apart.
    expect(ordersDiffered).toBeGreaterThan(0);
  });

  it('a slice at a time lets the event loop turn between slices', async () => {
    const words = Array.from({ length: 50_000 }, (_, i) => `w${i.toString(36)}`).sort(byCodeUnit);
    let turns = 0;
    let spinning = true;
    const spin = () => {
      if (!spinning) return;
      turns++;
      setImmediate(spin);
    };
    setImmediate(spin);
    await Trie.buildYielding(words, 1_000);
    spinning = false;
    // Two passes of 50 slices each: other work ran between most of them.
    expect(turns).toBeGreaterThanOrEqual(90);
  });
});

describe('allowedTypos', () => {
  it('allows none below 4 characters, 1 from 4, 2 from 8, none with a digit or past 40 characters', () => {
    expect(['a', 'ab', 'abc', 'abcd', 'abcdefg', 'abcdefgh', 'abcdefghijkl'].map(allowedTypos)).toEqual([0, 0, 0, 1, 1, 2, 2]);
    expect(allowedTypos('2024')).toBe(0);
    expect(allowedTypos('blink182')).toBe(0);
    expect(allowedTypos('a'.repeat(41))).toBe(0);
  });
});
