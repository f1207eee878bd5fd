// Retry-After as platforms send it: delta-seconds and the three HTTP-date forms become a wait in
// ms from when the answer arrived; anything else (and a missing header) is null. Whatever the
// header holds, the parser never throws and never answers a negative or non-finite wait.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseRetryAfter } from '../../src/scrapers/retry-after.ts';

/** Sun, 06 Nov 1994 08:49:37 GMT, RFC 9110's example date. */
const RFC_EXAMPLE = Date.UTC(1994, 10, 6, 8, 49, 37);
const BEFORE = RFC_EXAMPLE - 90_000;

describe('parseRetryAfter', () => {
  it('reads delta-seconds as that many seconds, whatever the clock', () => {
    expect(parseRetryAfter('120', BEFORE)).toBe(120_000);
    expect(parseRetryAfter('0', BEFORE)).toBe(0);
    expect(parseRetryAfter(' 30 ', BEFORE)).toBe(30_000);
    expect(parseRetryAfter('007', Number.NaN)).toBe(7_000);
  });

  it('caps delta-seconds too large to hold at 2^31 seconds', () => {
    expect(parseRetryAfter('9'.repeat(400), BEFORE)).toBe(2 ** 31 * 1000);
  });

  it.each([
    ['IMF-fixdate', 'Sun, 06 Nov 1994 08:49:37 GMT'],
    ['the obsolete RFC 850 form', 'Sunday, 06-Nov-94 08:49:37 GMT'],
    ['the obsolete asctime form', 'Sun Nov  6 08:49:37 1994'],
    ['IMF-fixdate in other letter case', 'SUN, 06 NOV 1994 08:49:37 gmt'],
  ])('reads %s as the time left until that date', (_form, value) => {
    expect(parseRetryAfter(value, BEFORE)).toBe(90_000);
  });

  it('answers 0 for a date already past', () => {
    expect(parseRetryAfter('Sun, 06 Nov 1994 08:49:37 GMT', RFC_EXAMPLE + 5_000)).toBe(0);
  });

  it('reads a two-digit RFC 850 year as the nearest one not more than 50 years ahead', () => {
    const now = Date.UTC(2026, 0, 1);
    expect(parseRetryAfter('Thursday, 01-Jan-26 00:01:00 GMT', now)).toBe(60_000);
    // 2094 would be 68 years ahead: it is 1994, long past.
    expect(parseRetryAfter('Sunday, 06-Nov-94 08:49:37 GMT', now)).toBe(0);
  });

  it('reads a leap second as the last second of its minute', () => {
    expect(parseRetryAfter('Sat, 31 Dec 2016 23:59:60 GMT', Date.UTC(2016, 11, 31, 23, 59, 0))).toBe(59_000);
  });

  it.each([
    ['absent', undefined],
    ['null', null],
    ['empty', ''],
    ['a negative number', '-5'],
    ['a fraction', '1.5'],
    ['an exponent', '1e3'],
    ['words', 'soon'],
    ['a date without its zone', 'Sun, 06 Nov 1994 08:49:37'],
    ['a date in another zone', 'Sun, 06 Nov 1994 08:49:37 +0100'],
    ['an ISO time', '1994-11-06T08:49:37Z'],
    ['a day that does not exist', 'Tue, 31 Feb 2026 08:00:00 GMT'],
    ['an hour that does not exist', 'Sun, 06 Nov 1994 24:00:00 GMT'],
    ['a year below 100', 'Sun, 06 Nov 0094 08:49:37 GMT'],
    ['a number with a date', '5, Sun, 06 Nov 1994 08:49:37 GMT'],
  ])('answers null for %s', (_label, value) => {
    expect(parseRetryAfter(value, BEFORE)).toBeNull();
  });

  it('property: never throws, never answers a negative or non-finite wait, and text that is neither form is null', () => {
    const anyClock = fc.oneof(fc.integer({ min: 0, max: 8.64e15 }), fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, -1));
    const dateLike = fc
      .tuple(fc.constantFrom('Mon', 'Sun', 'Funday'), fc.integer({ min: 0, max: 40 }), fc.constantFrom('Jan', 'Feb', 'Xyz'), fc.integer({ min: 0, max: 9999 }), fc.integer({ min: 0, max: 99 }))
      .map(([day, d, month, y, h]) => `${day}, ${String(d).padStart(2, '0')} ${month} ${String(y).padStart(4, '0')} ${String(h).padStart(2, '0')}:00:00 GMT`);
    const header = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.stringMatching(/^\s*-?\d{0,30}(\.\d*)?\s*$/), dateLike);
    fc.assert(
      fc.property(header, anyClock, (value, now) => {
        const wait = parseRetryAfter(value, now);
        if (wait === null) return;
        expect(Number.isFinite(wait)).toBe(true);
        expect(wait).toBeGreaterThanOrEqual(0);
      }),
      { numRuns: 2_000 },
    );
    // Garbage: anything without a digit is neither delta-seconds nor a date.
    fc.assert(
      fc.property(
        fc.string().filter((s) => !/\d/.test(s)),
        fc.integer({ min: 0, max: 8.64e15 }),
        (value, now) => parseRetryAfter(value, now) === null,
      ),
      { numRuns: 1_000 },
    );
  });
});
