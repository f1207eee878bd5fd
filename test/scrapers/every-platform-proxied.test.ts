// Issue 36: once a site has proxies, no request of a scrape leaves from this machine's own
// address, whatever the adapter does, because an adapter's only fetchers come bound to its
// scrape's session (scrape-via.ts). Every platform, pf_01..pf_11, and the tracker's marketplaces A
// and B are scraped through the scrapers the worker builds (createScrapers, createMarketplaceScrapers)
// with SCRAPE_PROXY_URLS set to two loopback proxy-chain proxies sending from 127.0.0.2 and
// 127.0.0.3. Both of the worker's scraper sets are used, each over its own HTTP fetcher sharing one
// set of clients (http-fetcher.ts): the on-demand one (pf_01: its page in Chromium) and the
// pollers' (pf_01: a session made in
// Chromium, then its two data arms over HTTP). Ground truth is the simulator's: its request log
// (GET /_sim/requests: every event request, with its source address) and, for what that log leaves
// out (pf_01's front page and session API, the marketplaces), every request its HTTP server
// received (node's `http.server.request.start` diagnostics channel).
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORM_KEYS } from '../../src/platform/registry.ts';
import { createBrowserPages, type BrowserPages } from '../../src/scrapers/browser-pages.ts';
import { ExitPools } from '../../src/scrapers/egress/exit-pool.ts';
import { parseProxyUrls } from '../../src/scrapers/egress/proxy-urls.ts';
import { createHttpClients, createHttpFetcher, type HttpClients, type HttpFetcher } from '../../src/scrapers/http-fetcher.ts';
import { createScrapers, type Scrapers } from '../../src/scrapers/index.ts';
import { createMarketplaceScrapers } from '../../src/scrapers/marketplaces/index.ts';
import { createPf01Clearances, type Pf01Clearances } from '../../src/scrapers/platforms/pf_01-clearance.ts';
import { DEMO_IDS } from '../../src/simulator/marketplaces/demo.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import { startLoopbackProxies, type LoopbackProxies } from '../support/loopback-proxies.ts';
import { demoRef } from '../support/simulator.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const LIMIT_MS = 20_000;
const THIS_MACHINE = '127.0.0.1';

let sim: Simulator;
let proxies: LoopbackProxies;
let exits: ExitPools;
let clients: HttpClients;
let onDemandHttp: HttpFetcher;
let pollHttp: HttpFetcher;
let browser: BrowserPages;
let pf01: Pf01Clearances;
let onDemand: Scrapers;
let polls: Scrapers;

/** Every request the simulator's server received, other than the test's own control calls. */
const received: { address: string; path: string }[] = [];
const onRequest = (message: unknown): void => {
  const { request } = message as { request: IncomingMessage };
  if (request.socket.localPort !== sim?.port) return;
  const path = new URL(request.url ?? '/', 'http://sim').pathname;
  if (path.startsWith('/_sim/')) return;
  const address = request.socket.remoteAddress ?? '';
  received.push({ address: address.startsWith('::ffff:') ? address.slice(7) : address, path });
};

beforeAll(async () => {
  subscribe('http.server.request.start', onRequest);
  // Seeded with one demo event per platform and the marketplaces' demo events.
  sim = await startSimulator();
  proxies = await startLoopbackProxies(2, { credentials: { username: 'scraper', password: 'bound-pw-3611' } });
  // SCRAPE_PROXY_URLS as one list: every platform and both marketplaces leave through these two.
  exits = new ExitPools(parseProxyUrls(proxies.setting), { rpsPerExit: () => 50, sessionMaxRequests: 1_000, sessionMaxAgeMs: 600_000, cooldownMs: 60_000 });
  clients = createHttpClients();
  onDemandHttp = createHttpFetcher({ concurrency: 4, timeoutMs: LIMIT_MS, clients });
  pollHttp = createHttpFetcher({ concurrency: 8, timeoutMs: LIMIT_MS, clients });
  browser = createBrowserPages({ pages: 2, chromiumPath: CHROMIUM, timeoutMs: LIMIT_MS });
  pf01 = createPf01Clearances({ browser, http: pollHttp, baseUrl: sim.baseUrls.pf_01!, size: 1, makeTimeoutMs: LIMIT_MS });
  // As activities/index.ts builds them.
  const common = { browser, exits, baseUrls: sim.baseUrls, browserPages: 2, chromiumPath: CHROMIUM, attemptTimeoutMs: LIMIT_MS };
  onDemand = createScrapers({ ...common, http: onDemandHttp, clearances: { pf01, use: 'when-warm' } });
  polls = createScrapers({ ...common, http: pollHttp, clearances: { pf01, use: 'always' } });
});
afterAll(async () => {
  unsubscribe('http.server.request.start', onRequest);
  await Promise.all([onDemand?.close(), polls?.close(), pf01?.pool.close()]);
  clients?.close();
  await browser?.close();
  exits?.close();
  await proxies?.close();
  await sim?.close();
});

interface LoggedRequest {
  address: string;
  refused: boolean;
}

async function requestLog(since: number, platform: string): Promise<LoggedRequest[]> {
  const res = await fetch(`${sim.url}/_sim/requests?since=${since}&platform=${platform}`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { requests: LoggedRequest[] }).requests;
}

const proxyAddresses = () => proxies.proxies.map((p) => p.address);

describe('every scrape leaves through its session, proxied', () => {
  it.each(PLATFORM_KEYS)('%s: every request, on demand and polled, comes from a proxy', async (platform) => {
    const since = Date.now();
    const from = received.length;
    const ref = demoRef(platform);
    const onDemandData = await onDemand.scrape(ref);
    const polled = await polls.scrape(ref);
    expect(Object.keys(onDemandData.sections).length).toBeGreaterThan(0);
    expect(polled.sections).toEqual(onDemandData.sections);

    const logged = await requestLog(since, platform);
    // One scrape each at least; pf_01's on-demand page and polled data arms: three.
    expect(logged.length).toBeGreaterThanOrEqual(platform === 'pf_01' ? 3 : 2);
    expect(logged.filter((r) => r.refused)).toEqual([]);
    expect(new Set(logged.map((r) => r.address))).not.toContain(THIS_MACHINE);
    for (const r of logged) expect(proxyAddresses()).toContain(r.address);

    // Everything the server got for the platform, the requests its log leaves out included.
    const served = received.slice(from).filter((r) => r.path.startsWith(`/${platform}`));
    expect(served.length).toBeGreaterThanOrEqual(logged.length);
    for (const r of served) expect(proxyAddresses(), `${r.path} came from ${r.address}`).toContain(r.address);
  });

  it("pf_01's browser-made session is made through the exit its polls use", async () => {
    // Made by the poll above, through a proxy: its own pool, not the plain one of direct polls.
    const stats = pf01.pool.stats();
    expect(stats.made).toBeGreaterThan(0);
    expect(Object.keys(stats.exits ?? {})).not.toContain('direct');
    // Its front page and session API were asked from a proxy address too.
    const making = received.filter((r) => r.path === '/pf_01/' || r.path.startsWith('/pf_01/api/session'));
    expect(making.length).toBeGreaterThan(0);
    for (const r of making) expect(proxyAddresses()).toContain(r.address);
  });

  it('the tracker scrapes marketplaces A and B through a proxy too', async () => {
    const from = received.length;
    const tracker = createMarketplaceScrapers(onDemandHttp, { marketplace_a: sim.marketplaceUrls.marketplace_a, marketplace_b: sim.marketplaceUrls.marketplace_b }, exits);
    const a = await tracker.marketplaceA(DEMO_IDS.concertA);
    const b = await tracker.marketplaceB(a.external.marketplace_b_event_id!);
    expect(b.sections.length).toBeGreaterThan(0);
    const served = received.slice(from);
    expect(served.filter((r) => r.path.startsWith('/marketplace_a/')).length).toBeGreaterThan(0);
    expect(served.filter((r) => r.path.startsWith('/marketplace_b/')).length).toBeGreaterThan(0);
    for (const r of served) expect(proxyAddresses(), `${r.path} came from ${r.address}`).toContain(r.address);
  });

  it('the simulator saw this machine only on its control API, and both proxies carried scrapes', () => {
    expect(received.length).toBeGreaterThan(PLATFORM_KEYS.length * 2);
    expect(received.filter((r) => r.address === THIS_MACHINE)).toEqual([]);
    for (const address of proxyAddresses()) expect(received.some((r) => r.address === address)).toBe(true);
  });
});
