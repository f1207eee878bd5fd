// Reading values off one platform's pages: every reader returns a value that is safe to report
// (a finite non-negative price, a whole non-negative quantity, non-empty text) or throws a
// ScrapeFailure('malformed') naming the platform and what was wrong, so a changed or broken
// page is reported as such and never surfaces as a TypeError deep inside an adapter.
import type { PlatformKey } from '../platform/registry.ts';
import { roundPrice } from './sections.ts';
import { blockedFailure, isBlockedStatus, ScrapeFailure, type FetchedPage } from './types.ts';

export type JsonObject = Record<string, unknown>;

/** How a platform writes amounts as text: "1,250.50" (point) or "1.250,50" / "1 250,50" (comma). */
export type DecimalMark = 'point' | 'comma';

const GROUPED: Record<DecimalMark, RegExp> = {
  point: /^(?:\d{1,3}(?:[,\s]\d{3})+|\d+)(?:\.\d+)?$/,
  comma: /^(?:\d{1,3}(?:[.\s]\d{3})+|\d+)(?:,\d+)?$/,
};

/**
 * Bounds past which a number is a broken page, not a ticket: no price in any currency reaches a
 * billion units, no single offer holds a million tickets. They also keep sums and cents exact.
 */
export const MAX_PRICE = 1_000_000_000;
export const MAX_QUANTITY = 1_000_000;

export class PageReader {
  constructor(readonly platform: PlatformKey) {}

  malformed(problem: string): ScrapeFailure {
    return new ScrapeFailure('malformed', `${this.platform}: ${problem}`);
  }

  /**
   * The page's HTTP status, read the way every platform means it: 404 and 410 say the event
   * does not exist (or not in this region); 429 and 403 that the platform is refusing us
   * (`blocked`; the HTTP fetcher settles those itself, with their Retry-After, so only another
   * fetcher's page gets here); other non-2xx answers are the platform's trouble.
   */
  expectFound(page: FetchedPage, what: string): void {
    if (page.status === 404 || page.status === 410) {
      throw new ScrapeFailure('not_found', `${this.platform}: no such event (${what} answered ${page.status})`);
    }
    if (isBlockedStatus(page.status)) throw blockedFailure(`${this.platform}: ${what}`, page.status, null);
    if (page.status < 200 || page.status >= 300) {
      throw new ScrapeFailure('upstream', `${this.platform}: ${what} answered ${page.status}`, { status: page.status });
    }
  }

  object(value: unknown, what: string): JsonObject {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw this.malformed(`${what} is missing or not an object`);
    return value as JsonObject;
  }

  array(value: unknown, what: string): unknown[] {
    if (!Array.isArray(value)) throw this.malformed(`${what} is missing or not a list`);
    return value;
  }

  /** Required text, trimmed; empty counts as missing. */
  text(value: unknown, what: string): string {
    const text = typeof value === 'string' ? value.trim() : '';
    if (!text) throw this.malformed(`${what} is missing or empty`);
    return text;
  }

  /** Text the platform may leave out (event details): null when absent or empty. */
  optionalText(value: unknown): string | null {
    return typeof value === 'string' && value.trim() ? value.trim() : null;
  }

  /** An RFC 3339 time as the platform states it, or null when absent or not a time. */
  optionalTime(value: unknown): string | null {
    const text = this.optionalText(value);
    return text && /^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(text) && !Number.isNaN(Date.parse(text)) ? text : null;
  }

  /** An ISO 4217 code, or null when the page does not state a usable one. */
  optionalCurrency(value: unknown): string | null {
    const text = this.optionalText(value)?.toUpperCase() ?? null;
    return text && /^[A-Z]{3}$/.test(text) ? text : null;
  }

  boolean(value: unknown, what: string): boolean {
    if (typeof value !== 'boolean') throw this.malformed(`${what} is missing or not true/false`);
    return value;
  }

  /** A price given as a JSON number, or as a plain decimal string ("120.50"). */
  price(value: unknown, what: string): number {
    const n = typeof value === 'string' && /^\s*\d+(?:\.\d+)?\s*$/.test(value) ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0 || n > MAX_PRICE) throw this.malformed(`${what} is not a price (${describe(value)})`);
    return roundPrice(n);
  }

  /** A price in minor units (cents, pence, haléře). */
  priceInMinorUnits(value: unknown, what: string): number {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > MAX_PRICE * 100) throw this.malformed(`${what} is not an amount in minor units (${describe(value)})`);
    return roundPrice(value / 100);
  }

  /**
   * A price written for people: currency signs and codes around the amount are dropped, group
   * separators (commas, points, spaces) are allowed only where they group thousands.
   */
  priceText(value: unknown, mark: DecimalMark, what: string): number {
    const raw = typeof value === 'string' ? value : '';
    // A minus sign among the currency signs in front would otherwise be dropped with them.
    if (/[-\u2212]/.test(/^[^\d]*/.exec(raw)![0])) throw this.malformed(`${what} is not a price (${describe(value)})`);
    const amount = raw
      .replace(/[\u00a0\u202f\u2009]/g, ' ')
      .replace(/^[^\d]*/, '')
      .replace(/[^\d]*$/, '')
      .trim();
    if (!GROUPED[mark].test(amount)) throw this.malformed(`${what} is not a price (${describe(value)})`);
    const normalised = mark === 'point' ? amount.replace(/[,\s]/g, '') : amount.replace(/[.\s]/g, '').replace(',', '.');
    return this.price(Number(normalised), what);
  }

  /** A whole number of tickets, given as a number or as digits. */
  quantity(value: unknown, what: string): number {
    const n = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0 || n > MAX_QUANTITY) throw this.malformed(`${what} is not a ticket count (${describe(value)})`);
    return n;
  }

  /** One of the values a platform uses for a closed set (ticket kinds, flags). */
  oneOf<T extends string>(value: unknown, map: Readonly<Record<string, T>>, what: string): T {
    const key = typeof value === 'string' ? value.trim() : '';
    if (!Object.hasOwn(map, key)) throw this.malformed(`${what} has an unknown value (${describe(value)})`);
    return map[key]!;
  }
}

/**
 * An id or number off a page, for a message. Never throws, whatever the page sent: `String()` of
 * a parsed object whose `toString` is not a function does (fast-check found `{"toString":[]}`).
 */
export function label(value: unknown): string {
  return typeof value === 'string' || typeof value === 'number' ? String(value) : describe(value);
}

function describe(value: unknown): string {
  if (value === undefined) return 'missing';
  const text = typeof value === 'string' ? JSON.stringify(value) : String(JSON.stringify(value) ?? value);
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}
