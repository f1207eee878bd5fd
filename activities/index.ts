// Every activity the worker runs, built once per worker process with the resources they share
// (the scrapers' HTTP fetcher and warm browser). close() releases them at shutdown.
import { marketplaceBaseUrls, platformBaseUrls, type Config } from '../src/config.ts';
import type { Logger } from '../src/logger.ts';
import { createHttpPages } from '../src/scrapers/http-pages.ts';
import { createScrapers } from '../src/scrapers/index.ts';
import { attemptTimeoutMs } from '../workflows/scrape-timing.ts';
import type { Client } from '@temporalio/client';
import type { Db } from '../db/connection.ts';
import { createMonitorActivities } from './monitors.ts';
import { createScrapeActivities } from './scrape.ts';
import { createTrackingActivities } from './tracking.ts';

export interface Activities {
  activities: Record<string, (...args: never[]) => Promise<unknown>>;
  close(): Promise<void>;
}

export interface ActivityDeps {
  config: Config;
  log: Logger;
  /** The monitors' activities read and write snapshots and notifications here. */
  db: Db;
  /** The monitors' activities start and signal target pollers through it. */
  client: Client;
  baseUrls?: Record<string, string>;
  /** Where the event tracker scrapes marketplaces A and B (default: marketplaceBaseUrls(config)). */
  marketplaceBaseUrls?: Record<'marketplace_a' | 'marketplace_b', string>;
  /** Pollers' polls per run before continue-as-new (tests shorten it). */
  pollsPerRun?: number;
}

export async function createActivities(deps: ActivityDeps): Promise<Activities> {
  const { config, log } = deps;
  // One crawlee fetcher for the platform scrapers and the event tracker: one concurrency bound.
  const http = createHttpPages({ concurrency: config.SCRAPE_CONCURRENCY, timeoutMs: attemptTimeoutMs(config.SCRAPE_TIMEOUT_MS) });
  const scrapers = createScrapers({
    http,
    baseUrls: deps.baseUrls ?? platformBaseUrls(config),
    browserPages: config.BROWSER_PAGES,
    chromiumPath: config.CHROMIUM_PATH,
    attemptTimeoutMs: attemptTimeoutMs(config.SCRAPE_TIMEOUT_MS),
  });
  // In the background: the first scrape should not pay for the browser launch (~1 s) or the
  // crawlers' start (~0.4 s), and the worker need not wait for them either.
  void scrapers.warm().catch((err: unknown) => log.warn({ err }, 'could not warm the scrapers; the first scrape will'));
  const alog = log.child({ component: 'activities' });
  const monitors = createMonitorActivities({
    db: deps.db,
    client: deps.client,
    scrapers,
    log: alog,
    monitorQueue: config.MONITOR_TASK_QUEUE,
    scrapeQueue: config.SCRAPE_TASK_QUEUE,
    intervalMs: config.MONITOR_INTERVAL_MS,
    jitterRatio: config.MONITOR_JITTER_RATIO,
    pollsPerRun: deps.pollsPerRun,
  });
  const tracking = createTrackingActivities({
    db: deps.db,
    log: alog,
    baseUrls: deps.marketplaceBaseUrls ?? marketplaceBaseUrls(config),
    intervalMs: config.TRACK_INTERVAL_MS,
    http,
  });
  return {
    activities: { ...createScrapeActivities(scrapers, alog), ...monitors, ...tracking },
    close: async () => {
      await Promise.all([scrapers.close(), http.close()]);
    },
  };
}
