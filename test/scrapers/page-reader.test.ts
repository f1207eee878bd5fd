// Values read off pages: what is accepted (and how localized prices are read) and what is refused
// as malformed, always naming the platform.
import { describe, expect, it } from 'vitest';
import { MAX_PRICE, MAX_QUANTITY, PageReader } from '../../src/scrapers/page-reader.ts';
import { ScrapeFailure } from '../../src/scrapers/types.ts';

const read = new PageReader('pf_03');

function refused(f: () => unknown): ScrapeFailure {
  try {
    f();
  } catch (err) {
    if (err instanceof ScrapeFailure) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('PageReader', () => {
  it.each([
    ['€120.50', 'point', 120.5],
    ['$1,250.00', 'point', 1250],
    ['A$ 1,234,567.891', 'point', 1234567.89],
    ['120,50', 'comma', 120.5],
    ['1.250,50 €', 'comma', 1250.5],
    ['1\u00a0250\u00a0Kč', 'comma', 1250],
    ['1 250,5 Kč', 'comma', 1250.5],
    ['0', 'point', 0],
    ['RM120', 'point', 120],
  ] as const)('reads the price text %j (%s)', (text, mark, value) => {
    expect(read.priceText(text, mark, 'price')).toBe(value);
  });

  it.each([
    ['-12.00', 'point'],
    ['€ −12.00', 'point'],
    ['12,5.0', 'point'],
    ['1,25', 'point'],
    ['1.250.5', 'comma'],
    ['free', 'point'],
    ['', 'point'],
    ['12 34', 'point'],
  ] as const)('refuses the price text %j (%s)', (text, mark) => {
    const failure = refused(() => read.priceText(text, mark, 'price of row 1'));
    expect(failure.kind).toBe('malformed');
    expect(failure.message).toMatch(/^pf_03: price of row 1 is not a price/);
  });

  it('accepts prices as numbers or plain decimal strings, rounded to cents', () => {
    expect([read.price(12.345, 'p'), read.price('99.99', 'p'), read.price(0, 'p')]).toEqual([12.35, 99.99, 0]);
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, 1.7e306, MAX_PRICE + 1, '1e3', '12,50', null, undefined, true]) expect(refused(() => read.price(bad, 'p')).kind).toBe('malformed');
    expect(read.price(MAX_PRICE, 'p')).toBe(MAX_PRICE);
    expect(read.priceInMinorUnits(12050, 'p')).toBe(120.5);
    for (const bad of [12.5, -1, '100']) expect(refused(() => read.priceInMinorUnits(bad, 'p')).kind).toBe('malformed');
  });

  it('accepts whole non-negative ticket counts only', () => {
    expect([read.quantity(0, 'q'), read.quantity(12, 'q'), read.quantity(' 7 ', 'q')]).toEqual([0, 12, 7]);
    for (const bad of [-1, 1.5, '1.5', '', 'many', null, MAX_QUANTITY + 1, Number.MAX_SAFE_INTEGER]) expect(refused(() => read.quantity(bad, 'q')).kind).toBe('malformed');
  });

  it('reads required and optional text, times and currencies', () => {
    expect(read.text('  Floor  ', 'name')).toBe('Floor');
    expect(refused(() => read.text('   ', 'name')).message).toBe('pf_03: name is missing or empty');
    expect([read.optionalText(''), read.optionalText(3), read.optionalText(' x ')]).toEqual([null, null, 'x']);
    expect([read.optionalTime('2027-06-19T19:30:00Z'), read.optionalTime('tomorrow'), read.optionalTime('2027-13-45T99:00:00Z')]).toEqual(['2027-06-19T19:30:00Z', null, null]);
    expect([read.optionalCurrency('eur'), read.optionalCurrency('euro'), read.optionalCurrency(undefined)]).toEqual(['EUR', null, null]);
  });

  it('reads the structure of JSON answers or says what is missing', () => {
    expect(refused(() => read.object([], 'event')).message).toBe('pf_03: event is missing or not an object');
    expect(refused(() => read.array({}, 'offers')).message).toBe('pf_03: offers is missing or not a list');
    expect(refused(() => read.boolean('yes', 'presale')).message).toBe('pf_03: presale is missing or not true/false');
    expect(read.oneOf('GA', { GA: 'general_admission' }, 'kind')).toBe('general_admission');
    expect(refused(() => read.oneOf('toString', { GA: 'general_admission' }, 'kind')).kind).toBe('malformed');
  });

  it('reads a page status: 404 and 410 are not_found, 403 and 429 blocked, other non-2xx upstream', () => {
    const page = (status: number) => ({ status, url: 'u', body: '' });
    expect(() => read.expectFound(page(200), 'p')).not.toThrow();
    expect(refused(() => read.expectFound(page(404), 'the event page')).kind).toBe('not_found');
    expect(refused(() => read.expectFound(page(410), 'p')).kind).toBe('not_found');
    for (const status of [403, 429]) {
      const failure = refused(() => read.expectFound(page(status), 'the event page'));
      expect(failure).toMatchObject({ kind: 'blocked', retryable: false, retryAfterMs: null });
      expect(failure.message).toBe(`pf_03: the event page answered ${status}, without a Retry-After`);
    }
    for (const status of [301, 400, 401]) expect(refused(() => read.expectFound(page(status), 'p')).kind).toBe('upstream');
  });
});
