// `npm run bench:search`: seeds a scratch database with BENCH_EVENTS events (default 100,000),
// then times search side by side with the naive implementation (bench/search/naive.ts) in one
// run: for each kind of query, the p50 and p95 of the search function the route calls (the
// database round trips included, the HTTP layer not), the same for the naive SQL, and their
// ratio; then a few requests through the real gateway over HTTP, to show what HTTP, the API
// key check and metering add. Targets (issue 40, any size): typical p95 under 20 ms, worst cases
// under 100 ms, and the typical scenarios sent through the gateway under 20 ms there; exits 1 when
// one is missed or the gateway could not be measured.
// Env: BENCH_EVENTS (100000), BENCH_DETAIL (light; full adds sales and history, not search
// data), BENCH_ITERATIONS (requests per scenario, 200), BENCH_BASELINE_BUDGET_MS (time per
// scenario for the naive SQL, 6000), BENCH_BASELINE_MIN (naive requests per scenario at least,
// 5), BENCH_HTTP (requests per HTTP scenario, 100). At 1,000,000 events the naive SQL takes
// seconds a request: BENCH_ITERATIONS=100 BENCH_BASELINE_MIN=2 BENCH_BASELINE_BUDGET_MS=1 keep
// the run near ten minutes.
import os from 'node:os';
import { createAccount, createKey } from '../src/accounts/operations.ts';
import { createDb } from '../db/connection.ts';
import { createPool } from '../db/pool.ts';
import { createScratchDatabase } from '../db/scratch.ts';
import { COUNT_CAP, searchEvents, type SearchParams } from '../src/market-data/search-query.ts';
import { SearchVocabulary } from '../src/market-data/search-vocabulary.ts';
import { seedCatalog } from '../src/market-data/seed/seed.ts';
import { progressPrinter } from '../src/market-data/seed/progress.ts';
import type { Detail } from '../src/market-data/seed/statistics.ts';
import { summarise, type Summary } from './support/percentiles.ts';
import { buildScenarios, type Scenario } from './search/queries.ts';
import { naiveSearch } from './search/naive.ts';
import { searchHttpVerdict, searchVerdict } from './search/verdict.ts';
import { reservePort, startServer } from './support/processes.ts';

const events = Number(process.env.BENCH_EVENTS ?? 100_000);
const detail = (process.env.BENCH_DETAIL ?? 'light') as Detail;
const iterations = Number(process.env.BENCH_ITERATIONS ?? 200);
const baselineBudgetMs = Number(process.env.BENCH_BASELINE_BUDGET_MS ?? 6_000);
const baselineMin = Number(process.env.BENCH_BASELINE_MIN ?? 5);
const httpRequests = Number(process.env.BENCH_HTTP ?? 100);

interface Row {
  scenario: Scenario;
  ours: Summary;
  naive: Summary;
  oursHits: number;
  naiveHits: number;
  /** Share of our answers counted only up to the cap. */
  capped: number;
}

const ms = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : '-');
const timed = async <T>(fn: () => Promise<T>): Promise<[number, T]> => {
  const t = performance.now();
  const v = await fn();
  return [performance.now() - t, v];
};

async function main() {
  console.error(`bench:search: ${events.toLocaleString('en-US')} events (${detail} detail), ${iterations} searches per scenario, ${os.cpus().length} cores`);
  const scratch = await createScratchDatabase('tm_bench_search');
  try {
    const db = createDb({ connectionString: scratch.url, poolMax: 4, statementTimeoutMs: 600_000 });
    const seeded = await seedCatalog(db, { events, detail, seed: 1, onProgress: progressPrinter() });
    console.error(`seeded in ${(seeded.ms / 1000).toFixed(1)} s (${Math.round(events / (seeded.ms / 1000)).toLocaleString('en-US')} events/s)`);
    const { rows: sizes } = await db.raw(
      `SELECT pg_size_pretty(pg_total_relation_size('event_search')) AS search, (SELECT count(*) FROM search_dictionary)::int AS words,
              current_setting('shared_buffers') AS shared_buffers, current_setting('work_mem') AS work_mem, version() AS version`,
    );
    const pool = createPool({ connectionString: scratch.url, max: 4, statementTimeoutMs: 600_000 });
    // One vocabulary for every search, as the gateway has (Services.searchVocabulary).
    const vocabulary = new SearchVocabulary(pool);
    await vocabulary.ready();
    const scenarios = await buildScenarios(pool, iterations);

    const rows: Row[] = [];
    for (const scenario of scenarios) {
      process.stderr.write(`measuring: ${scenario.name} ... `);
      // Warm both paths (caches, JIT) on this scenario's first requests.
      for (const p of scenario.requests.slice(0, 3)) await searchEvents(pool, p, vocabulary);
      await naiveSearch(pool, scenario.requests[0]!);
      const ours: number[] = [];
      const naive: number[] = [];
      let oursHits = 0;
      let naiveHits = 0;
      /** Answers whose count stopped at the cap (issue 40): their nbHits is a lower bound. */
      let capped = 0;
      const naiveStarted = performance.now();
      for (let i = 0; i < scenario.requests.length; i++) {
        const p = scenario.requests[i]!;
        const [t, r] = await timed(() => searchEvents(pool, p, vocabulary));
        ours.push(t);
        oursHits += r.nbHits;
        if (!r.exhaustiveNbHits) capped++;
        // Interleaved, so both see the same machine; the slow baseline gets a time budget.
        if (naive.length < baselineMin || performance.now() - naiveStarted < baselineBudgetMs) {
          const [tn, n] = await timed(() => naiveSearch(pool, p));
          naive.push(tn);
          naiveHits += n;
        }
      }
      const row = { scenario, ours: summarise(ours), naive: summarise(naive), oursHits: oursHits / ours.length, naiveHits: naiveHits / naive.length, capped: capped / ours.length };
      rows.push(row);
      process.stderr.write(`p50 ${ms(row.ours.p50)} / p95 ${ms(row.ours.p95)} ms (naive ${ms(row.naive.p50)} / ${ms(row.naive.p95)} ms, ${naive.length} runs)\n`);
    }

    const [info] = sizes as { search: string; words: number; shared_buffers: string; work_mem: string; version: string }[];
    console.log(`\nSearch over ${events.toLocaleString('en-US')} events (${detail} seed in ${(seeded.ms / 1000).toFixed(0)} s; event_search ${info!.search}, ${info!.words.toLocaleString('en-US')} distinct words); ${info!.version.split(',')[0]}, shared_buffers ${info!.shared_buffers}, ${os.cpus().length} cores shared\n`);
    console.log(`| scenario | ours p50 ms | ours p95 ms | naive p50 ms | naive p95 ms | p95 naive/ours | mean nbHits ours / naive | counted to the cap (${COUNT_CAP}) |`);
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
    for (const r of rows) {
      console.log(
        `| ${r.scenario.name}${r.scenario.kind === 'broad' ? ' (worst case)' : ''} | ${ms(r.ours.p50)} | ${ms(r.ours.p95)} | ${ms(r.naive.p50)} | ${ms(r.naive.p95)} | ${(r.naive.p95 / r.ours.p95).toFixed(0)}x | ${Math.round(r.oursHits)} / ${Math.round(r.naiveHits)} | ${Math.round(r.capped * 100)} % |`,
      );
    }
    const verdict = searchVerdict(
      rows.map((r) => ({ name: r.scenario.name, kind: r.scenario.kind, ours: r.ours })),
      events,
    );
    console.log(`\n${verdict.line}`);
    // Non-zero when the verdict fails (the HTTP figures below are still printed).
    if (!verdict.pass) process.exitCode = 1;

    // What search's structures cost a tracker's refresh: an event's counters changed, as a refresh
    // that found a new snapshot writes them (its row, the row's index entries, its postings
    // through the triggers). One at a time, each its own transaction, as the tracker's are.
    const { rows: sample } = await pool.query<{ id: string }>('SELECT event_id::text AS id FROM event_search ORDER BY md5(event_id::text || $1) LIMIT 200', ['refresh']);
    const refresh: number[] = [];
    for (const { id } of sample) {
      const [took] = await timed(() =>
        pool.query('UPDATE event_search SET tickets_sold = tickets_sold + 3, tickets_sold_24h = tickets_sold_24h + 1, available_tickets = greatest(available_tickets - 3, 0) WHERE event_id = $1', [id]),
      );
      refresh.push(took);
    }
    const refreshed = summarise(refresh);
    console.log(`
An event's counters updated (a tracker refresh that found them changed), one at a time: p50 ${ms(refreshed.p50)} ms, p95 ${ms(refreshed.p95)} ms over ${refresh.length} events`);

    // Through the gateway over HTTP: a separate process, a real key, metering included.
    console.error('starting a gateway process for the HTTP figures...');
    const { account_id } = await createAccount(db, { plan: 'enterprise', name: 'bench-search' });
    const { key } = await createKey(db, { accountId: account_id, rateLimitPerMinute: 1_000_000 });
    const port = await reservePort();
    const gateway = await startServer('bench/search/gateway-server.ts', port, { DATABASE_URL: scratch.url, DEMO_ACCOUNT: 'false' });
    try {
      const http: { name: string; direct: Summary; http: Summary }[] = [];
      const post = async (p: SearchParams) => {
        const res = await fetch(`http://127.0.0.1:${port}/svc/data/search`, {
          method: 'POST',
          headers: { apikey: key, 'content-type': 'application/json' },
          body: JSON.stringify(p),
        });
        if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
        await res.json();
      };
      for (const name of ['text: artist name', 'text: city', 'text: one typo', 'text + filters', 'filters only', 'filters only, sorted', 'sort: event_date']) {
        const requests = scenarios.find((s) => s.name === name)!.requests.slice(0, httpRequests);
        for (const p of requests.slice(0, 10)) await post(p);
        const direct: number[] = [];
        const viaHttp: number[] = [];
        // Each request through HTTP first, then through the function: the HTTP figure must not
        // be the second read of pages the same request just brought into the buffers.
        for (const p of requests) {
          viaHttp.push((await timed(() => post(p)))[0]);
          direct.push((await timed(() => searchEvents(pool, p, vocabulary)))[0]);
        }
        http.push({ name, direct: summarise(direct), http: summarise(viaHttp) });
      }
      console.log('\nThrough the gateway (HTTP, API key, metering; a separate process), same requests, each through HTTP first, then through the function:\n');
      console.log('| scenario | function p50 ms | HTTP p50 ms | function p95 ms | HTTP p95 ms | HTTP adds (p50) |');
      console.log('|---|---:|---:|---:|---:|---:|');
      for (const h of http) {
        console.log(`| ${h.name} | ${ms(h.direct.p50)} | ${ms(h.http.p50)} | ${ms(h.direct.p95)} | ${ms(h.http.p95)} | ${ms(h.http.p50 - h.direct.p50)} ms |`);
      }
      const throughGateway = searchHttpVerdict(http, events);
      console.log(`\n${throughGateway.line}`);
      if (!throughGateway.pass) process.exitCode = 1;
    } catch (err) {
      // The figures above stand on their own; say why these are missing, and fail the run: the
      // target through the gateway was not measured.
      console.log(`\nHTTP figures not measured: ${err instanceof Error ? err.message : String(err)}`);
      process.exitCode = 1;
    } finally {
      await gateway.stop();
    }

    await pool.end();
    await db.destroy();
  } finally {
    await scratch.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
