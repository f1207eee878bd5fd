// The marketplace scrapers the event tracker uses (activities/tracking.ts): A's event API and
// B's event page, fetched through the shared HTTP fetcher (../http-fetcher.ts) below each
// marketplace's configured base URL (MARKETPLACE_A_BASE_URL, MARKETPLACE_B_BASE_URL) and
// nowhere else. Failures are ScrapeFailures: `not_found`, `malformed`, or transient.
//
// With proxies for a marketplace (SCRAPE_PROXY_URLS, issue 27) each scrape goes out as a session
// of a healthy exit, moving on to one more at a refusal (egress/through-exits.ts); every answer is
// checked against the marketplace's challenge page either way. A marketplace scraper is given
// only a fetcher bound to its scrape (../scrape-via.ts): its session, signal and challenge page.
import type { BlockPageRule } from '../block-pages.ts';
import type { ExitPools } from '../egress/exit-pool.ts';
import type { ScrapeSession } from '../egress/scrape-session.ts';
import { throughExits } from '../egress/through-exits.ts';
import { bindFetcher } from '../scrape-via.ts';
import type { FetchInit, PageFetcher, ScrapeFetcher } from '../types.ts';
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
  const blockPages: Record<'marketplace_a' | 'marketplace_b', BlockPageRule> = { marketplace_a: marketplaceABlockPage, marketplace_b: marketplaceBBlockPage };
  const through = <T>(site: 'marketplace_a' | 'marketplace_b', id: string, init: Pick<FetchInit, 'signal'> | undefined, work: (http: ScrapeFetcher) => Promise<T>): Promise<T> => {
    const signal = init?.signal;
    const bound = (session: ScrapeSession | undefined) => bindFetcher(http, { session, signal, blockPage: blockPages[site] });
    const pool = exits?.for(site);
    // Without proxies, no session: the marketplace is scraped as it always was.
    if (!pool?.proxied) return work(bound(undefined));
    return throughExits(pool, { target: `${site}:${id}`, source: 'poll', signal }, (session) => work(bound(session)));
  };
  return {
    marketplaceA: (id, init) => through('marketplace_a', id, init, (bound) => scrapeMarketplaceA(bound, a, id)),
    marketplaceB: (id, init) => through('marketplace_b', id, init, (bound) => scrapeMarketplaceB(bound, b, id)),
  };
}
