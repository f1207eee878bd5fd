// `npm run ops -- scrapers:proxies` and the proxy metrics (issue 27): what a worker's exit pools
// say of each proxy, read back as an operator reads it (the command line, over the worker's real
// report in a scratch PostgreSQL), and which budget ran out when the watched targets need more
// than the healthy proxies may send. The pools are real; blocks are reported to them as the
// scrapers do, on a clock the test drives.
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { createLogger } from '../../src/logger.ts';
import { startBrowserReports } from '../../src/scrapers/browser-reports.ts';
import { ExitPools } from '../../src/scrapers/egress/exit-pool.ts';
import { registerProxyMetrics } from '../../src/scrapers/egress/proxy-metrics.ts';
import { parseProxyUrls } from '../../src/scrapers/egress/proxy-urls.ts';
import { databaseUrl, runTs } from '../support/harness.ts';
import { uniqueTaskQueue } from '../support/temporal.ts';

const PASSWORD = 'ops-proxy-secret-77';
let scratch: ScratchDatabase;
let db: Db;

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_ops_proxies', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 3 });
});
afterAll(async () => {
  await db?.destroy();
  await scratch?.drop();
});

/** Four proxies for pf_03 at 2 requests/s each; pf_05 direct. */
function pools(clock: { t: number }): ExitPools {
  const proxies = parseProxyUrls(`pf_03=${[2, 3, 4, 5].map((i) => `http://u:${PASSWORD}@127.0.0.${i}:8000`).join(',')}`);
  return new ExitPools(proxies, {
    rpsPerExit: (site) => (site === 'pf_03' ? 2 : 20),
    sessionMaxRequests: 100,
    sessionMaxAgeMs: 600_000,
    cooldownMs: 60_000,
    now: () => clock.t,
    headerSet: () => ({ 'user-agent': 'test' }),
  });
}

async function watchTargets(n: number): Promise<void> {
  await db('monitor_members').insert(
    Array.from({ length: n }, (_, i) => ({
      item_id: i + 1,
      account_id: 1,
      target: `pf_03:fr:ev-${i}`,
      platform: 'pf_03',
      shard: 0,
      ref: JSON.stringify({ platform: 'pf_03', region: 'fr', key: `ev-${i}` }),
      item: JSON.stringify({}),
      config: JSON.stringify({}),
      version: 1,
    })),
  );
}

describe('ops scrapers:proxies', () => {
  it('shows each proxy, and says which budget ran out', async () => {
    const clock = { t: Date.now() };
    const exits = pools(clock);
    const pf03 = exits.for('pf_03')!;
    for (const exit of pf03.exits) for (let i = 0; i < 5; i++) pf03.session(exit).sent();
    // Two proxies blocked: one with a Retry-After, one with a challenge page.
    pf03.blocked(pf03.session(pf03.exits[0]!), 120_000, 'http://x/e/1 answered 429, asking us to wait 120 s');
    pf03.blocked(pf03.session(pf03.exits[1]!), null, 'http://x/e/2 answered a Cloudflare challenge page (cf-mitigated: challenge)');
    // 30 targets at a 5 s interval need 6 requests/s; 2 healthy proxies × 2 give 4.
    await watchTargets(30);

    const registry = new Registry();
    registerProxyMetrics(registry, exits);
    const metrics = await registry.metrics();
    expect(metrics).toContain('scrape_proxy_requests_total{platform="pf_03",proxy="http://127.0.0.2:8000"} 5');
    expect(metrics).toContain('scrape_proxy_blocks_total{platform="pf_03",proxy="http://127.0.0.3:8000"} 1');
    expect(metrics).toContain('scrape_proxy_healthy{platform="pf_03",proxy="http://127.0.0.2:8000"} 0');
    expect(metrics).toContain('scrape_proxy_healthy{platform="pf_03",proxy="http://127.0.0.4:8000"} 1');
    expect(metrics).toContain('scrape_proxy_budget_rps{platform="pf_03"} 4');
    // A direct platform has no proxy rows.
    expect(metrics).not.toContain('platform="pf_05"');
    expect(metrics).not.toContain(PASSWORD);

    const taskQueue = uniqueTaskQueue('scrapes');
    const figures = () => ({ browser: { page_loads: 0, page_loads_per_minute: null, launches: 0, open_pages: 0 }, sessions: {}, proxies: exits.all().filter((p) => p.proxied).map((p) => p.stats()) });
    const reporter = startBrowserReports({ db, taskQueue, chromiumPath: process.execPath, log: createLogger('silent'), figures });
    try {
      await expect.poll(() => db('scrape_worker_browsers').where({ task_queue: taskQueue }).first('scrapers'), { timeout: 15_000 }).toBeTruthy();
      const env = { ...process.env, DATABASE_URL: scratch.url, LOG_LEVEL: 'silent', MONITOR_INTERVAL_MS: '5000' };
      const out = await runTs('src/ops/cli.ts', ['scrapers:proxies'], env);
      expect(out.code, out.stderr).toBe(0);
      expect(out.stdout).not.toContain(PASSWORD);
      const [row, ...others] = JSON.parse(out.stdout) as Record<string, unknown>[];
      expect(others).toEqual([]);
      expect(row).toMatchObject({
        platform: 'pf_03',
        workers: 1,
        proxies: 4,
        healthy: 2,
        rps_per_proxy: 2,
        budget_rps: 4,
        needed_rps: 6,
        watched_targets: 30,
        budget_ran_out: expect.stringMatching(/^pf_03's proxy budget ran out: its 30 targets need 6 requests\/s, and 2 healthy of 4 proxies × 2 \(SCRAPE_RPS_PER_PROXY\) give 4 \(2 cooling down after blocks\)/),
      });
      const byProxy = row!.by_proxy as { proxy: string; healthy: boolean; requests: number; blocks: number; last_block: { reason: string } | null }[];
      expect(byProxy.map((p) => [p.proxy, p.healthy, p.requests, p.blocks])).toEqual([
        ['http://127.0.0.2:8000', false, 5, 1],
        ['http://127.0.0.3:8000', false, 5, 1],
        ['http://127.0.0.4:8000', true, 5, 0],
        ['http://127.0.0.5:8000', true, 5, 0],
      ]);
      expect(byProxy[1]!.last_block!.reason).toContain('Cloudflare challenge page');

      // Enough healthy proxies: nothing ran out.
      const fine = await runTs('src/ops/cli.ts', ['scrapers:proxies', '--platform', 'pf_03'], { ...env, MONITOR_INTERVAL_MS: '10000' });
      expect((JSON.parse(fine.stdout) as { budget_ran_out: string | null }[])[0]!.budget_ran_out).toBeNull();
    } finally {
      await reporter.stop();
      exits.close();
    }
  }, 120_000);
});
