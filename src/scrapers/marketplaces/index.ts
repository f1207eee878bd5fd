// The marketplace scrapers the event tracker uses (activities/tracking.ts): A's event API and
// B's event page, fetched through the shared crawlee HTTP fetcher (http-pages.ts) below each
// marketplace's configured base URL (MARKETPLACE_A_BASE_URL, MARKETPLACE_B_BASE_URL) and
// nowhere else. Failures are ScrapeFailures: `not_found`, `malformed`, or transient.
import type { FetchInit, PageFetcher } from '../types.ts';
import { scrapeMarketplaceA } from './marketplace-a.ts';
import { scrapeMarketplaceB } from './marketplace-b.ts';
import type { MarketplaceAEventPage, MarketplaceBEventPage } from './types.ts';

export type { MarketplaceAEventPage, MarketplaceBEventPage } from './types.ts';

export interface MarketplaceScrapers {
  marketplaceA(id: string, init?: Pick<FetchInit, 'signal'>): Promise<MarketplaceAEventPage>;
  marketplaceB(id: string, init?: Pick<FetchInit, 'signal'>): Promise<MarketplaceBEventPage>;
}

export function createMarketplaceScrapers(http: PageFetcher, baseUrls: Record<'marketplace_a' | 'marketplace_b', string>): MarketplaceScrapers {
  const a = baseUrls.marketplace_a.replace(/\/+$/, '');
  const b = baseUrls.marketplace_b.replace(/\/+$/, '');
  return {
    marketplaceA: (id, init) => scrapeMarketplaceA(http, a, id, init),
    marketplaceB: (id, init) => scrapeMarketplaceB(http, b, id, init),
  };
}
