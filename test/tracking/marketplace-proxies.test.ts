// The tracker's marketplace scrapers through proxies (issue 27), against the real simulator and
// two loopback proxy-chain proxies: a scrape goes out through a proxy as a session, a marketplace's
// challenge page (status 200) is a block and never a page, and a scrape whose proxy fails moves to
// the other at once; without proxies the challenge page is still caught.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitPools } from '../../src/scrapers/egress/exit-pool.ts';
import { parseProxyUrls } from '../../src/scrapers/egress/proxy-urls.ts';
import { createHttpFetcher, type HttpFetcher } from '../../src/scrapers/http-fetcher.ts';
import { createMarketplaceScrapers } from '../../src/scrapers/marketplaces/index.ts';
import { DEMO_IDS } from '../../src/simulator/marketplaces/demo.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import { startLoopbackProxies, type LoopbackProxies } from '../support/loopback-proxies.ts';
import { hits, putEvent } from '../support/simulator.ts';
import { failureOf } from '../scrapers/platform-harness.ts';

let sim: Simulator;
let http: HttpFetcher;
let proxies: LoopbackProxies;

beforeAll(async () => {
  sim = await startSimulator();
  http = createHttpFetcher({ concurrency: 4, timeoutMs: 15_000 });
  proxies = await startLoopbackProxies(2, { credentials: { username: 'tracker', password: 'tracker-pw-2207' } });
});
afterAll(async () => {
  http?.close();
  await proxies?.close();
  await sim?.close();
});

function exitsFor(setting: string): ExitPools {
  return new ExitPools(parseProxyUrls(setting), { rpsPerExit: () => 5, sessionMaxRequests: 100, sessionMaxAgeMs: 60_000, cooldownMs: 60_000 });
}

const urls = () => ({ marketplace_a: sim.marketplaceUrls.marketplace_a, marketplace_b: sim.marketplaceUrls.marketplace_b });


describe('the tracker through proxies', () => {
  it('scrapes marketplaces A and B through a proxy of the marketplace group, as a session', async () => {
    const exits = exitsFor(`marketplace_a,marketplace_b=${proxies.setting}`);
    try {
      const scrapers = createMarketplaceScrapers(http, urls(), exits);
      const before = proxies.proxies.map((p) => p.stats().http);
      const a = await scrapers.marketplaceA(DEMO_IDS.concertA);
      expect(a.id).toBe('E-104729');
      const b = await scrapers.marketplaceB(a.external.marketplace_b_event_id!);
      expect(b.sections.length).toBeGreaterThan(0);
      const after = proxies.proxies.map((p) => p.stats().http);
      expect(after.reduce((s, n) => s + n, 0) - before.reduce((s, n) => s + n, 0)).toBe(2);
      const pool = exits.for('marketplace_a')!;
      expect(pool.proxied).toBe(true);
      expect(pool.exits.reduce((s, e) => s + e.requests, 0)).toBe(1);
      // Platforms named by no group stay direct.
      expect(exits.for('pf_03')!.proxied).toBe(false);
    } finally {
      exits.close();
    }
  });

  it("reads a marketplace's challenge page (status 200) as a block, through a proxy or not", async () => {
    await putEvent(sim, 'marketplace_a', 'E-7301', { behaviour: 'challenge' });
    const direct = createMarketplaceScrapers(http, urls());
    const plain = await failureOf(direct.marketplaceA('E-7301'));
    expect(plain).toMatchObject({ kind: 'blocked', refusedByPlatform: true });
    expect(plain.message).toMatch(/Cloudflare challenge page/);
    const exits = exitsFor(`marketplace_a=${proxies.setting}`);
    try {
      const scrapers = createMarketplaceScrapers(http, urls(), exits);
      const hitsBefore = await hits(sim, 'marketplace_a', 'E-7301');
      const proxied = await failureOf(scrapers.marketplaceA('E-7301'));
      expect(proxied.kind).toBe('blocked');
      // Both proxies were tried (one more after the first refusal), and the refusal is charged to
      // the event, which never passed anywhere: no proxy cools down (issue 36).
      expect(await hits(sim, 'marketplace_a', 'E-7301')).toBe(hitsBefore + 2);
      const stats = exits.for('marketplace_a')!.stats();
      expect(stats.healthy).toBe(2);
      expect(stats.targets_backing_off).toBe(1);
      // Asked again during its back-off: answered from it, without a request.
      expect((await failureOf(scrapers.marketplaceA('E-7301'))).kind).toBe('blocked');
      expect(await hits(sim, 'marketplace_a', 'E-7301')).toBe(hitsBefore + 2);
    } finally {
      exits.close();
    }
  });

  it('moves to the next proxy at once when one fails, sets it aside once events that pass elsewhere show it, and never names its credentials', async () => {
    const dead = 'http://tracker:tracker-pw-2207@127.0.0.1:1';
    const exits = exitsFor(`marketplace_a=${dead},${proxies.proxies[1]!.url}`);
    try {
      const scrapers = createMarketplaceScrapers(http, urls(), exits);
      // The pool picks the dead proxy first (in turn), then the live one: the page is read.
      const page = await scrapers.marketplaceA(DEMO_IDS.concertA);
      expect(page.id).toBe('E-104729');
      expect(exits.for('marketplace_a')!.stats().healthy).toBe(2);
      // Each event that fails through it and passes through the other is evidence against it
      // (refusals.ts): the third sets it aside.
      for (const id of ['E-7402', 'E-7403']) {
        await putEvent(sim, 'marketplace_a', id, {});
        await scrapers.marketplaceA(id);
      }
      const stats = exits.for('marketplace_a')!.stats();
      expect(stats.exits.map((e) => [e.exit, e.healthy])).toEqual([
        ['http://127.0.0.1:1', false],
        [proxies.proxies[1]!.url.replace(/\/\/[^@]*@/, '//'), true],
      ]);
      expect(JSON.stringify(stats)).not.toContain('tracker-pw-2207');
    } finally {
      exits.close();
    }
  });
});
