// pf_01's not-found rests on the event page and both data arms (issue 38, "Retirement needs the
// page and every arm to agree"), against the real simulator and a real Debian Chromium, on both
// ways in: over HTTP with a clearance (the polls), and through the rendered page (on-demand
// scrapes without a clearance). A `not_found` starts the retirement clock (monitors/target-status.ts);
// `upstream` says nothing about the event and leaves it alone. The simulator makes the page and
// the arms disagree with the event's `page` and `arms` (docs/simulator.md).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { parseEventRef, type EventRef } from '../../src/platform/event-ref.ts';
import { createBrowserPages, type BrowserPages } from '../../src/scrapers/browser-pages.ts';
import { createHttpFetcher, type HttpFetcher } from '../../src/scrapers/http-fetcher.ts';
import { createPf01 } from '../../src/scrapers/platforms/pf_01.ts';
import { createPf01Clearances, type Pf01Clearances } from '../../src/scrapers/platforms/pf_01-clearance.ts';
import { ScrapeFailure, type PageFetcher, type ScrapeData } from '../../src/scrapers/types.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import { simEventInputSchema } from '../../src/simulator/state.ts';
import { withFetchers, type BoundAdapter } from './platform-harness.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const TIMEOUT_MS = 4_000;

let sim: Simulator;
let browser: BrowserPages;
let http: HttpFetcher;
let pool: Pf01Clearances;
/** The rendered page: no clearances at all. */
let viaPage: BoundAdapter;
/** Over HTTP with a clearance, as the monitors poll. */
let viaHttp: BoundAdapter;

const noHttp: PageFetcher = {
  html: () => Promise.reject(new Error('the page path must not fetch over HTTP')),
  json: () => Promise.reject(new Error('the page path must not fetch over HTTP')),
};

let serial = 0;
function putEvent(input: Partial<z.input<typeof simEventInputSchema>>): EventRef {
  const key = `Pf01Gone${String(++serial).padStart(8, '0')}`;
  sim.store.put('pf_01', key, simEventInputSchema.parse({ region: 'uk', sections: [{ name: 'Floor', price: 40, stock: 12 }], ...input }));
  return refOf(key);
}

function refOf(key: string): EventRef {
  const parsed = parseEventRef('pf_01', key, 'uk');
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.ref;
}

/** The scrape's data, or the kind and message of its ScrapeFailure. */
async function outcome(promise: Promise<ScrapeData>): Promise<ScrapeData | { failure: string; message: string }> {
  return promise.then(
    (data) => data,
    (err: unknown) => {
      if (err instanceof ScrapeFailure) return { failure: err.kind, message: err.message };
      throw err;
    },
  );
}

beforeAll(async () => {
  sim = await startSimulator({ empty: true });
  browser = createBrowserPages({ pages: 2, chromiumPath: CHROMIUM, timeoutMs: TIMEOUT_MS });
  http = createHttpFetcher({ concurrency: 16, timeoutMs: TIMEOUT_MS });
  pool = createPf01Clearances({ browser, http, baseUrl: sim.baseUrls.pf_01!, size: 2, makeTimeoutMs: TIMEOUT_MS * 2, challengeWaitMs: TIMEOUT_MS / 2 });
  viaPage = withFetchers(createPf01({ baseUrl: sim.baseUrls.pf_01! }), { http: noHttp, browser });
  viaHttp = withFetchers(createPf01({ baseUrl: sim.baseUrls.pf_01! }), { http: noHttp, browser, clearances: { pf01: pool, use: 'always' } });
  await browser.warm();
});

afterAll(async () => {
  await pool?.pool.close();
  http?.close();
  await browser?.close();
  await sim?.close();
});

const ways = [
  ['over HTTP with a clearance', () => viaHttp],
  ['through the rendered page', () => viaPage],
] as const;

describe.each(ways)('pf_01 %s: not found only when the page and both arms agree', (_way, adapter) => {
  it('answers not_found when the page and both arms answer 404 (the event gone, an unknown event)', async () => {
    for (const ref of [putEvent({ page: 'not_found', arms: { v1: 'not_found', v2: 'not_found' } }), putEvent({ behaviour: 'not_found' }), refOf('NoSuchEvent00001')]) {
      expect(await outcome(adapter().scrape(ref)), ref.key).toMatchObject({ failure: 'not_found' });
    }
  });

  it('does not answer not_found when the page answers 404 while the arms answer', async () => {
    const answering = await outcome(adapter().scrape(putEvent({ page: 'not_found' })));
    expect(answering).not.toMatchObject({ failure: 'not_found' });
    // Over HTTP the arms are the inventory: the page is not asked. The page path says why not.
    if ('failure' in answering) expect(answering).toMatchObject({ failure: 'upstream', message: expect.stringMatching(/event page answered 404 but its data arms did not agree.*v2 seats answered 200.*v1 .*answered 200/) });
    else expect(answering.sections.Floor).toBeDefined();
    // One arm gone, one down, beside the page's 404: still not the event's end.
    for (const arms of [{ v1: 'not_found', v2: 'ok' }, { v1: 'error', v2: 'not_found' }] as const) {
      const seen = await outcome(adapter().scrape(putEvent({ page: 'not_found', arms })));
      expect(seen, JSON.stringify(arms)).not.toMatchObject({ failure: 'not_found' });
    }
  });

  it('does not answer not_found when both arms answer 404 while the page answers', async () => {
    const seen = await outcome(adapter().scrape(putEvent({ arms: { v1: 'not_found', v2: 'not_found' } })));
    expect(seen).toMatchObject({ failure: 'upstream' });
  });
});

describe('pf_01 over HTTP: asking the event page', () => {
  it('names what disagreed: both arms 404, the page 200', async () => {
    const seen = await outcome(viaHttp.scrape(putEvent({ arms: { v1: 'not_found', v2: 'not_found' } })));
    expect(seen).toMatchObject({ failure: 'upstream', message: expect.stringMatching(/data arms answered 404 and 404 but the event page answered 200/) });
  });

  it('costs one page load only when both arms answer 404, and leaves the other polls and their clearances alone', async () => {
    const live = putEvent({});
    const gone = putEvent({ page: 'not_found', arms: { v1: 'not_found', v2: 'not_found' } });
    // Both clearances made first, so the polls below go round both.
    await expect.poll(async () => (await viaHttp.scrape(live), pool.pool.stats().made), { timeout: 10_000, interval: 50 }).toBe(2);
    const issued0 = sim.protection.stats().sessions_issued;
    const refused0 = pool.pool.stats().refused;
    const hits = () => sim.store.get('pf_01', gone.key)!.hits;
    const hits0 = hits();
    const loads0 = browser.stats().visits;
    await expect(viaHttp.scrape(live)).resolves.toMatchObject({ sections_type: 'SeatMapSections' });
    expect(browser.stats().visits).toBe(loads0);
    // Two arms and the page, loaded once.
    await expect(viaHttp.scrape(gone)).rejects.toMatchObject({ kind: 'not_found' });
    expect(hits() - hits0).toBe(3);
    expect(browser.stats().visits - loads0).toBe(1);
    // The page's answer sets a session cookie of its own (pf01_sid): it must not reach the
    // clearances' polls (over the HTTP fetcher it did: its jar sent it over theirs, all refused).
    for (let i = 0; i < 6; i++) await expect(viaHttp.scrape(live)).resolves.toMatchObject({ sections_type: 'SeatMapSections' });
    expect(pool.pool.stats().refused - refused0).toBe(0);
    expect(sim.protection.stats().sessions_issued).toBe(issued0);
  });
});

describe('pf_01 through the rendered page: asking the arms of a 404 page', () => {
  it('asks them with the session the platform\'s own script obtained, wherever it puts the token', async () => {
    try {
      for (const settings of [{ challenge: 'changed' }, { challenge: 'changed', token_in: 'cookie' }] as const) {
        sim.protection.configure(settings);
        const refused0 = sim.protection.stats().refused;
        // Authorized (each arm answered its data, not the challenge's 403), and judged.
        const answering = await outcome(viaPage.scrape(putEvent({ page: 'not_found' })));
        expect(answering, JSON.stringify(settings)).toMatchObject({ failure: 'upstream', message: expect.stringMatching(/v2 seats answered 200; v1 .*answered 200/) });
        await expect(viaPage.scrape(putEvent({ page: 'not_found', arms: { v1: 'not_found', v2: 'not_found' } }))).rejects.toMatchObject({ kind: 'not_found' });
        expect(sim.protection.stats().refused, JSON.stringify(settings)).toBe(refused0);
      }
    } finally {
      sim.protection.configure({ challenge: 'standard', token_in: 'header' });
    }
  });
});
