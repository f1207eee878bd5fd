// `npm run bench:vocabulary`: the search vocabulary's full reload (src/market-data/search-vocabulary.ts,
// every minute in each gateway process) at a catalog's size, side by side with the way before it
// (every word read, sorted and built into the tree in one go). The words are those of
// BENCH_EVENTS events (default 1,000,000) made by the seed's own catalog generator and cut by the
// database's own search_tokens(), as the seed's search rows would add them. For each reload: the
// longest the event loop was held (every request of every account in that gateway waits behind
// it) and the reload's duration; the runs alternate, BENCH_ROUNDS of each (default 5).
// Verdicts (bench/vocabulary/verdict.ts), exit 1 when one fails: the longest hold of the reload
// under 50 ms; and both trees answer every probe alike (near spellings of dictionary words, whole
// and typed), the tree built the way before being the reference (its walk is checked against
// brute force in test/apis/market-data/search-typos.test.ts).
import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createPool, type Pool } from '../db/pool.ts';
import { createScratchDatabase } from '../db/scratch.ts';
import { allowedTypos, SearchVocabulary, Trie, type NearMap } from '../src/market-data/search-vocabulary.ts';
import { catalogParts, generateEvent } from '../src/market-data/seed/catalog.ts';
import { summarise } from './support/percentiles.ts';
import { vocabularyVerdicts } from './vocabulary/verdict.ts';

const events = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const INSERT_BATCH = 25_000;
const PROBES = 2_000;

const log = (m: string) => console.error(`[bench:vocabulary] ${m}`);

/** The words of `events` generated events, into search_dictionary through the database's own tokenizer. */
async function fillDictionary(pool: Pool): Promise<number> {
  const parts = catalogParts(1, events);
  const now = new Date();
  for (let from = 0; from < events; from += INSERT_BATCH) {
    const texts: string[] = [];
    for (let i = from; i < Math.min(events, from + INSERT_BATCH); i++) {
      const e = generateEvent(1, i, parts, now);
      const artist = parts.artists[e.artistIndex]!;
      const venue = parts.venues[e.venueIndex]!;
      // As search-index.ts writes search_text: lower(concat_ws(' ', event, artist, venue, city)).
      texts.push([e.name, artist.name, venue.name, venue.city].join(' '));
    }
    await pool.query(
      `INSERT INTO search_dictionary (word)
       SELECT DISTINCT t FROM unnest($1::text[]) AS s(x), unnest(search_tokens(lower(s.x))) AS t ORDER BY t
       ON CONFLICT DO NOTHING`,
      [texts],
    );
    if ((from / INSERT_BATCH) % 8 === 7 || from + INSERT_BATCH >= events) log(`  words of ${Math.min(events, from + INSERT_BATCH).toLocaleString('en-US')} events in`);
  }
  const { rows } = await pool.query<{ n: string }>('SELECT count(*)::text AS n FROM search_dictionary');
  return Number(rows[0]!.n);
}

/** The reload as it was before: every word, sorted and built in one go. */
async function reloadAtOnce(pool: Pool): Promise<Trie> {
  const { rows } = await pool.query<{ word: string }>('SELECT word, id::text FROM search_dictionary');
  return Trie.build(rows.map((r) => r.word).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** The longest the event loop was held while `fn` ran (ms), and how long it took. */
async function measured<T>(fn: () => Promise<T>): Promise<{ holdMs: number; tookMs: number; value: T }> {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  const t = performance.now();
  const value = await fn();
  const tookMs = performance.now() - t;
  h.disable();
  return { holdMs: h.max / 1e6, tookMs, value };
}

/** Probes: dictionary words with a letter dropped or doubled, whole or as typed. */
function probes(words: readonly string[]): { word: string; prefix: boolean }[] {
  const out: { word: string; prefix: boolean }[] = [];
  const step = Math.max(1, Math.floor(words.length / PROBES));
  for (let i = 0; i < words.length && out.length < PROBES; i += step) {
    const w = words[i]!;
    const cut = i % Math.max(1, w.length);
    const typo = i % 2 === 0 ? w.slice(0, cut) + w.slice(cut + 1) : w.slice(0, cut) + w[cut] + w.slice(cut);
    out.push({ word: typo, prefix: i % 3 === 0 });
  }
  return out;
}

const key = (found: Iterable<{ text: string; typos: number; prefix: boolean }>) =>
  [...found].map((n) => `${n.prefix ? '*' : '='}${n.text}:${n.typos}`).sort().join(',');

async function main(): Promise<number> {
  log(`${events.toLocaleString('en-US')} events' words, ${rounds} rounds of each reload, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), Node ${process.version}`);
  const scratch = await createScratchDatabase('tm_bench_vocabulary');
  const pool = createPool({ connectionString: scratch.url, max: 2, statementTimeoutMs: 600_000 });
  try {
    log('filling the dictionary...');
    const count = await fillDictionary(pool);
    log(`  ${count.toLocaleString('en-US')} words`);
    const before: { holdMs: number; tookMs: number }[] = [];
    const after: { holdMs: number; tookMs: number }[] = [];
    let reference: Trie | null = null;
    let vocabulary: SearchVocabulary | null = null;
    for (let r = 0; r < rounds; r++) {
      const b = await measured(() => reloadAtOnce(pool));
      before.push(b);
      reference = b.value;
      const fresh = new SearchVocabulary(pool);
      const a = await measured(() => fresh.ready());
      after.push(a);
      vocabulary = fresh;
      log(`  round ${r + 1}/${rounds}: longest hold ${b.holdMs.toFixed(1)} ms before, ${a.holdMs.toFixed(1)} ms now; reload ${b.tookMs.toFixed(0)} / ${a.tookMs.toFixed(0)} ms`);
    }
    // Both trees answer alike, the tree built the way before being the reference.
    let differ = 0;
    let reached = 0;
    const asked = probes(reference!.words);
    for (const p of asked) {
      const k = allowedTypos(p.word);
      const expected: NearMap = new Map();
      // A word allowed no typo has no near spellings (SearchVocabulary.near answers none).
      if (k > 0) reference!.near(p.word, k, p.prefix, expected);
      const got = vocabulary!.near(p.word, p.prefix);
      if (key(expected.values()) !== key(got)) differ++;
      if (expected.size > 0) reached++;
    }
    const hb = summarise(before.map((x) => x.holdMs));
    const ha = summarise(after.map((x) => x.holdMs));
    const tb = summarise(before.map((x) => x.tookMs));
    const ta = summarise(after.map((x) => x.tookMs));
    const verdicts = vocabularyVerdicts({ holdsMs: after.map((x) => x.holdMs), probes: asked.length, differ, reached });
    console.log(`## bench:vocabulary, ${new Date().toISOString().slice(0, 10)}\n`);
    console.log(`- ${events.toLocaleString('en-US')} events' words: ${count.toLocaleString('en-US')} in search_dictionary; ${rounds} reloads each, alternating`);
    console.log(`- command: \`BENCH_EVENTS=${events} BENCH_ROUNDS=${rounds} DATABASE_URL=... npm run bench:vocabulary\`\n`);
    console.log('| | before (read, sort, build at once) | now (the words as one value, the tree built a slice at a time) | now / before |');
    console.log('|---|---:|---:|---:|');
    console.log(`| longest event-loop hold, p50 / max | ${hb.p50.toFixed(1)} / ${hb.max.toFixed(1)} ms | ${ha.p50.toFixed(1)} / ${ha.max.toFixed(1)} ms | ${(ha.p50 / hb.p50).toFixed(2)}x |`);
    console.log(`| reload, p50 / max | ${tb.p50.toFixed(0)} / ${tb.max.toFixed(0)} ms | ${ta.p50.toFixed(0)} / ${ta.max.toFixed(0)} ms | ${(ta.p50 / tb.p50).toFixed(2)}x |\n`);
    console.log('| verdict | figure | |');
    console.log('|---|---|---|');
    for (const v of verdicts) console.log(`| ${v.name} | ${v.figure} | ${v.pass ? 'PASS' : '**FAIL**'} |`);
    return verdicts.every((v) => v.pass) ? 0 : 1;
  } finally {
    await pool.end();
    await scratch.drop();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
