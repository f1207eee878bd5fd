// The warm browser keeps a client's cookies between its page visits, as a person's browser does
// (src/scrapers/browser-profiles.ts): against the real simulator with every wall on, over HTTPS,
// in a real Debian Chromium. Ground truth is each wall's own count of the bot cookies it gave and
// of what it refused, with a bound of a few cookies per address per minute, as real walls keep:
// visits that each began without cookies were each given one, and the wall refused the rest.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORMS } from '../../src/platform/registry.ts';
import { createBrowserPages, type BrowserPages } from '../../src/scrapers/browser-pages.ts';
import { BrowserProfile, BrowserProfiles } from '../../src/scrapers/browser-profiles.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import type { WalledSite } from '../../src/simulator/walls/wall.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const LIMIT_MS = 20_000;
/** Bot cookies a wall gives this machine per minute here (30 by default). */
const BOUND = 3;

let sim: Simulator;
let browser: BrowserPages;

beforeAll(async () => {
  sim = await startSimulator({ walls: 'on' });
  browser = createBrowserPages({ pages: 4, chromiumPath: CHROMIUM, timeoutMs: LIMIT_MS, caFile: sim.caFile });
  await browser.warm();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await sim?.close();
});

function wall(site: WalledSite): { issued: number; rotated: number; refused: number; last: string } {
  const stats = sim.walls.site(site).stats();
  return { issued: stats.cookie.issued, rotated: stats.cookie.rotated, refused: Object.values(stats.refused).reduce((a, b) => a + b, 0), last: JSON.stringify(stats.last_refusal) };
}

/** The demo event's page of `site` (what pf_01's scrapes render). */
function eventPage(site: 'pf_01' | 'pf_02' | 'pf_03' | 'pf_04' | 'pf_05'): string {
  return `${sim.httpsBaseUrls[site]}/event/${encodeURIComponent(PLATFORMS[site].event_id_example)}`;
}

/** One visit: the document's title, or the failure's message. */
function visit(url: string, options: { isolated?: boolean } = {}): Promise<string> {
  return browser.withPage(url, (page) => page.title(), options).catch((err: unknown) => `failed: ${(err as Error).message}`);
}

describe('a page visit starts with the cookies its client was given before', () => {
  it(`twelve visits in a row are one visitor: the wall gives one bot cookie and refuses nothing (bound ${BOUND} a minute)`, async () => {
    sim.walls.site('pf_01').configure({ cookieIssuesPerAddressPerMinute: BOUND });
    const before = wall('pf_01');
    const outcomes: string[] = [];
    for (let i = 0; i < 12; i++) outcomes.push(await visit(eventPage('pf_01')));
    const after = wall('pf_01');
    expect(outcomes.filter((o) => o.startsWith('failed')), after.last).toEqual([]);
    expect(after.refused - before.refused, after.last).toBe(0);
    // Visits that began without cookies would have been given one each (and refused past the bound).
    expect(after.issued - before.issued).toBe(1);
  }, 120_000);

  it('visits at once each take a profile of their own (a session cookie is bound to one page), and later visits reuse them', async () => {
    // pf_01 keeps one pending challenge per session cookie: two pages loaded at once with one
    // cookie spoil each other's data (test/scrapers/pf_01.test.ts's parallel scrapes). So four at
    // once are four visitors, and the rounds after them are the same four.
    for (const site of ['pf_02', 'pf_03'] as const) {
      sim.walls.site(site).configure({ cookieIssuesPerAddressPerMinute: 6 });
      const before = wall(site);
      for (let round = 0; round < 4; round++) {
        const outcomes = await Promise.all([0, 1, 2, 3].map(() => visit(eventPage(site))));
        expect(outcomes.filter((o) => o.startsWith('failed')), `${site}: ${wall(site).last}`).toEqual([]);
      }
      const after = wall(site);
      expect(after.refused - before.refused, after.last).toBe(0);
      expect(after.issued - before.issued, site).toBeLessThanOrEqual(4);
      expect(after.issued - before.issued, site).toBeGreaterThanOrEqual(1);
    }
  }, 120_000);

  it('an isolated visit (a pf_01 clearance) is a new browser: a cookie of its own, and it leaves the client its own', async () => {
    sim.walls.site('pf_01').configure({ cookieIssuesPerAddressPerMinute: null });
    const before = wall('pf_01');
    for (let i = 0; i < 3; i++) expect(await visit(eventPage('pf_01'), { isolated: true })).not.toMatch(/^failed/);
    const between = wall('pf_01');
    expect(between.issued - before.issued).toBe(3);
    // The client's own visits go on with the cookie they had before.
    expect(await visit(eventPage('pf_01'))).not.toMatch(/^failed/);
    expect(wall('pf_01').issued).toBe(between.issued);
  }, 120_000);

  it('a cookie the wall rotates during the visits is kept: every visit passes across a dozen rotations', async () => {
    // Rotated every 300 ms, the old value good for 200 ms more: a profile that kept only its first
    // cookie would be refused as stale from the second visit on.
    sim.walls.site('pf_01').configure({ cookieIssuesPerAddressPerMinute: BOUND, cookieRotateMs: 300, cookieGraceMs: 200 });
    try {
      const before = wall('pf_01');
      for (let i = 0; i < 10; i++) {
        expect(await visit(eventPage('pf_01')), wall('pf_01').last).not.toMatch(/^failed/);
        await new Promise((resolve) => setTimeout(resolve, 400));
      }
      const after = wall('pf_01');
      expect(after.refused - before.refused, after.last).toBe(0);
      expect(after.rotated - before.rotated).toBeGreaterThanOrEqual(5);
      expect(after.issued - before.issued).toBe(0);
    } finally {
      sim.walls.site('pf_01').reset();
    }
  }, 120_000);
});

describe('BrowserProfiles', () => {
  const SITE = new URL('https://127.0.0.1:8443/pf_01/');

  it('hands a client the profile it gave back last, a new one when it has none idle', () => {
    const profiles = new BrowserProfiles();
    const a = profiles.take('client', SITE);
    const b = profiles.take('client', SITE);
    expect(b).not.toBe(a);
    profiles.giveBack('client', a);
    profiles.giveBack('client', b);
    expect(profiles.take('client', SITE)).toBe(b);
    expect(profiles.take('client', SITE)).toBe(a);
    // Another client never gets them.
    profiles.giveBack('client', a);
    expect(profiles.take('other', SITE)).not.toBe(a);
  });

  it('keeps at most its bound of idle profiles, forgetting those of the least recently used clients first', () => {
    const profiles = new BrowserProfiles(3);
    const [a1, a2, b1, c1] = [new BrowserProfile(), new BrowserProfile(), new BrowserProfile(), new BrowserProfile()];
    profiles.giveBack('a', a1);
    profiles.giveBack('b', b1);
    profiles.giveBack('a', a2);
    profiles.giveBack('c', c1);
    expect(profiles.size).toBe(3);
    // b is the client used least recently (a gave one back after it): its profile went.
    expect(profiles.take('b', SITE)).not.toBe(b1);
    expect(profiles.take('a', SITE)).toBe(a2);
    expect(profiles.take('a', SITE)).toBe(a1);
    expect(profiles.take('c', SITE)).toBe(c1);
    expect(profiles.size).toBe(0);
  });

  it("prefers, of a client's idle profiles, the last given back that has cookies for the site", () => {
    const profiles = new BrowserProfiles();
    const [pf01, pf02, none] = [new BrowserProfile(), new BrowserProfile(), new BrowserProfile()];
    const cookie = (path: string) => ({ name: '__cf_bm', value: path, domain: '127.0.0.1', path, expires: -1, httpOnly: true, secure: true, sameSite: 'Lax' as const });
    pf01.keep([cookie('/pf_01')]);
    pf02.keep([cookie('/pf_02')]);
    for (const p of [pf01, pf02, none]) profiles.giveBack('c', p);
    expect(profiles.take('c', new URL('https://127.0.0.1:8443/pf_01/event/X'))).toBe(pf01);
    // No idle profile knows pf_03: the last given back.
    expect(profiles.take('c', new URL('https://127.0.0.1:8443/pf_03/'))).toBe(none);
    // A path that only starts like the cookie's is another site.
    expect(profiles.take('c', new URL('https://127.0.0.1:8443/pf_020/'))).toBe(pf02);
  });

  it('hands out only the cookies still alive', () => {
    const profile = new BrowserProfile();
    const base = { domain: '127.0.0.1', path: '/pf_01', httpOnly: true, secure: true, sameSite: 'Lax' as const };
    profile.keep([
      { ...base, name: 'session', value: '1', expires: -1 },
      { ...base, name: 'alive', value: '2', expires: 2_000 },
      { ...base, name: 'dead', value: '3', expires: 1_000 },
    ]);
    expect(profile.current(1_500_000).map((c) => c.name)).toEqual(['session', 'alive']);
  });
});
