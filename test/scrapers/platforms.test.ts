// Every HTTP platform (pf_02..pf_11), each through its real simulator pages and the real HTTP
// fetcher (http-fetcher.ts): the exact inventory put comes back (sections, stock, prices, flags, event details),
// sold out is a listed section with stock 0, and every way a page can fail maps to its kind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpFetcher, type HttpFetcher } from '../../src/scrapers/http-fetcher.ts';
import { totalStock } from '../../src/scrapers/sections.ts';
import type { OfferSection, SeatMapSection } from '../../src/scrapers/types.ts';
import {
  expectedOffers,
  expectedSummaries,
  expectFailure,
  HTTP_PLATFORMS,
  regionsOf,
  scrapedOffers,
  sortOffers,
  startHarness,
  summaries,
  type Harness,
  type HttpPlatform,
  warmUp,
} from './platform-harness.ts';

const CURRENCY: Record<HttpPlatform, string> = {
  pf_02: 'GBP',
  pf_03: 'EUR',
  pf_04: 'EUR',
  pf_05: 'EUR',
  pf_06: 'USD',
  pf_07: 'USD',
  pf_08: 'AUD',
  pf_09: 'CZK',
  pf_10: 'EUR',
  pf_11: 'USD',
};

/** Public URL of event n (see keyOf) in the platform's home region. */
const PUBLIC_URL: Record<HttpPlatform, (n: number) => string> = {
  pf_02: (n) => `https://www.pf02.example/uk/event/ev-${n}`,
  pf_03: (n) => `https://pf03.example/e/show-${n}`,
  pf_04: (n) => `https://www.pf04.example/de/tickets/${100_000 + n}`,
  pf_05: (n) => `https://www.pf05.example/evento/${7_000_000 + n}`,
  pf_06: (n) => `https://pf06.example/events/K${String(n).padStart(7, '0')}`,
  pf_07: (n) => `https://www.pf07.example/event/arena-tour-${100_000 + n}`,
  pf_08: (n) => `https://pf08.example.com.au/event/EV-${1000 + n}`,
  pf_09: (n) => `https://www.pf09.example/akce/${200_000 + n}`,
  pf_10: (n) => `https://pf10.example/events/00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
  pf_11: (n) => `https://tickets.pf11.example/event/${70_000 + n}`,
};

const COUNTRY: Record<HttpPlatform, string> = { pf_02: 'GB', pf_03: 'US', pf_04: 'DE', pf_05: 'IT', pf_06: 'US', pf_07: 'US', pf_08: 'AU', pf_09: 'CZ', pf_10: 'US', pf_11: 'US' };

const flags = { restricted_view: false, accessible: false, presale: false };
const INVENTORY = [
  { name: 'Floor', price: 120.5, stock: 12, ticket_type: 'standard', ...flags },
  { name: 'Lower Tier 101', price: 1250, stock: 3, ticket_type: 'platinum', ...flags, accessible: true },
  { name: 'Lower Tier 101', price: 89.99, stock: 5, ticket_type: 'standard', ...flags, restricted_view: true },
  { name: 'Resale Block A', price: 75, stock: 7, ticket_type: 'resale', ...flags, presale: true },
  { name: 'Standing', price: 45.25, stock: 9, ticket_type: 'general_admission', ...flags },
  { name: 'Upper Tier 305', price: 30, stock: 0, ticket_type: 'standard', ...flags },
] as const;

const DETAILS = { name: 'Summer Open Air <Live> & "Friends"', venue: 'Parkbühne', city: 'Zürich', starts_at: '2027-07-04T18:00:00Z' };

let h: Harness;
let short: HttpFetcher;
beforeAll(async () => {
  h = await startHarness({ timeoutMs: 5_000 });
  short = createHttpFetcher({ concurrency: 32, timeoutMs: 500 });
  await warmUp(short, `${h.sim.url}/_sim/health`);
});
afterAll(async () => {
  short?.close();
  await h?.close();
});

describe.each(HTTP_PLATFORMS)('%s', (platform) => {
  const { home, other } = regionsOf(platform);
  const currency = CURRENCY[platform];

  it('scrapes the exact inventory, event details and public URL', async () => {
    const ref = await h.put(platform, 1, { sections: INVENTORY, currency, ...DETAILS });
    const data = await h.scrape(ref);
    expect(data.sections_type).toBe(platform === 'pf_02' ? 'SeatMapSections' : 'OfferSections');
    expect(summaries(data)).toEqual(expectedSummaries(INVENTORY, currency));
    expect(totalStock(data.sections)).toBe(36);
    expect(data.event_info).toEqual({ ...DETAILS, country: COUNTRY[platform], currency, url: PUBLIC_URL[platform](1) });
    expect(data.degraded).toBeNull();
    if (data.sections_type === 'OfferSections') {
      expect(scrapedOffers(data.sections)).toEqual(expectedOffers(ref, INVENTORY));
    } else {
      const seats = (s: SeatMapSection) => sortOffers(Object.values(countSeats(s)));
      const expected = expectedOffers(ref, INVENTORY);
      for (const [name, section] of Object.entries(data.sections)) expect(seats(section), name).toEqual(expected[name]);
      expect(data.sections['Lower Tier 101']!.by_ticket_type).toEqual({ standard: 5, platinum: 3, resale: 0, general_admission: 0 });
    }
  });

  it('lists every section of a sold-out event with stock 0 and no price', async () => {
    const ref = await h.put(platform, 2, { sections: INVENTORY.map((s) => ({ ...s, stock: 0 })), currency });
    const data = await h.scrape(ref);
    expect(totalStock(data.sections)).toBe(0);
    expect(Object.keys(data.sections).sort()).toEqual(['Floor', 'Lower Tier 101', 'Resale Block A', 'Standing', 'Upper Tier 305']);
    for (const section of Object.values(data.sections) as (OfferSection | SeatMapSection)[]) {
      expect(section).toMatchObject({ stock: 0, min_price: null, max_price: null });
      expect(section.offers).toEqual([]);
      if ('seats' in section) expect(section.seats).toEqual([]);
    }
  });

  it('answers an event with nothing listed with no sections', async () => {
    const ref = await h.put(platform, 3, { sections: [], currency });
    const data = await h.scrape(ref);
    expect(data.sections).toEqual({});
  });

  it('reports an unknown event as not_found', async () => {
    const ref = await h.put(platform, 4, { sections: INVENTORY });
    await fetch(`${h.sim.url}/_sim/${platform}/events/${encodeURIComponent(ref.key)}`, { method: 'DELETE' });
    await expectFailure(h.scrape(ref), 'not_found');
  });

  it('reports an event of another region as not_found', async () => {
    const ref = await h.put(platform, 5, { region: other, sections: INVENTORY }, { scrapeRegion: home });
    await expectFailure(h.scrape(ref), 'not_found');
  });

  it('reports a page that says not found as not_found', async () => {
    const ref = await h.put(platform, 6, { sections: INVENTORY, behaviour: 'not_found' });
    await expectFailure(h.scrape(ref), 'not_found');
  });

  it('reports a broken page as malformed, naming the platform', async () => {
    const ref = await h.put(platform, 7, { sections: INVENTORY, behaviour: 'malformed' });
    const failure = await expectFailure(h.scrape(ref), 'malformed');
    expect(failure.message).toMatch(new RegExp(`^${platform}: `));
    expect(failure.retryable).toBe(false);
  });

  it('reports a 5xx as upstream (retryable), and the next attempt succeeds', async () => {
    const ref = await h.put(platform, 8, { sections: INVENTORY, failures: 1 });
    const failure = await expectFailure(h.scrape(ref), 'upstream');
    expect(failure.retryable).toBe(true);
    expect(totalStock((await h.scrape(ref)).sections)).toBe(36);
  });

  it('reports a platform that keeps failing as upstream', async () => {
    const ref = await h.put(platform, 9, { sections: INVENTORY, behaviour: 'error' });
    await expectFailure(h.scrape(ref), 'upstream');
  });
});

// One concurrent group for every platform: each case waits out a time limit, so together they
// take one limit's time rather than thirty.
describe.concurrent.each(HTTP_PLATFORMS)('%s time limits', (platform) => {
  it('gives up on a slow page after the attempt limit', async () => {
    // The page would answer after 20 s (the simulator drops it when the client goes): giving up
    // at the 500 ms limit, not waiting for the page, with room for a loaded machine in between.
    const ref = await h.put(platform, 10, { sections: INVENTORY, behaviour: 'slow', delay_ms: 20_000 });
    const started = performance.now();
    const failure = await expectFailure(h.adapter(platform, short).scrape(ref), 'attempt_timeout');
    expect(failure.message).toMatch(/within 500 ms/);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('gives up on a page that never answers', async () => {
    const ref = await h.put(platform, 11, { sections: INVENTORY, behaviour: 'hang' });
    await expectFailure(h.adapter(platform, short).scrape(ref), 'attempt_timeout');
  });

  it('stops promptly when the caller aborts', async () => {
    const ref = await h.put(platform, 12, { sections: INVENTORY, behaviour: 'slow', delay_ms: 2_000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const failure = await expectFailure(h.adapter(platform, short).scrape(ref, { signal: controller.signal }), 'attempt_timeout');
    expect(failure.message).toMatch(/was aborted/);
  });
});

/** A seat map section's seats as offers: one per (price, kind, flags), quantity = seats. */
function countSeats(section: SeatMapSection) {
  const out: Record<string, { price: number; quantity: number; ticket_type: string; restricted_view: boolean; accessible: boolean; presale: boolean }> = {};
  for (const seat of section.seats) {
    const key = JSON.stringify([seat.price, seat.ticket_type, seat.restricted_view, seat.accessible, seat.presale]);
    const entry = (out[key] ??= { price: seat.price, quantity: 0, ticket_type: seat.ticket_type, restricted_view: seat.restricted_view, accessible: seat.accessible, presale: seat.presale });
    entry.quantity++;
  }
  return out;
}
