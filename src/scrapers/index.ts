// The scrapers: one adapter per platform (platforms/), sharing one crawlee HTTP fetcher and one
// warm browser. Activities (activities/scrape.ts) and the scrape benchmark call scrape().
import type { EventRef } from '../platform/event-ref.ts';
import type { PlatformKey } from '../platform/registry.ts';
import { createBrowserPages, type BrowserPages } from './browser-pages.ts';
import { createHttpPages, type HttpPages } from './http-pages.ts';
import { ADAPTER_FACTORIES } from './platforms/index.ts';
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
    adapters.set(platform, create({ baseUrl: baseUrl.replace(/\/+$/, ''), http, browser, sessions: options.sessions }));
  }
  return {
    scrape: (ref, scrapeOptions) => adapters.get(ref.platform)!.scrape(ref, scrapeOptions),
    warm: async () => {
      await Promise.all([http.warm?.(), browser.warm()]);
    },
    close: async () => {
      await Promise.all([own?.close(), ownBrowser?.close()]);
    },
    browser,
  };
}
