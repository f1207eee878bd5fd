// The marketplace scrapers (src/scrapers/marketplaces/) against the real simulator through the
// HTTP fetcher (http-fetcher.ts): what they read off A's API and B's page, how an unknown event, a failing
// marketplace and a broken page fail, and that links on a page never decide a stored host.
import fc from 'fast-check';
import { load } from 'cheerio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpFetcher, type HttpFetcher } from '../../src/scrapers/http-fetcher.ts';
import { createMarketplaceScrapers, type MarketplaceScrapers } from '../../src/scrapers/marketplaces/index.ts';
import { parseMarketplaceA } from '../../src/scrapers/marketplaces/marketplace-a.ts';
import { parseMarketplaceB } from '../../src/scrapers/marketplaces/marketplace-b.ts';
import { ScrapeFailure } from '../../src/scrapers/types.ts';
import { DEMO_IDS } from '../../src/simulator/marketplaces/demo.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import { putEvent } from '../support/simulator.ts';

let sim: Simulator;
let http: HttpFetcher;
let scrapers: MarketplaceScrapers;
beforeAll(async () => {
  sim = await startSimulator();
  // No test here waits a limit out: it only has to hold the first request of the process
  // (loading wreq-js's native module) and every answer on a loaded machine.
  http = createHttpFetcher({ concurrency: 4, timeoutMs: 15_000 });
  scrapers = createMarketplaceScrapers(http, { marketplace_a: sim.marketplaceUrls.marketplace_a, marketplace_b: sim.marketplaceUrls.marketplace_b });
});
afterAll(async () => {
  http?.close();
  await sim?.close();
});

const put = (marketplace: string, id: string, body: unknown) => putEvent(sim, marketplace, id, body);

async function failure(p: Promise<unknown>): Promise<ScrapeFailure> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ScrapeFailure);
  return err as ScrapeFailure;
}

describe('marketplace A', () => {
  it('reads the event, its listings and its sales', async () => {
    const page = await scrapers.marketplaceA(DEMO_IDS.concertA);
    expect(page).toMatchObject({
      id: 'E-104729',
      url: 'https://www.marketplace-a.example/event/E-104729',
      name: 'Aurora Skies: The Northern Lights Tour',
      starts_at: '2027-05-14T19:00:00Z',
      category: 'Concerts',
      currency: 'GBP',
      venue: { name: 'Riverside Arena', city: 'London', country: 'United Kingdom', country_code: 'GB' },
      artist: { name: 'Aurora Skies', url: 'https://www.marketplace-a.example/artist/aurora-skies' },
      external: {
        marketplace_b_event_id: '0B005F2A9B1E4D2C',
        marketplace_b_event_url: 'https://www.marketplace-b.example/event/0B005F2A9B1E4D2C',
        marketplace_c_event_id: '771204',
        marketplace_c_event_url: 'https://www.marketplace-c.example/tickets/771204',
      },
    });
    expect(page.listings[0]).toEqual({ id: 'L1', section: 'Floor', row: null, quantity: 4, price: 145, ticket_type: 'general_admission' });
    expect(page.sales).toHaveLength(8);
    expect(page.sales[0]).toMatchObject({ id: 'S-9008', quantity: 2, price: 410, currency: 'GBP', section: 'Hospitality Box 3' });
  });

  it('reads an event without venue, artist, image or links as nulls', async () => {
    await put('marketplace_a', 'E-8001', { venue: null, artist: null, category: null, starts_at: null });
    expect(await scrapers.marketplaceA('E-8001')).toMatchObject({
      venue: null,
      artist: null,
      category: null,
      starts_at: null,
      image_url: null,
      external: { marketplace_b_event_id: null, marketplace_b_event_url: null, marketplace_c_event_id: null, marketplace_c_event_url: null },
      listings: [],
      sales: [],
    });
  });

  it('fails not_found for an unknown event, upstream for a 503, malformed for a broken answer', async () => {
    expect((await failure(scrapers.marketplaceA('E-424242'))).kind).toBe('not_found');
    await put('marketplace_a', 'E-8002', { behaviour: 'error' });
    expect((await failure(scrapers.marketplaceA('E-8002'))).kind).toBe('upstream');
    await put('marketplace_a', 'E-8002', { behaviour: 'malformed', listings: [{ section: 'S', quantity: 1, price: 1 }] });
    const broken = await failure(scrapers.marketplaceA('E-8002'));
    expect(broken.kind).toBe('malformed');
    expect(broken.message).toMatch(/pricePerTicket\.amount/);
  });

  it('rebuilds links from ids and paths: a page cannot make the service store another host', () => {
    const page = parseMarketplaceA('E-1', {
      event: {
        id: 'E-1',
        title: 'T',
        currency: 'USD',
        images: [{ kind: 'hero', url: 'javascript:alert(1)' }],
        venue: { name: 'V', countryCode: 'Great Britain' },
        performer: { name: 'P', href: 'https://evil.example/artist/p' },
        links: { marketplaceB: { id: '../../admin', url: 'http://169.254.169.254/' }, marketplaceC: { id: '12345', url: 'http://10.0.0.1/' } },
      },
      listings: [],
      recentSales: [],
    });
    expect(page.image_url).toBeNull();
    expect(page.venue).toMatchObject({ name: 'V', country_code: null });
    expect(page.artist).toBeNull();
    expect(page.external).toEqual({
      marketplace_b_event_id: null,
      marketplace_b_event_url: null,
      marketplace_c_event_id: '12345',
      marketplace_c_event_url: 'https://www.marketplace-c.example/tickets/12345',
    });
  });

  it('any answer either parses or fails as malformed, never with another error', () => {
    const json = fc.jsonValue({ maxDepth: 4 });
    const shaped = fc.record({ event: fc.record({ id: fc.constant('E-1'), title: json, currency: fc.constantFrom('USD', 'usd', 1) }), listings: fc.array(json), recentSales: fc.array(json) });
    fc.assert(
      fc.property(fc.oneof(json, shaped), (data) => {
        try {
          parseMarketplaceA('E-1', data);
        } catch (err) {
          expect(err).toBeInstanceOf(ScrapeFailure);
          expect((err as ScrapeFailure).kind).toBe('malformed');
        }
      }),
    );
  });
});

describe('marketplace B', () => {
  it('reads the region, sections and offers', async () => {
    const page = await scrapers.marketplaceB(DEMO_IDS.concertB);
    expect(page).toMatchObject({
      id: '0B005F2A9B1E4D2C',
      url: 'https://www.marketplace-b.example/event/0B005F2A9B1E4D2C',
      region: 'uk',
      currency: 'GBP',
      venue: { name: 'Riverside Arena', city: 'London', country_code: 'GB' },
      average_sale_price: 96.4,
    });
    expect(page.sections).toEqual([
      { name: 'Floor', capacity: 2000, available: 140, sold: 1860 },
      { name: 'Lower Tier', capacity: 6000, available: 420, sold: 5580 },
      { name: 'Upper Tier', capacity: 8000, available: 1210, sold: 6790 },
    ]);
    expect(page.offers[1]).toEqual({ name: 'Verified Resale', stock: 210, price: 131.25, face_price: 115, type: 'resale', currency: 'GBP' });
  });

  it('reads prices with thousands separators and offers in another currency', async () => {
    await put('marketplace_b', 'BIGPRICE01', { currency: 'EUR', offers: [{ name: 'VIP', stock: 2, price: 12500.5, face_price: 12000, type: 'platinum', currency: 'USD' }] });
    const page = await scrapers.marketplaceB('BIGPRICE01');
    expect(page.offers).toEqual([{ name: 'VIP', stock: 2, price: 12500.5, face_price: 12000, type: 'platinum', currency: 'USD' }]);
    expect(page.average_sale_price).toBeNull();
  });

  it('fails not_found, upstream and malformed like A', async () => {
    expect((await failure(scrapers.marketplaceB('NOSUCHEVENT1'))).kind).toBe('not_found');
    await put('marketplace_b', 'BROKEN0001', { failures: 1 });
    expect((await failure(scrapers.marketplaceB('BROKEN0001'))).kind).toBe('upstream');
    await put('marketplace_b', 'BROKEN0001', { behaviour: 'malformed' });
    expect((await failure(scrapers.marketplaceB('BROKEN0001'))).message).toMatch(/no sections table/);
  });

  it('refuses a page about another event', () => {
    const $ = load('<main class="event-page" data-event-id="OTHER12345"><h1 class="event-name">x</h1></main>');
    expect(() => parseMarketplaceB('MINE123456', $)).toThrow(/not MINE123456/);
  });
});
