// The HTTP fetcher (http-fetcher.ts, on wreq-js) against the simulator's bot walls with every check
// on (issue 37): the TLS fingerprint against the browser its user agent claims, HTTP/2 and its
// SETTINGS, Chrome's header order and client hints, and a bot cookie rotated every few hundred ms.
// Each of its identities (Windows, macOS, Linux) passes, directly, through a session over an HTTP
// proxy, and across several cookie rotations; the simulator's certificate is trusted through its
// CA file (SCRAPE_CA_FILE's path), never by turning verification off.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitPool } from '../../src/scrapers/egress/exit-pool.ts';
import { parseProxyUrl } from '../../src/scrapers/egress/proxy-urls.ts';
import { chromeHeaderSet } from '../../src/scrapers/egress/chrome-identity.ts';
import { ScrapeSession } from '../../src/scrapers/egress/scrape-session.ts';
import { createHttpFetcher, type HttpFetcher } from '../../src/scrapers/http-fetcher.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import { knownFingerprint } from '../../src/simulator/tls/known-fingerprints.ts';
import { REFUSAL_REASONS } from '../../src/simulator/walls/wall.ts';
import { startLoopbackProxies, type LoopbackProxies } from '../support/loopback-proxies.ts';

let sim: Simulator;
let fetcher: HttpFetcher;
let proxies: LoopbackProxies;
const ja4s: string[] = [];
const SETTINGS = { rpsPerExit: 100, sessionMaxRequests: 1_000, sessionMaxAgeMs: 3_600_000, cooldownMs: 1_000 };
/** The demo event every platform is seeded with (the registry's example). */
const EVENT = '/e/summer-open-air-4411';

/** A random() that draws the system at `at` of the weights (0: Windows, 0.7: macOS, 0.95: Linux). */
const drawing = (at: number) => {
  const values = [at, 0];
  return () => values.shift() ?? 0;
};
const SYSTEMS = [
  ['Windows', 0],
  ['macOS', 0.7],
  ['Linux', 0.95],
] as const;

beforeAll(async () => {
  sim = await startSimulator({ walls: 'on' });
  sim.front.on('hello', (facts: { ja4: string }) => ja4s.push(facts.ja4));
  fetcher = createHttpFetcher({ concurrency: 4, timeoutMs: 10_000, caFile: sim.caFile });
  proxies = await startLoopbackProxies(1);
});
afterAll(async () => {
  fetcher?.close();
  await proxies?.close();
  await sim?.close();
});

function refusals(): number {
  const stats = sim.walls.site('pf_03').stats();
  return REFUSAL_REASONS.reduce((sum, reason) => sum + stats.refused[reason], 0);
}

function lastRefusal(): string {
  return JSON.stringify(sim.walls.site('pf_03').stats().last_refusal);
}

describe('through the walls, every check on', () => {
  it.each(SYSTEMS)('%s: a direct request, a session through an HTTP proxy, and 8 cookie rotations all pass', async (system, at) => {
    const walls = sim.walls.site('pf_03');
    walls.configure({ cookieRotateMs: 150, cookieGraceMs: 100 });
    const url = `${sim.httpsBaseUrls.pf_03}${EVENT}`;
    const passedBefore = walls.stats().passed;

    // A session of that system, directly and through the proxy.
    const pool = new ExitPool('pf_03', [parseProxyUrl(proxies.proxies[0]!.url)], SETTINGS);
    const direct = new ScrapeSession(`direct ${system}`, new ExitPool('pf_03', [], SETTINGS).exits[0]!, chromeHeaderSet(drawing(at)), Date.now());
    const proxied = new ScrapeSession(`proxied ${system}`, pool.exits[0]!, chromeHeaderSet(drawing(at)), Date.now());
    expect(direct.headers['sec-ch-ua-platform']).toBe(`"${system}"`);
    const tunnels = proxies.proxies[0]!.stats().connect;
    for (const session of [direct, proxied]) {
      const page = await fetcher.html(url, { session });
      expect(page.status, `${session.id}: ${lastRefusal()}`).toBe(200);
      expect(page.$('h1').text()).toContain('Demo event');
    }
    expect(proxies.proxies[0]!.stats().connect).toBeGreaterThan(tunnels);

    // The bot cookie rotates every 150 ms and the old one is refused 100 ms later: each answer's
    // Set-Cookie must be kept and sent on the next request.
    for (const session of [direct, proxied]) {
      const values = new Set<string>();
      for (let i = 0; i < 8; i++) {
        const page = await fetcher.html(url, { session });
        expect(page.status, `${session.id} poll ${i}: ${lastRefusal()}`).toBe(200);
        const bot = new RegExp(`${walls.stats().cookie.name}=[^;]+`).exec(session.requestHeaders('html', url).cookie ?? '')?.[0];
        if (bot) values.add(bot);
        await new Promise((resolve) => setTimeout(resolve, 120));
      }
      expect(values.size, session.id).toBeGreaterThanOrEqual(3);
    }
    expect(refusals(), lastRefusal()).toBe(0);
    expect(walls.stats().passed - passedBefore).toBe(18);
  });

  it('without a session too (its origin’s default identity), and every handshake was a real Chrome’s', async () => {
    const page = await fetcher.html(`${sim.httpsBaseUrls.pf_03}${EVENT}`);
    expect(page.status).toBe(200);
    expect(refusals(), lastRefusal()).toBe(0);
    expect(ja4s.length).toBeGreaterThan(0);
    for (const ja4 of new Set(ja4s)) expect(knownFingerprint('chrome', ja4), ja4).toBe(true);
  });
});
