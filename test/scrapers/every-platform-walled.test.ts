// Issue 37: every request the scrapers send is a browser's on the wire. With every wall of the
// simulator on (TLS fingerprint against the user agent's browser, HTTP/2 and its SETTINGS, header
// order and client hints, a bot cookie rotated under the scrapers), every platform pf_01..pf_11 and
// the tracker's marketplaces A and B are scraped over HTTPS (the simulator's CA trusted, never
// verification off) the way the worker builds its scrapers: on demand and polled, directly from
// this machine and through two loopback proxies. Ground truth is each wall's own count of what it
// let through and refused: not one refusal, and every site judged something.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORM_KEYS } from '../../src/platform/registry.ts';
import { createBrowserPages, type BrowserPages } from '../../src/scrapers/browser-pages.ts';
import { ExitPools } from '../../src/scrapers/egress/exit-pool.ts';
import { parseProxyUrls } from '../../src/scrapers/egress/proxy-urls.ts';
import { createHttpClients, createHttpFetcher, type HttpClients } from '../../src/scrapers/http-fetcher.ts';
import { createScrapers, type Scrapers } from '../../src/scrapers/index.ts';
import { createMarketplaceScrapers } from '../../src/scrapers/marketplaces/index.ts';
import { createPf01Clearances, type Pf01Clearances } from '../../src/scrapers/platforms/pf_01-clearance.ts';
import { DEMO_IDS } from '../../src/simulator/marketplaces/demo.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import type { WalledSite } from '../../src/simulator/walls/wall.ts';
import { startLoopbackProxies, type LoopbackProxies } from '../support/loopback-proxies.ts';
import { demoRef } from '../support/simulator.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const LIMIT_MS = 20_000;

let sim: Simulator;
let proxies: LoopbackProxies;
let clients: HttpClients;
let browser: BrowserPages;

interface Mode {
  exits: ExitPools | undefined;
  pf01: Pf01Clearances;
  onDemand: Scrapers;
  polls: Scrapers;
  http: ReturnType<typeof createHttpFetcher>;
}
const modes: Partial<Record<'direct' | 'proxied', Mode>> = {};

function buildMode(exits: ExitPools | undefined): Mode {
  const onDemandHttp = createHttpFetcher({ concurrency: 4, timeoutMs: LIMIT_MS, clients });
  const pollHttp = createHttpFetcher({ concurrency: 8, timeoutMs: LIMIT_MS, clients });
  const pf01 = createPf01Clearances({ browser, http: pollHttp, baseUrl: sim.httpsBaseUrls.pf_01!, size: 1, makeTimeoutMs: LIMIT_MS });
  // As activities/index.ts builds them.
  const common = { browser, exits, baseUrls: sim.httpsBaseUrls, browserPages: 2, chromiumPath: CHROMIUM, attemptTimeoutMs: LIMIT_MS };
  return {
    exits,
    pf01,
    http: onDemandHttp,
    onDemand: createScrapers({ ...common, http: onDemandHttp, clearances: { pf01, use: 'when-warm' } }),
    polls: createScrapers({ ...common, http: pollHttp, clearances: { pf01, use: 'always' } }),
  };
}

beforeAll(async () => {
  // Seeded with one demo event per platform and the marketplaces' demo events; every wall on.
  sim = await startSimulator({ walls: 'on' });
  proxies = await startLoopbackProxies(2, { credentials: { username: 'scraper', password: 'walled-pw-3712' } });
  clients = createHttpClients({ caFile: sim.caFile });
  browser = createBrowserPages({ pages: 2, chromiumPath: CHROMIUM, timeoutMs: LIMIT_MS, caFile: sim.caFile });
  modes.direct = buildMode(undefined);
  modes.proxied = buildMode(new ExitPools(parseProxyUrls(proxies.setting), { rpsPerExit: () => 50, sessionMaxRequests: 1_000, sessionMaxAgeMs: 600_000, cooldownMs: 60_000 }));
}, 60_000);

afterAll(async () => {
  for (const mode of Object.values(modes)) {
    await Promise.all([mode.onDemand.close(), mode.polls.close(), mode.pf01.pool.close()]);
    mode.exits?.close();
  }
  clients?.close();
  await browser?.close();
  await proxies?.close();
  await sim?.close();
});

function wall(site: WalledSite): { passed: number; refused: number; last: string } {
  const stats = sim.walls.site(site).stats();
  return { passed: stats.passed, refused: Object.values(stats.refused).reduce((a, b) => a + b, 0), last: JSON.stringify(stats.last_refusal) };
}

describe.each(['direct', 'proxied'] as const)('every wall on, %s', (name) => {
  it.each(PLATFORM_KEYS)('%s: on demand and polled, each passes its wall', async (platform) => {
    const mode = modes[name]!;
    const before = wall(platform);
    const ref = demoRef(platform);
    // A scrape the wall refused fails saying what the wall saw (its last refusal's reason and detail).
    const said = (err: unknown) => new Error(`${(err as Error).message}; the wall: ${wall(platform).last}`);
    const onDemandData = await mode.onDemand.scrape(ref).catch((err: unknown) => Promise.reject(said(err)));
    const polled = await mode.polls.scrape(ref).catch((err: unknown) => Promise.reject(said(err)));
    expect(Object.keys(onDemandData.sections).length).toBeGreaterThan(0);
    expect(polled.sections).toEqual(onDemandData.sections);
    const after = wall(platform);
    expect(after.refused - before.refused, after.last).toBe(0);
    expect(after.passed).toBeGreaterThan(before.passed);
  }, 60_000);

  it('the tracker scrapes marketplaces A and B through their walls', async () => {
    const mode = modes[name]!;
    const before = { a: wall('marketplace_a'), b: wall('marketplace_b') };
    const tracker = createMarketplaceScrapers(mode.http, { marketplace_a: sim.httpsMarketplaceUrls.marketplace_a, marketplace_b: sim.httpsMarketplaceUrls.marketplace_b }, mode.exits);
    const a = await tracker.marketplaceA(DEMO_IDS.concertA);
    const b = await tracker.marketplaceB(a.external.marketplace_b_event_id!);
    expect(b.sections.length).toBeGreaterThan(0);
    for (const site of ['marketplace_a', 'marketplace_b'] as const) {
      const after = wall(site);
      expect(after.refused - before[site === 'marketplace_a' ? 'a' : 'b'].refused, after.last).toBe(0);
      expect(after.passed).toBeGreaterThan(before[site === 'marketplace_a' ? 'a' : 'b'].passed);
    }
  }, 60_000);

  it('polls go on across bot-cookie rotations: the rotated cookie is kept and sent', async () => {
    const mode = modes[name]!;
    // Rotated every 300 ms, the old value good for 200 ms more: ten polls over 4 s meet a dozen rotations.
    sim.walls.site('pf_03').configure({ cookieRotateMs: 300, cookieGraceMs: 200 });
    try {
      const before = wall('pf_03');
      const rotatedBefore = sim.walls.site('pf_03').stats().cookie.rotated;
      for (let i = 0; i < 10; i++) {
        await mode.polls.scrape(demoRef('pf_03'));
        await new Promise((resolve) => setTimeout(resolve, 400));
      }
      const after = wall('pf_03');
      expect(after.refused - before.refused, after.last).toBe(0);
      expect(after.passed - before.passed).toBeGreaterThanOrEqual(10);
      // The wall did rotate it under the polls (a check that rotated nothing would prove nothing).
      expect(sim.walls.site('pf_03').stats().cookie.rotated - rotatedBefore).toBeGreaterThanOrEqual(5);
    } finally {
      sim.walls.site('pf_03').configure({ cookieRotateMs: 300_000, cookieGraceMs: 30_000 });
    }
  }, 60_000);
});
