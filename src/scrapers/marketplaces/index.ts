// The marketplace scrapers the event tracker uses (activities/tracking.ts): A's event API and
// B's event page, fetched through the shared crawlee HTTP fetcher (http-pages.ts) below each
// marketplace's configured base URL (MARKETPLACE_A_BASE_URL, MARKETPLACE_B_BASE_URL) and
// nowhere else. Failures are ScrapeFailures: `not_found`, `malformed`, or transient.
//
// With proxies for a marketplace (SCRAPE_PROXY_URLS, issue 27) each scrape goes out as a session
// of a healthy exit, moving on to one more at a refusal (egress/through-exits.ts); every answer is
// checked against the marketplace's challenge page either way.
import { withBlockPage } from '../block-pages.ts';
import type { ExitPools } from '../egress/exit-pool.ts';
import { throughExits } from '../egress/through-exits.ts';
import type { FetchInit, PageFetcher } from '../types.ts';
import { blockPage as marketplaceABlockPage, scrapeMarketplaceA } from './marketplace-a.ts';
import { blockPage as marketplaceBBlockPage, scrapeMarketplaceB } from './marketplace-b.ts';
import type { MarketplaceAEventPage, MarketplaceBEventPage } from './types.ts';

export type { MarketplaceAEventPage, MarketplaceBEventPage } from './types.ts';

export interface MarketplaceScrapers {
  marketplaceA(id: string, init?: Pick<FetchInit, 'signal'>): Promise<MarketplaceAEventPage>;
  marketplaceB(id: string, init?: Pick<FetchInit, 'signal'>): Promise<MarketplaceBEventPage>;
}

export function createMarketplaceScrapers(http: PageFetcher, baseUrls: Record<'marketplace_a' | 'marketplace_b', string>, exits?: ExitPools): MarketplaceScrapers {
  const a = baseUrls.marketplace_a.replace(/\/+$/, '');
  const b = baseUrls.marketplace_b.replace(/\/+$/, '');
  const httpA = withBlockPage(http, marketplaceABlockPage);
  const httpB = withBlockPage(http, marketplaceBBlockPage);
  const through = <T>(site: 'marketplace_a' | 'marketplace_b', id: string, init: Pick<FetchInit, 'signal'> | undefined, work: (init: FetchInit | undefined) => Promise<T>): Promise<T> => {
    const pool = exits?.for(site);
    if (!pool?.proxied) return work(init);
    return throughExits(pool, { target: `${site}:${id}`, source: 'poll', signal: init?.signal }, (session) => work({ ...init, session }));
  };
  return {
    marketplaceA: (id, init) => through('marketplace_a', id, init, (fetchInit) => scrapeMarketplaceA(httpA, a, id, fetchInit)),
    marketplaceB: (id, init) => through('marketplace_b', id, init, (fetchInit) => scrapeMarketplaceB(httpB, b, id, fetchInit)),
  };
}
