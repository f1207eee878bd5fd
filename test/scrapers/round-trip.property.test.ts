// Property: for every HTTP platform (and each second strategy: pf_04's HTML page, pf_07's UK
// monitor, pf_09 in euros), any inventory put through the control API is exactly what the
// adapter scrapes back through the simulator's pages: same section names (markup and unicode
// included), stock, price range and offers, and the event's name, venue and city.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inventory } from './inventory-arbitrary.ts';
import { expectedOffers, expectedSummaries, HTTP_PLATFORMS, regionsOf, scrapedOffers, sortOffers, startHarness, summaries, type Harness, type HttpPlatform } from './platform-harness.ts';

const FLAVOURS: [HttpPlatform, string][] = [...HTTP_PLATFORMS.map((p): [HttpPlatform, string] => [p, regionsOf(p).home]), ['pf_04', 'it'], ['pf_07', 'uk'], ['pf_09', 'sk']];

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ timeoutMs: 5_000 });
});
afterAll(async () => {
  await h?.close();
});

describe('what is put is what is scraped', () => {
  it.each(FLAVOURS)('%s in region %s', async (platform, region) => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(inventory, async (input) => {
        const ref = await h.put(platform, 5_000 + n++, { region, ...input });
        const data = await h.scrape(ref);
        expect(summaries(data)).toEqual(expectedSummaries(input.sections, input.currency));
        expect([data.event_info.name, data.event_info.venue, data.event_info.city]).toEqual([input.name, input.venue, input.city]);
        if (data.sections_type === 'OfferSections') {
          expect(scrapedOffers(data.sections)).toEqual(expectedOffers(ref, input.sections));
        } else {
          const expected = expectedOffers(ref, input.sections);
          for (const [name, s] of Object.entries(data.sections)) {
            const seats = s.seats.map((seat) => ({ price: seat.price, quantity: 1, ticket_type: seat.ticket_type, restricted_view: seat.restricted_view, accessible: seat.accessible, presale: seat.presale }));
            const unit = (expected[name] ?? []).flatMap((o) => Array.from({ length: o.quantity }, () => ({ ...o, quantity: 1 })));
            expect(sortOffers(seats)).toEqual(sortOffers(unit));
          }
        }
      }),
      { numRuns: Number(process.env.ROUND_TRIP_RUNS ?? 30) },
    );
  });
});
