// The one place where a scrape's fetchers are bound to it (issue 36): its session (where its
// requests leave from, with which headers and cookies), its signal, and its platform's challenge
// page. The platform scrapers (index.ts) and the tracker's (marketplaces/index.ts) call it once per
// scrape, proxied or not, and give the adapter only what it returns. Binding here, instead of
// trusting every fetch call to pass the session on, is what keeps a forgotten `session:` from
// sending a request from this machine's own address: an adapter holds no unbound fetcher, and
// the init it may pass has no session to set or omit (ScrapeFetchInit).
import type { BlockPageRule } from './block-pages.ts';
import type { ScrapeSession } from './egress/scrape-session.ts';
import type { PageOpener, FetchInit, PageFetcher, PlatformClearances, ScrapeBrowser, ScrapeFetcher, ScrapeFetchInit, ScrapeVia } from './types.ts';

/** What a scrape decided for all its requests. No session: this machine's address, today's headers. */
export interface ScrapeBinding {
  session: ScrapeSession | undefined;
  signal: AbortSignal | undefined;
  blockPage: BlockPageRule;
}

/**
 * The init a fetcher is called with: the adapter's own fields only, copied by name so that
 * nothing else it hands over (a cast, a spread of something wider) reaches the fetcher, and the
 * scrape's binding on top.
 */
function bound(init: ScrapeFetchInit | undefined, binding: ScrapeBinding): FetchInit {
  return {
    method: init?.method,
    headers: init?.headers,
    body: init?.body,
    readStatuses: init?.readStatuses,
    signal: binding.signal,
    session: binding.session,
    blockPage: binding.blockPage,
  };
}

export function bindFetcher(http: PageFetcher, binding: ScrapeBinding): ScrapeFetcher {
  return {
    html: (url, init) => http.html(url, bound(init, binding)),
    json: (url, init) => http.json(url, bound(init, binding)),
  };
}

export function bindBrowser(browser: PageOpener, binding: ScrapeBinding): ScrapeBrowser {
  const { signal, session, blockPage } = binding;
  return { withPage: (url, use) => browser.withPage(url, use, { signal, session, blockPage }) };
}

/** The fetchers a scrape has. `clearances`: the browser-made clearances, given only to the platform they serve. */
export interface ScrapeFetchers {
  http: PageFetcher;
  browser: PageOpener;
  clearances?: PlatformClearances;
}

/** Everything one scrape of a platform may reach the network with. */
export function scrapeVia(fetchers: ScrapeFetchers, binding: ScrapeBinding): ScrapeVia {
  const { clearances } = fetchers;
  return {
    signal: binding.signal,
    http: bindFetcher(fetchers.http, binding),
    browser: bindBrowser(fetchers.browser, binding),
    // Clearances made through the exit this scrape leaves from (its own pool), their requests sent
    // with the same scrape session as the rest of the scrape.
    clearances: clearances && { pool: clearances.pf01.poolFor(binding.session), http: bindFetcher(clearances.pf01.http, binding), use: clearances.use },
  };
}
