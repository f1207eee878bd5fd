// Parity of the two HTTP fetchers: every HTTP platform adapter (pf_02..pf_11, and the second
// strategies: pf_04's HTML page, pf_07's UK monitor, pf_09 in euros) scraped through
// createScrapers on the lean fetch-based fetcher (fetch-pages.ts) and on its own crawlee fetcher
// (http-pages.ts) gives deep-equal ScrapeData for the same event on the same in-process
// simulator, and the same ScrapeFailure (kind, message, Retry-After) for every way the simulator
// can fail a page: not_found, a 503 (`error`, or one transient failure), malformed, blocked (429
// or 403, with or without a Retry-After), an event of another region, an event never put, and a
// page that never answers. pf_01 is left out: it scrapes through the browser only, never through
// the PageFetcher, so both scrapers would share the very same code path. Also: html() builds the
// same Cheerio document as crawlee's CheerioCrawler for markup that parsers disagree on.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventRef } from '../../src/platform/event-ref.ts';
import { createBrowserPages, type BrowserPages } from '../../src/scrapers/browser-pages.ts';
import { createFetchPages } from '../../src/scrapers/fetch-pages.ts';
import { createHttpPages } from '../../src/scrapers/http-pages.ts';
import { createScrapers, type Scrapers } from '../../src/scrapers/index.ts';
import type { ScrapeData } from '../../src/scrapers/types.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import { putEvent } from '../support/simulator.ts';
import { inventory } from './inventory-arbitrary.ts';
import { eventIdOf, failureOf, HTTP_PLATFORMS, keyOf, refOf, regionsOf, type HttpPlatform } from './platform-harness.ts';


/** How the event answers: mostly its page, else each way the simulator fails one. */
const answering = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ case: 'ok', fields: {} }) },
  { weight: 1, arbitrary: fc.constant({ case: 'not_found', fields: { behaviour: 'not_found' } }) },
  { weight: 1, arbitrary: fc.constant({ case: 'error', fields: { behaviour: 'error' } }) },
  { weight: 1, arbitrary: fc.constant({ case: 'transient 503', fields: { failures: 1 } }) },
  { weight: 1, arbitrary: fc.constant({ case: 'malformed', fields: { behaviour: 'malformed' } }) },
  {
    weight: 2,
    arbitrary: fc
      .record({ blocked_status: fc.constantFrom(429, 403), retry_after_s: fc.option(fc.integer({ min: 0, max: 86_400 }), { nil: null }) })
      .map((fields) => ({ case: 'blocked', fields: { behaviour: 'blocked', ...fields } })),
  },
  { weight: 1, arbitrary: fc.constant({ case: 'other region', fields: {} }) },
  { weight: 1, arbitrary: fc.constant({ case: 'never put', fields: {} }) },
);

/** Platform, region, and the first event number of its cases (apart: a key is per platform, not per region). */
const FLAVOURS: [HttpPlatform, string, number][] = [...HTTP_PLATFORMS.map((p): [HttpPlatform, string] => [p, regionsOf(p).home]), ['pf_04', 'it'], ['pf_07', 'uk'], ['pf_09', 'sk']].map(
  ([p, region], i): [HttpPlatform, string, number] => [p as HttpPlatform, region as string, 1_000 * (i + 1)],
);

const RUNS = Number(process.env.FETCH_PARITY_RUNS ?? 30);

type Outcome = { ok: true; data: ScrapeData } | { ok: false; kind: string; message: string; retryAfterMs: number | null };

async function outcomeOf(scrape: Promise<ScrapeData>): Promise<Outcome> {
  try {
    return { ok: true, data: await scrape };
  } catch (err) {
    const failure = await failureOf(Promise.reject(err));
    return { ok: false, kind: failure.kind, message: failure.message, retryAfterMs: failure.retryAfterMs };
  }
}

let sim: Simulator;
let browser: BrowserPages;
let lean: Scrapers;
let crawled: Scrapers;
/** Outcomes seen over the whole file, by case and result: every case must have been met. */
const tally = new Map<string, number>();

const settings = (s: Simulator, attemptTimeoutMs: number) => ({ baseUrls: s.baseUrls, browserPages: 1, chromiumPath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', attemptTimeoutMs, browser });

/** Puts the event (unless `never put`); returns the ref to scrape it with. */
async function put(platform: HttpPlatform, n: number, region: string, body: Record<string, unknown>, how: string): Promise<EventRef> {
  const other = regionsOf(platform).other;
  const eventId = eventIdOf(platform, keyOf(platform, n), region);
  if (how !== 'never put') await putEvent(sim, platform, eventId, { ...body, region: how === 'other region' ? (other === region ? 'zz' : other) : region });
  return refOf(platform, eventId, region);
}

beforeAll(async () => {
  sim = await startSimulator({ empty: true });
  // Never launched: no adapter here asks for a page (pf_01 is not scraped).
  browser = createBrowserPages({ pages: 1, chromiumPath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', timeoutMs: 10_000 });
  lean = createScrapers({ ...settings(sim, 10_000), http: createFetchPages({ concurrency: 8, timeoutMs: 10_000 }) });
  crawled = createScrapers({ ...settings(sim, 10_000), concurrency: 8 });
  // crawlee's first request of the process loads its HTTP client and starts its crawlers: once
  // through each lane (pf_03 reads HTML, pf_05 JSON) before the cases are timed.
  for (const platform of ['pf_03', 'pf_05'] as const) {
    const ref = await put(platform, 1, regionsOf(platform).home, { sections: [] }, 'ok');
    await Promise.all([crawled.scrape(ref), lean.scrape(ref)]);
  }
});
afterAll(async () => {
  await crawled?.close();
  await lean?.close();
  await browser?.close();
  await sim?.close();
});

describe('the same events give the same ScrapeData or ScrapeFailure through either fetcher', () => {
  it.each(FLAVOURS)('%s in region %s', async (platform, region, first) => {
    let n = first;
    await fc.assert(
      fc.asyncProperty(inventory, answering, async (input, how) => {
        const body = { ...input, ...how.fields };
        const ref = await put(platform, n++, region, body, how.case);
        const viaCrawlee = await outcomeOf(crawled.scrape(ref));
        // Put again: a transient failure was used up by the first scrape.
        if (how.case !== 'never put') await put(platform, n - 1, region, body, how.case);
        const viaFetch = await outcomeOf(lean.scrape(ref));
        expect(viaFetch).toEqual(viaCrawlee);
        const key = `${how.case}: ${viaCrawlee.ok ? 'data' : viaCrawlee.kind}`;
        tally.set(key, (tally.get(key) ?? 0) + 1);
      }),
      { numRuns: RUNS },
    );
  });

  it('met every case, each failing as it should', () => {
    const seen = Object.fromEntries([...tally].sort());
    // Each case has been drawn, and only ever with the outcome it should have.
    const expected: Record<string, string> = {
      ok: 'data',
      not_found: 'not_found',
      error: 'upstream',
      'transient 503': 'upstream',
      malformed: 'malformed',
      blocked: 'blocked',
      'other region': 'not_found',
      'never put': 'not_found',
    };
    for (const [how, outcome] of Object.entries(expected)) expect(seen[`${how}: ${outcome}`], `${how} → ${outcome} in ${JSON.stringify(seen)}`).toBeGreaterThan(0);
    // Most platforms' broken page only drops a field of each offer (a price, say): with nothing
    // listed, or nothing that needs the field, it still reads as a page.
    const allowed = [...Object.entries(expected).map(([how, outcome]) => `${how}: ${outcome}`), 'malformed: data'];
    for (const key of Object.keys(seen)) expect(allowed, JSON.stringify(seen)).toContain(key);
  });
});

// A page that never answers, every platform at once: both fetchers give up at their limit.
describe('a page that never answers', () => {
  let leanShort: Scrapers;
  let crawledShort: Scrapers;
  beforeAll(() => {
    leanShort = createScrapers({ ...settings(sim, 400), http: createFetchPages({ concurrency: 16, timeoutMs: 400 }) });
    crawledShort = createScrapers({ ...settings(sim, 400), concurrency: 16 });
  });
  afterAll(async () => {
    await crawledShort?.close();
    await leanShort?.close();
  });

  it.concurrent.each(HTTP_PLATFORMS)('%s: attempt_timeout through both', async (platform) => {
    const ref = await put(platform, 1, regionsOf(platform).home, { sections: [], behaviour: 'hang' }, 'hang');
    const [viaCrawlee, viaFetch] = await Promise.all([outcomeOf(crawledShort.scrape(ref)), outcomeOf(leanShort.scrape(ref))]);
    expect(viaCrawlee).toMatchObject({ ok: false, kind: 'attempt_timeout' });
    expect(viaFetch).toEqual(viaCrawlee);
  });
});

// Markup on which htmlparser2 and parse5 (cheerio's default) build different trees: html() must
// build crawlee's (CheerioCrawler parses with htmlparser2), or a selector would match differently.
describe('html() parses like crawlee’s CheerioCrawler', () => {
  const PAGES: Record<string, string> = {
    '/table': '<table class="offers"><tr><td>A</td></tr><p class="stray">between rows</p><tr><td>B</td></tr></table>',
    '/unclosed': '<div id="a"><p>one<p>two<div id="b">three</div><li>x<li>y</ul><span>end',
    '/script': '<html><head><script>var s = "</b><td class=\'x\'>";</script></head><body><noscript><p class="n">no</p></noscript><template><p class="t">t</p></template></body></html>',
    '/entities': '<p class="e">&amp; &lt;x&gt; &euro; &nbsp;&copy &#x41;&#66; &notanentity; &ampx</p><p title="&quot;q&quot; &amp;">attr</p>',
    '/self-closing': '<div class="s"/><span class="after">after</span><br/><img src="x"><custom-tag a="1"/>inside?',
    '/xhtml': '<?xml version="1.0"?><!DOCTYPE html><html xmlns="http://www.w3.org/1999/xhtml"><body><svg><circle r="1"/></svg><math><mi>x</mi></math></body></html>',
    '/utf8': '\uFEFF<p class="u">Zürich 東スタンド ✓ 😀</p>',
  };
  let server: http.Server;
  let base: string;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(PAGES[req.url ?? ''] ?? '');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('builds the same document for each page', async () => {
    const fetcher = createFetchPages({ concurrency: 4, timeoutMs: 10_000 });
    const crawler = createHttpPages({ concurrency: 4, timeoutMs: 10_000 });
    try {
      for (const path of Object.keys(PAGES)) {
        const [a, b] = await Promise.all([crawler.html(`${base}${path}`), fetcher.html(`${base}${path}`)]);
        expect(b.body, path).toBe(a.body);
        expect(b.$.html(), path).toBe(a.$.html());
        expect(b.$.root().text(), path).toBe(a.$.root().text());
        const shape = ($: typeof a.$) => $('*').toArray().map((el) => [$(el).prop('tagName'), $(el).parent().prop('tagName') ?? null, $(el).children().length]);
        expect(shape(b.$), path).toEqual(shape(a.$));
      }
    } finally {
      await crawler.close();
    }
  });
});
