// The scrapers: one adapter per platform (platforms/), sharing one HTTP fetcher (http-fetcher.ts:
// a browser's requests on the wire) and one warm browser. Activities (activities/scrape.ts) and the scrape benchmark call scrape().
//
// With exit pools (issue 27, egress/), where a scrape leaves from is chosen in one of two ways:
//   - by the caller (`exitsChosenByCaller`: the monitors' pollers, which pace each exit and hand
//     the session of the exit whose turn it is, and tell the pool how the poll went themselves);
//   - here, for on-demand scrapes (egress/through-exits.ts): a target the platform refused lately
//     is answered from its back-off without a request; else a healthy exit is picked in turn and a
//     refusal moves the scrape to one more, charged to the target, never to an exit (issue 36).
// Without proxies a platform is scraped as it always was (one address, no session), its one exit
// keeping the same accounts.
//
// An adapter reaches the network only through the fetchers each scrape is given (scrape-via.ts),
// bound here to the scrape's session, signal and platform challenge page: with exit pools, the
// session picked or handed; without, none, and the requests go out as they always did.
import { targetKey, type EventRef } from '../platform/event-ref.ts';
import type { PlatformKey } from '../platform/registry.ts';
import { createBrowserPages, type BrowserPages } from './browser-pages.ts';
import type { ExitPool, ExitPools } from './egress/exit-pool.ts';
import type { ScrapeSession } from './egress/scrape-session.ts';
import { throughExits } from './egress/through-exits.ts';
import { createHttpFetcher, type HttpFetcher } from './http-fetcher.ts';
import { ADAPTER_FACTORIES, BLOCK_PAGES } from './platforms/index.ts';
import { scrapeVia, type ScrapeFetchers } from './scrape-via.ts';
import type { PageFetcher, PlatformAdapter, PlatformClearances, ScrapeData, ScrapeOptions } from './types.ts';

interface ScraperSettings {
  /** Base URL per platform key (config.platformBaseUrls or a test simulator's baseUrls). */
  baseUrls: Record<string, string>;
  /** Browser pages open at once. */
  browserPages: number;
  chromiumPath: string;
  /** A CA the browser trusts beside the system's (SCRAPE_CA_FILE: the simulator's own). */
  caFile?: string;
  /** Upper bound of one fetch or page visit. */
  attemptTimeoutMs: number;
}

/**
 * Either a fetcher shared with other scrapers of the process (the event tracker's, or the
 * pollers'), its owner closing it; or the HTTP requests in flight at once for a fetcher of the
 * scrapers' own. `browser`, when given, is a warm browser
 * shared with other scrapers (its owner closes it): one Chromium per process.
 */
export type ScrapersOptions = ScraperSettings &
  ({ http: PageFetcher & Partial<Pick<HttpFetcher, 'warm'>> } | { concurrency: number }) & {
    browser?: BrowserPages;
    /** Browser-made clearances shared with other scrapers of the process (their owner closes them). */
    clearances?: PlatformClearances;
    /** Where requests leave from, per platform (their owner closes them); none: direct, no session. */
    exits?: ExitPools;
    /** The caller picks each scrape's exit and session and accounts for refusals (the pollers). */
    exitsChosenByCaller?: boolean;
  };

/** A platform's adapter, and the fetchers each of its scrapes is given bound (scrape-via.ts). */
interface Platform {
  adapter: PlatformAdapter;
  fetchers: ScrapeFetchers;
}

export interface Scrapers {
  scrape(ref: EventRef, options?: ScrapeOptions): Promise<ScrapeData>;
  /** Sets up the HTTP client's CAs and launches the browser ahead of the first scrape. */
  warm(): Promise<void>;
  /** The warm browser, for other scrapers of the process to share. */
  readonly browser: BrowserPages;
  close(): Promise<void>;
}

export function createScrapers(options: ScrapersOptions): Scrapers {
  const own = 'http' in options ? null : createHttpFetcher({ concurrency: options.concurrency, timeoutMs: options.attemptTimeoutMs });
  const http = 'http' in options ? options.http : own!;
  const ownBrowser = options.browser ? null : createBrowserPages({ pages: options.browserPages, chromiumPath: options.chromiumPath, timeoutMs: options.attemptTimeoutMs, caFile: options.caFile });
  const browser = options.browser ?? ownBrowser!;
  const platforms = new Map<PlatformKey, Platform>();
  for (const [platform, create] of Object.entries(ADAPTER_FACTORIES) as [PlatformKey, (typeof ADAPTER_FACTORIES)[PlatformKey]][]) {
    const baseUrl = options.baseUrls[platform];
    if (!baseUrl) throw new Error(`no base URL for ${platform}`);
    // The browser-made clearances serve pf_01 alone (PlatformClearances.pf01): no other scrape makes a pool of them.
    const fetchers = { http, browser, clearances: platform === 'pf_01' ? options.clearances : undefined };
    platforms.set(platform, { adapter: create({ baseUrl: baseUrl.replace(/\/+$/, '') }), fetchers });
  }
  return {
    scrape: (ref, scrapeOptions = {}) => {
      const platform = platforms.get(ref.platform)!;
      const pool = options.exits?.for(ref.platform);
      return pool && !options.exitsChosenByCaller ? scrapeThrough(pool, platform, ref, scrapeOptions) : scrapeWith(platform, ref, scrapeOptions.session, scrapeOptions.signal);
    },
    warm: async () => {
      await Promise.all([http.warm?.(), browser.warm()]);
    },
    close: async () => {
      await Promise.all([own?.close(), ownBrowser?.close()]);
    },
    browser,
  };
}

/** One scrape by `platform`'s adapter, every request of it made with `session` (scrape-via.ts). */
function scrapeWith({ adapter, fetchers }: Platform, ref: EventRef, session: ScrapeSession | undefined, signal: AbortSignal | undefined): Promise<ScrapeData> {
  return adapter.scrape(ref, scrapeVia(fetchers, { session, signal, blockPage: BLOCK_PAGES[ref.platform] }));
}

/** One on-demand scrape through an exit of `pool` (egress/through-exits.ts says what a refusal does). */
function scrapeThrough(pool: ExitPool, platform: Platform, ref: EventRef, options: ScrapeOptions): Promise<ScrapeData> {
  return throughExits(pool, { target: targetKey(ref), source: 'on-demand', signal: options.signal }, (session) => scrapeWith(platform, ref, session, options.signal));
}
