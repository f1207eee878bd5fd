// The scrapers: one adapter per platform (platforms/), sharing one crawlee HTTP fetcher and one
// warm browser. Activities (activities/scrape.ts) and the scrape benchmark call scrape().
//
// With exit pools (issue 27, egress/), where a scrape leaves from is chosen in one of two ways:
//   - by the caller (`exitsChosenByCaller`: the monitors' pollers, which pace each exit and hand
//     the session of the exit whose turn it is, and tell the pool how the poll went themselves);
//   - here, for on-demand scrapes (egress/through-exits.ts): a target the platform refused lately
//     is answered from its back-off without a request; else a healthy exit is picked in turn and a
//     refusal moves the scrape to one more, charged to the target, never to an exit (issue 36).
// Without proxies a platform is scraped as it always was (one address, no session), its one exit
// keeping the same accounts. Every fetch of an adapter checks its platform's challenge page.
import { targetKey, type EventRef } from '../platform/event-ref.ts';
import type { PlatformKey } from '../platform/registry.ts';
import { withBlockPage } from './block-pages.ts';
import { createBrowserPages, type BrowserPages } from './browser-pages.ts';
import type { ExitPool, ExitPools } from './egress/exit-pool.ts';
import { throughExits } from './egress/through-exits.ts';
import { createHttpPages, type HttpPages } from './http-pages.ts';
import { ADAPTER_FACTORIES, BLOCK_PAGES } from './platforms/index.ts';
import type { PageFetcher, PlatformAdapter, PlatformSessions, ScrapeData, ScrapeOptions } from './types.ts';

interface ScraperSettings {
  /** Base URL per platform key (config.platformBaseUrls or a test simulator's baseUrls). */
  baseUrls: Record<string, string>;
  /** Browser pages open at once. */
  browserPages: number;
  chromiumPath: string;
  /** Upper bound of one fetch or page visit. */
  attemptTimeoutMs: number;
}

/**
 * Either a fetcher shared with other scrapers of the process (the event tracker's crawlee
 * fetcher, or the pollers' lean one), its owner closing it; or the HTTP requests in flight at
 * once for a crawlee fetcher of the scrapers' own. `browser`, when given, is a warm browser
 * shared with other scrapers (its owner closes it): one Chromium per process.
 */
export type ScrapersOptions = ScraperSettings &
  ({ http: PageFetcher & Partial<Pick<HttpPages, 'warm'>> } | { concurrency: number }) & {
    browser?: BrowserPages;
    /** Browser-made sessions shared with other scrapers of the process (their owner closes them). */
    sessions?: PlatformSessions;
    /** Where requests leave from, per platform (their owner closes them); none: direct, no session. */
    exits?: ExitPools;
    /** The caller picks each scrape's exit and session and accounts for refusals (the pollers). */
    exitsChosenByCaller?: boolean;
  };

export interface Scrapers {
  scrape(ref: EventRef, options?: ScrapeOptions): Promise<ScrapeData>;
  /** Starts the HTTP crawlers and launches the browser ahead of the first scrape. */
  warm(): Promise<void>;
  /** The warm browser, for other scrapers of the process to share. */
  readonly browser: BrowserPages;
  close(): Promise<void>;
}

export function createScrapers(options: ScrapersOptions): Scrapers {
  const own = 'http' in options ? null : createHttpPages({ concurrency: options.concurrency, timeoutMs: options.attemptTimeoutMs });
  const http = 'http' in options ? options.http : own!;
  const ownBrowser = options.browser ? null : createBrowserPages({ pages: options.browserPages, chromiumPath: options.chromiumPath, timeoutMs: options.attemptTimeoutMs });
  const browser = options.browser ?? ownBrowser!;
  const adapters = new Map<PlatformKey, PlatformAdapter>();
  for (const [platform, create] of Object.entries(ADAPTER_FACTORIES) as [PlatformKey, (typeof ADAPTER_FACTORIES)[PlatformKey]][]) {
    const baseUrl = options.baseUrls[platform];
    if (!baseUrl) throw new Error(`no base URL for ${platform}`);
    adapters.set(platform, create({ baseUrl: baseUrl.replace(/\/+$/, ''), http: withBlockPage(http, BLOCK_PAGES[platform]), browser, sessions: options.sessions }));
  }
  return {
    scrape: (ref, scrapeOptions = {}) => {
      const adapter = adapters.get(ref.platform)!;
      const pool = options.exits?.for(ref.platform);
      return pool && !options.exitsChosenByCaller ? scrapeThrough(pool, adapter, ref, scrapeOptions) : adapter.scrape(ref, scrapeOptions);
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

/** One on-demand scrape through an exit of `pool` (egress/through-exits.ts says what a refusal does). */
function scrapeThrough(pool: ExitPool, adapter: PlatformAdapter, ref: EventRef, options: ScrapeOptions): Promise<ScrapeData> {
  return throughExits(pool, { target: targetKey(ref), source: 'on-demand', signal: options.signal }, (session) => adapter.scrape(ref, { ...options, session }));
}
