// The inventories the scraper properties put on the simulator: display text as people type it
// (no control characters, no surrounding blanks since the control API trims names, markup
// characters and non-Latin scripts very much included) and offers of every kind and flag. Shared
// by the round-trip property and the two fetchers' parity property.
import fc from 'fast-check';

const TRICKY = ['__proto__', '</script><b>x</b>', 'A & B "quoted" \'single\'', '&amp; &lt;', 'Tribüne Nord', '東スタンド', 'Sektor Č ✓', 'Vyprodáno', 'Row <1>'];
export const displayText = fc
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

export const inventory = fc.record({
  sections: fc.array(section, { maxLength: 8 }),
  currency: fc.constantFrom('EUR', 'GBP', 'USD', 'CZK', 'AUD', 'SEK', 'JPY'),
  name: displayText,
  venue: displayText,
  city: displayText,
});
