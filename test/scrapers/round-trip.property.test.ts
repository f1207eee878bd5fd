// Property: for every HTTP platform (and each second strategy: pf_04's HTML page, pf_07's UK
// monitor, pf_09 in euros), any inventory put through the control API is exactly what the
// adapter scrapes back through the simulator's pages: same section names (markup and unicode
// included), stock, price range and offers, and the event's name, venue and city.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedOffers, expectedSummaries, HTTP_PLATFORMS, regionsOf, scrapedOffers, sortOffers, startHarness, summaries, type Harness, type HttpPlatform } from './platform-harness.ts';

// Display text as people type it: no control characters, no surrounding blanks (the control API
// trims names), markup characters and non-Latin scripts very much included.
const TRICKY = ['__proto__', '</script><b>x</b>', 'A & B "quoted" \'single\'', '&amp; &lt;', 'Tribüne Nord', '東スタンド', 'Sektor Č ✓', 'Vyprodáno', 'Row <1>'];
const displayText = fc
  .oneof(fc.constantFrom(...TRICKY), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 24 }), fc.string({ unit: fc.constantFrom('<', '&', '"', "'", '>', ' ', 'a', 'é', ';', '€'), minLength: 1, maxLength: 12 }))
  .map((s) => s.trim())
  .filter((s) => s.length > 0 && s.length <= 100 && !/\p{Cc}/u.test(s));

const section = fc.record({
  name: displayText,
  price: fc.integer({ min: 0, max: 5_000_000 }).map((cents) => cents / 100),
  stock: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 25 })),
  ticket_type: fc.constantFrom('standard', 'resale', 'platinum', 'general_admission'),
  restricted_view: fc.boolean(),
  accessible: fc.boolean(),
  presale: fc.boolean(),
});

const inventory = fc.record({
  sections: fc.array(section, { maxLength: 8 }),
  currency: fc.constantFrom('EUR', 'GBP', 'USD', 'CZK', 'AUD', 'SEK', 'JPY'),
  name: displayText,
  venue: displayText,
  city: displayText,
});

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
