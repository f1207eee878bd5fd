// `npm run bench:scrape`: side by side in one run, a direct adapter call versus POST
// /events/scrape through the gateway (auth, rate limit, metering) and Temporal (workflow start,
// activity on the worker, result), for an HTTP platform (pf_03) and the browser platform
// (pf_01), sequential and with 20 concurrent clients. pf_01 is measured both ways a scrape of it
// can go: over HTTP with a warm clearance made in the browser (what the worker does once it holds
// one), and by rendering the page in Chromium (direct only: the worker renders only while it has
// no clearance). Reports p50/p95 of each and the gateway path's added p50. Targets: under 50 ms
// added at p50; pf_01 through the gateway with a warm clearance under 30 ms at p50.
// Env: BENCH_SEQUENTIAL (requests per sequential run, default 60), BENCH_CONCURRENT_TOTAL
// (requests per concurrent run, default 200), BENCH_CONCURRENCY (default 20), BENCH_PLATFORMS
// (default pf_03,pf_01,pf_01-page), BENCH_EAGER=0 (start runs through the task queue, as a gateway
// with no worker in its process does).
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createAccount, createKey } from '../src/accounts/operations.ts';
import { APIS } from '../src/apis/index.ts';
import { TemporalScrapeRunner } from '../src/apis/live-availability/scrape-runs.ts';
import { loadConfig } from '../src/config.ts';
import { createGateway } from '../src/gateway/app.ts';
import { Metrics } from '../src/gateway/metrics.ts';
import { createLogger } from '../src/logger.ts';
import { parseEventRef, type EventRef } from '../src/platform/event-ref.ts';
import { closeServices, createRequestPool, createServices } from '../src/runtime/services.ts';
import { createHttpFetcher } from '../src/scrapers/http-fetcher.ts';
import { createScrapers } from '../src/scrapers/index.ts';
import { createPf01Clearances } from '../src/scrapers/platforms/pf_01-clearance.ts';
import { startSimulator } from '../src/simulator/server.ts';
import { simEventInputSchema } from '../src/simulator/state.ts';
import { Registry } from 'prom-client';
import { createActivities } from '../activities/index.ts';
import { createDb } from '../db/connection.ts';
import { createScratchDatabase } from '../db/scratch.ts';
import { resolveTemporalCli } from '../temporal/binary.ts';
import { connectTemporal } from '../temporal/client.ts';
import { startDevServer } from '../temporal/dev-server.ts';
import { WORKFLOWS_PATH } from '../temporal/runtime.ts';
import { clientOnWorkers, startWorkers } from '../temporal/worker.ts';
import { scrapeBackstopMs } from '../workflows/scrape-timing.ts';
import { percentile } from './support/percentiles.ts';

const sequential = Number(process.env.BENCH_SEQUENTIAL ?? 60);
const concurrentTotal = Number(process.env.BENCH_CONCURRENT_TOTAL ?? 200);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 20);
const EVENTS_PER_PLATFORM = 40;
const noEager = process.env.BENCH_EAGER === '0';
/** pf_01 is the clearance path, pf_01-page the rendered page. */
type Path = 'pf_03' | 'pf_01' | 'pf_01-page';
const platforms = (process.env.BENCH_PLATFORMS ?? 'pf_03,pf_01,pf_01-page').split(',') as Path[];
const LABELS: Record<Path, string> = { pf_03: 'pf_03 (HTTP, Cheerio)', pf_01: 'pf_01 (warm session, HTTP)', 'pf_01-page': 'pf_01 (page in Chromium)' };

interface Figures {
  name: string;
  n: number;
  p50: number;
  p95: number;
  rps: number;
  failures: number;
}

/** Runs `total` calls, `parallel` at a time; each call gets its index. Latencies in ms. */
async function measure(name: string, total: number, parallel: number, call: (i: number) => Promise<boolean>): Promise<Figures> {
  const latencies: number[] = [];
  let failures = 0;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < total) {
        const i = next++;
        const t = performance.now();
        const ok = await call(i).catch(() => false);
        latencies.push(performance.now() - t);
        if (!ok) failures++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { name, n: total, p50: percentile(latencies, 50), p95: percentile(latencies, 95), rps: total / seconds, failures };
}

const ms = (v: number) => v.toFixed(1);

async function main() {
  console.error(`bench:scrape: ${sequential} sequential and ${concurrentTotal} requests at ${concurrency} concurrent, per platform and path`);
  const log = createLogger('warn');
  const cleanups: (() => Promise<void>)[] = [];
  try {
    console.error('creating a scratch database...');
    const scratch = await createScratchDatabase('tm_bench_scrape');
    cleanups.push(() => scratch.drop());

    console.error('starting the simulator and a Temporal dev server...');
    const sim = await startSimulator({ empty: true });
    cleanups.push(() => sim.close());
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-bench-scrape-'));
    cleanups.push(() => fs.rm(dataDir, { recursive: true, force: true }));
    const binary = await resolveTemporalCli({ onProgress: (m) => console.error(`  temporal: ${m}`) });
    const server = await startDevServer({ binary, dataDir, port: 0, uiPort: 0, namespace: 'default', log });
    cleanups.push(() => server.stop());

    // One account sends every scrape: the per-platform limit (10 a minute by default) would
    // answer most of them 429, so it is lifted out of the figures.
    const config = loadConfig({
      ...process.env,
      DATABASE_URL: scratch.url,
      LOG_LEVEL: 'warn',
      SCRAPE_CONCURRENCY: '20',
      BROWSER_PAGES: '4',
      SCRAPE_REQUESTS_PER_PLATFORM_PER_MINUTE: '1000000',
    });
    const temporal = await connectTemporal({ address: server.address, namespace: 'default' });
    cleanups.push(() => temporal.close());
    const db = createDb({ connectionString: scratch.url, poolMax: 10 });
    cleanups.push(() => db.destroy());
    const { activities, close } = await createActivities({ config, log, db, connectionString: scratch.url, registry: new Registry(), baseUrls: sim.baseUrls });
    cleanups.push(close);
    const taskQueue = 'bench-scrapes';
    console.error('bundling workflows and starting the worker...');
    const workers = await startWorkers({
      connection: { address: server.address },
      namespace: 'default',
      queues: [{ taskQueue, workflowsPath: WORKFLOWS_PATH, activities, maxConcurrentActivityTaskExecutions: 20 }],
      log,
    });
    cleanups.push(() => workers.stop());
    const services = {
      ...createServices(config, db, createRequestPool(config, scratch.url), log, new Metrics(false)),
      scrapes: new TemporalScrapeRunner(temporal.client, { taskQueue, timeoutMs: config.SCRAPE_TIMEOUT_MS }),
    };
    // As `npm start` runs it: the worker in the gateway's process takes new runs eagerly.
    if (!noEager) services.scrapes.startOnLocalWorkers(clientOnWorkers(workers, 'default'));
    const app = createGateway(services, APIS);
    const httpServer = app.listen(0, '127.0.0.1');
    await new Promise((r) => httpServer.once('listening', r));
    cleanups.push(async () => {
      httpServer.closeAllConnections();
      await new Promise((r) => httpServer.close(r));
      await closeServices(services);
    });
    const gatewayUrl = `http://127.0.0.1:${(httpServer.address() as { port: number }).port}`;
    const { account_id } = await createAccount(db, { plan: 'enterprise', name: 'bench' });
    const { key } = await createKey(db, { accountId: account_id, rateLimitPerMinute: 1_000_000 });

    // Distinct events, so concurrent requests never share a run (which would flatter the gateway path).
    const sections = [
      { name: 'Floor', price: 120, stock: 6 },
      { name: 'Lower 101', price: 80.5, stock: 12 },
      { name: 'Upper 305', price: 45, stock: 20 },
      { name: 'Resale A', price: 150, stock: 4, ticket_type: 'resale' },
    ];
    const refs: Record<'pf_03' | 'pf_01', EventRef[]> = { pf_03: [], pf_01: [] };
    for (let i = 0; i < EVENTS_PER_PLATFORM; i++) {
      const pairs: ['pf_03' | 'pf_01', string, string][] = [
        ['pf_03', `https://pf03.example/e/bench-${i}`, 'us'],
        ['pf_01', `Bench${String(i).padStart(11, '0')}`, 'uk'],
      ];
      for (const [platform, eventId, region] of pairs) {
        const parsed = parseEventRef(platform, eventId, region);
        if (!parsed.ok) throw new Error(parsed.message);
        sim.store.put(platform, parsed.ref.key, simEventInputSchema.parse({ region, sections }));
        refs[platform].push(parsed.ref);
      }
    }

    const direct = createScrapers({
      baseUrls: sim.baseUrls,
      concurrency: 20,
      browserPages: 4,
      chromiumPath: config.CHROMIUM_PATH,
      attemptTimeoutMs: scrapeBackstopMs(config.SCRAPE_TIMEOUT_MS),
    });
    cleanups.push(() => direct.close());
    await direct.warm();
    // The direct clearance path: the worker's own pieces (the pollers' fetcher, a clearance pool on
    // the same warm browser), so its figure is what the worker's activity spends inside.
    const lean = createHttpFetcher({ concurrency: 20, timeoutMs: scrapeBackstopMs(config.SCRAPE_TIMEOUT_MS), caFile: config.SCRAPE_CA_FILE });
    cleanups.push(async () => lean.close());
    const pf01 = createPf01Clearances({ browser: direct.browser, http: lean, baseUrl: sim.baseUrls.pf_01!, size: config.BROWSER_SESSIONS, makeTimeoutMs: 30_000 });
    cleanups.push(() => pf01.pool.close());
    const directClearances = createScrapers({
      http: lean,
      browser: direct.browser,
      clearances: { pf01, use: 'always' },
      baseUrls: sim.baseUrls,
      browserPages: 4,
      chromiumPath: config.CHROMIUM_PATH,
      attemptTimeoutMs: scrapeBackstopMs(config.SCRAPE_TIMEOUT_MS),
    });

    const refsOf = (path: Path) => refs[path === 'pf_03' ? 'pf_03' : 'pf_01'];
    const viaDirect = (path: Path) => async (i: number) => {
      await (path === 'pf_01' ? directClearances : direct).scrape(refsOf(path)[i % EVENTS_PER_PLATFORM]!);
      return true;
    };
    const viaGateway = (path: Path) => async (i: number) => {
      const ref = refsOf(path)[i % EVENTS_PER_PLATFORM]!;
      const res = await fetch(`${gatewayUrl}/events/scrape`, {
        method: 'POST',
        headers: { apikey: key, 'content-type': 'application/json' },
        body: JSON.stringify({ platform: ref.platform, event_id: ref.eventId, region: ref.region }),
      });
      await res.arrayBuffer();
      return res.status === 200;
    };

    // The gateway's pf_01 requests warm the worker's clearance pool too (a clearance is made behind
    // the first on-demand scrape); the page path goes direct only.
    console.error('warming up every path...');
    for (const p of platforms) {
      await measure('warm', 10, 2, viaDirect(p));
      if (p !== 'pf_01-page') await measure('warm', 10, 2, viaGateway(p));
    }

    const rows: [Figures, Figures | null][] = [];
    for (const p of platforms) {
      for (const [mode, total, parallel] of [
        ['sequential', sequential, 1],
        [`${concurrency} concurrent`, concurrentTotal, concurrency],
      ] as const) {
        const label = `${LABELS[p]}, ${mode}`;
        console.error(`running: ${label}`);
        const d = await measure(label, total, parallel, viaDirect(p));
        const g = p === 'pf_01-page' ? null : await measure(label, total, parallel, viaGateway(p));
        rows.push([d, g]);
      }
    }

    const lines = [
      '| scenario | direct p50 / p95 ms | gateway + Temporal p50 / p95 ms | added p50 ms | p50 ratio | direct req/s | gateway req/s | failures |',
      '|---|---:|---:|---:|---:|---:|---:|---:|',
    ];
    for (const [d, g] of rows) {
      const gw = g ? [`${ms(g.p50)} / ${ms(g.p95)}`, ms(g.p50 - d.p50), `${(g.p50 / d.p50).toFixed(2)}x`] : ['–', '–', '–'];
      lines.push(`| ${d.name} | ${ms(d.p50)} / ${ms(d.p95)} | ${gw.join(' | ')} | ${d.rps.toFixed(0)} | ${g ? g.rps.toFixed(0) : '–'} | ${d.failures + (g?.failures ?? 0)} |`);
    }
    console.log(`\n${lines.join('\n')}\n`);
    const paired = rows.filter((r): r is [Figures, Figures] => r[1] !== null);
    const worst = Math.max(...paired.map(([d, g]) => g.p50 - d.p50));
    console.log(`target: the gateway + Temporal path adds < 50 ms at p50 (worst added p50: ${ms(worst)} ms: ${worst < 50 ? 'met' : 'NOT met'})`);
    const warm = paired.find(([d]) => d.name === `${LABELS.pf_01}, sequential`);
    if (warm) console.log(`target: pf_01 through the gateway with a warm session < 30 ms at p50 (${ms(warm[1].p50)} ms: ${warm[1].p50 < 30 ? 'met' : 'NOT met'})`);
    const page = rows.find(([d]) => d.name === `${LABELS['pf_01-page']}, ${concurrency} concurrent`);
    const session = paired.find(([d]) => d.name === `${LABELS.pf_01}, ${concurrency} concurrent`);
    if (page && session) console.log(`pf_01 at ${concurrency} concurrent: ${session[1].rps.toFixed(0)} req/s through the gateway with sessions against ${page[0].rps.toFixed(0)} req/s rendering pages directly (${(session[1].rps / page[0].rps).toFixed(1)}x)`);
  } finally {
    for (const c of cleanups.reverse()) await c().catch((err: unknown) => console.error('cleanup failed:', err));
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
