// Synthetic pages, for capacity benches only (SCRAPE_SYNTHETIC_CHANGE_MS; bench:capacity): the
// pollers' fetcher answers pf_03's event pages itself, rendered in the worker by the simulator's
// own pf_03 page code, with no request, so one worker can be driven far past what the simulator
// and the loopback network serve, and the first part of the service to saturate is found. Every
// other part of a poll is the real one: the adapter parses the page as it parses the platform's,
// the poller compares, records and notifies as it always does. Each event's stock moves once per
// SCRAPE_SYNTHETIC_CHANGE_MS, each at its own phase (from a hash of its key), so changes spread
// evenly: targets / period changes a second. Any other platform, or a JSON request, is answered
// `unsupported`. Never set in production: the service would watch pages that do not exist.
import { load } from 'cheerio';
import { renderPf03Page } from '../simulator/platforms/pf_03.ts';
import { ScrapeFailure, type FetchedPage, type PageFetcher } from './types.ts';

const PF03_EVENT = /\/e\/([^/?#]+)/;

/**
 * A stable phase in [0, period) for `key`, spread evenly: keys that differ only in their last
 * digits (bench-mon-1, bench-mon-2, ...) must not change together, so the string hash is mixed
 * (murmur3's finaliser) before it is reduced.
 */
function phaseOf(key: string, period: number): number {
  let h = 0;
  for (let i = 0; i < key.length; i++) h = (Math.imul(h, 31) + key.charCodeAt(i)) | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) % period;
}

/** The stock `key`'s first section shows at `now`: moves once a period, between 1 and 5. */
export function syntheticStock(key: string, periodMs: number, now: number): number {
  return 1 + (Math.floor((now + phaseOf(key, periodMs)) / periodMs) % 5);
}

/** How many times `key`'s stock moves in (from, to]: what a bench's ground truth counts. */
export function syntheticChanges(key: string, periodMs: number, from: number, to: number): number {
  const phase = phaseOf(key, periodMs);
  return Math.floor((to + phase) / periodMs) - Math.floor((from + phase) / periodMs);
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
