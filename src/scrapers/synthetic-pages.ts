// Synthetic pages, for capacity benches only (SCRAPE_SYNTHETIC_CHANGE_MS; bench:capacity): the
// pollers' fetcher answers pf_03's event pages itself, rendered in the worker by the simulator's
// own pf_03 page code, with no request, so one worker can be driven far past what the simulator
// and the loopback network serve, and the first part of the service to saturate is found. Every
// other part of a poll is the real one: the adapter parses the page as it parses the platform's,
// the poller compares, records and notifies as it always does. Each event's stock moves once per
// SCRAPE_SYNTHETIC_CHANGE_MS, each at its own phase (from a hash of its key), so changes spread
// evenly: targets / period changes a second. It climbs 1, 2, ... 5 and falls back to 1, and each
// event starts that cycle at its own step (another hash), so four moves in five are increases in
// every window. A fall notifies nothing (only stock_increase does: monitors/changes.ts); when all
// events started the cycle at the same step, all of them fell in the same period, and a bench
// window inside it saw no notification for the 750 moves the bench counted (taken for a defect
// of the worker past saturation: the ground truth's). Any other platform, or a JSON request, is
// answered `unsupported`.
// Never set in production: the service would watch pages that do not exist.
import { load } from 'cheerio';
import { renderPf03Page } from '../simulator/platforms/pf_03.ts';
import { ScrapeFailure, type FetchedPage, type PageFetcher } from './types.ts';

const PF03_EVENT = /\/e\/([^/?#]+)/;

/** The key's string hash, mixed by murmur3's finaliser: keys that differ in their last digits spread. */
function mixedHash(key: string, seed: number): number {
  let h = seed;
  for (let i = 0; i < key.length; i++) h = (Math.imul(h, 31) + key.charCodeAt(i)) | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The stock's cycle: 1 to 5, then back to 1. */
const STEPS = 5;

/**
 * A stable phase in [0, period) for `key`, spread evenly: keys that differ only in their last
 * digits (bench-mon-1, bench-mon-2, ...) must not change together.
 */
function phaseOf(key: string, period: number): number {
  return mixedHash(key, 0) % period;
}

/** Where in the cycle `key` starts: another hash, so the falls of different keys spread over the periods. */
function offsetOf(key: string): number {
  return mixedHash(key, 0x9e3779b9) % STEPS;
}

/** How many periods of `key`'s schedule have begun by `now`. */
function periodsBy(key: string, periodMs: number, now: number): number {
  return Math.floor((now + phaseOf(key, periodMs)) / periodMs);
}

/** The stock `key`'s first section shows at `now`: moves once a period, between 1 and 5. */
export function syntheticStock(key: string, periodMs: number, now: number): number {
  return 1 + ((periodsBy(key, periodMs, now) + offsetOf(key)) % STEPS);
}

/** Moves of `key`'s stock in (from, to]: `moves` all of them, `increases` those that notify. */
export function syntheticChanges(key: string, periodMs: number, from: number, to: number): { moves: number; increases: number } {
  const first = periodsBy(key, periodMs, from) + 1;
  const last = periodsBy(key, periodMs, to);
  const moves = Math.max(0, last - first + 1);
  // Period m begins with the stock at 1 + ((m + offset) % 5): a fall exactly when that is 1.
  const offset = offsetOf(key);
  const fallsUpTo = (m: number) => Math.floor((m + offset) / STEPS);
  const falls = moves === 0 ? 0 : fallsUpTo(last) - fallsUpTo(first - 1);
  return { moves, increases: moves - falls };
}

export function createSyntheticPages(periodMs: number, now: () => number = Date.now): PageFetcher & { close(): void } {
  return {
    close() {},
    async html(url) {
      const key = PF03_EVENT.exec(new URL(url).pathname)?.[1];
      if (!key) throw new ScrapeFailure('unsupported', `synthetic pages answer pf_03's event pages only, not ${url}`);
      const body = renderPf03Page({
        key,
        name: `Synthetic ${key}`,
        venue: 'Synthetic Arena',
        city: 'Springfield',
        starts_at: '2027-06-19T19:30:00Z',
        currency: 'USD',
        sections: [
          { name: 'Floor', price: 120, stock: syntheticStock(key, periodMs, now()), ticket_type: 'standard', restricted_view: false, accessible: false, presale: false },
          { name: 'Lower 101', price: 80, stock: 20, ticket_type: 'standard', restricted_view: false, accessible: false, presale: false },
          { name: 'Upper 305', price: 40, stock: 30, ticket_type: 'standard', restricted_view: false, accessible: false, presale: false },
          { name: 'Resale A', price: 100, stock: 4, ticket_type: 'resale', restricted_view: false, accessible: false, presale: false },
        ],
      });
      const page: FetchedPage = { status: 200, url, body, headers: { 'content-type': 'text/html; charset=utf-8' } };
      // Parsed as the HTTP fetcher parses a page (http-fetcher.ts).
      return { ...page, $: load(body, { _useHtmlParser2: true } as Parameters<typeof load>[1]) };
    },
    async json(url) {
      throw new ScrapeFailure('unsupported', `synthetic pages answer no JSON (${url})`);
    },
  };
}
