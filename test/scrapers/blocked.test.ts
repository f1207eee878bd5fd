// A platform that refuses us, through the real simulator: every HTTP platform (crawlee fetcher)
// and pf_01 (warm chromium) answer a 429 or 403 with a `blocked` ScrapeFailure that carries the
// simulator's Retry-After in ms, is not retryable, and costs exactly one request.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEventRef } from '../../src/platform/event-ref.ts';
import { createBrowserPages, type BrowserPages } from '../../src/scrapers/browser-pages.ts';
import { createPf01 } from '../../src/scrapers/platforms/pf_01.ts';
import type { PageFetcher } from '../../src/scrapers/types.ts';
import { simEventInputSchema } from '../../src/simulator/state.ts';
import { expectFailure, HTTP_PLATFORMS, startHarness, withFetchers, type BoundAdapter, type Harness } from './platform-harness.ts';

const sections = [{ name: 'Floor', price: 10, stock: 2 }];

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ timeoutMs: 5_000 });
});
afterAll(async () => {
  await h?.close();
});

const hits = async (platform: string, key: string): Promise<number> =>
  ((await (await fetch(`${h.sim.url}/_sim/${platform}/events/${encodeURIComponent(key)}`)).json()) as { hits: number }).hits;

describe.each(HTTP_PLATFORMS)('%s', (platform) => {
  it('reports a 429 as blocked, with the Retry-After in ms, asked once', async () => {
    const ref = await h.put(platform, 40, { sections, behaviour: 'blocked', retry_after_s: 45 });
    const failure = await expectFailure(h.scrape(ref), 'blocked');
    expect(failure).toMatchObject({ retryAfterMs: 45_000, retryable: false });
    expect(failure.message).toMatch(/answered 429, asking us to wait 45 s$/);
    expect(await hits(platform, ref.key)).toBe(1);
  });

  it('reports a 403 as blocked too, and one without a Retry-After with retryAfterMs null', async () => {
    const refused = await h.put(platform, 41, { sections, behaviour: 'blocked', blocked_status: 403 });
    expect((await expectFailure(h.scrape(refused), 'blocked')).retryAfterMs).toBe(30_000);
    const bare = await h.put(platform, 42, { sections, behaviour: 'blocked', retry_after_s: null });
    const failure = await expectFailure(h.scrape(bare), 'blocked');
    expect(failure.retryAfterMs).toBeNull();
    expect(failure.message).toMatch(/answered 429, without a Retry-After$/);
  });
});

describe('pf_01 in the browser', () => {
  let browser: BrowserPages;
  let pf01: BoundAdapter;
  const noHttp: PageFetcher = {
    html: () => Promise.reject(new Error('pf_01 must not fetch over HTTP')),
    json: () => Promise.reject(new Error('pf_01 must not fetch over HTTP')),
  };
  beforeAll(() => {
    browser = createBrowserPages({ pages: 1, chromiumPath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', timeoutMs: 10_000 });
    pf01 = withFetchers(createPf01({ baseUrl: h.sim.baseUrls.pf_01! }), { http: noHttp, browser });
  });
  afterAll(async () => {
    await browser?.close();
  });

  const put = (key: string, fields: Record<string, unknown>) => {
    h.sim.store.put('pf_01', key, simEventInputSchema.parse({ region: 'uk', sections, ...fields }));
    const parsed = parseEventRef('pf_01', key, 'uk');
    if (!parsed.ok) throw new Error(parsed.message);
    return parsed.ref;
  };

  it('reports a 429 or 403 event page as blocked, with the Retry-After in ms, and the page goes back to the pool', async () => {
    const limited = put('Pf01Blocked00001', { behaviour: 'blocked', retry_after_s: 7 });
    const failure = await expectFailure(pf01.scrape(limited), 'blocked');
    expect(failure).toMatchObject({ retryAfterMs: 7_000, retryable: false });
    expect(failure.message).toMatch(/answered 429, asking us to wait 7 s$/);
    // Only the document was asked for: the page's script never ran to fetch its data arms.
    expect(h.sim.store.get('pf_01', limited.key)!.hits).toBe(1);

    const refused = put('Pf01Blocked00002', { behaviour: 'blocked', blocked_status: 403, retry_after_s: null });
    const denied = await expectFailure(pf01.scrape(refused), 'blocked');
    expect(denied.retryAfterMs).toBeNull();
    expect(denied.message).toMatch(/answered 403, without a Retry-After$/);
    // A refusal is the platform's answer, not a broken page: the browser keeps its page.
    expect(browser.stats()).toMatchObject({ launches: 1, openPages: 1 });
  });
});
