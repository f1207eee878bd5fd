// Every activity the worker runs, built once per worker process with the resources they share
// (the scrapers' HTTP fetchers and warm browser, and the reports on that browser). handBack()
// ends the long-running shard polls when the worker begins to stop; close() releases the rest.
// A scrape worker (role `scrape`) gets the scrape side only: no webhook or Stripe activity, and
// no secret to build them with. A delivery worker never loads this module (activities/delivery.ts).
import type { Registry } from 'prom-client';
import { DEFAULT_SCRAPE_RPS, marketplaceBaseUrls, platformBaseUrls, scrapeCaFile, scrapeRpsPerExit, type Config } from '../src/config.ts';
import { ExitPools } from '../src/scrapers/egress/exit-pool.ts';
import { registerProxyMetrics } from '../src/scrapers/egress/proxy-metrics.ts';
import type { Logger } from '../src/logger.ts';
import { createHttpClients, createHttpFetcher } from '../src/scrapers/http-fetcher.ts';
import { startBrowserReports } from '../src/scrapers/browser-reports.ts';
import { createBrowserPages } from '../src/scrapers/browser-pages.ts';
import { createScrapers } from '../src/scrapers/index.ts';
import { createPf01Clearances } from '../src/scrapers/platforms/pf_01-clearance.ts';
import { registerScraperMetrics, scraperFigures } from '../src/scrapers/scraper-metrics.ts';
import { ScrapeFailure } from '../src/scrapers/types.ts';
import { pollAttemptTimeoutMs, scrapeBackstopMs } from '../workflows/scrape-timing.ts';
import type { Db } from '../db/connection.ts';
import { MemberWatch } from '../src/monitors/member-watch.ts';
import { incidentRuleOf } from '../src/monitors/platform-incidents.ts';
import { PollMetrics } from '../src/monitors/poll-metrics.ts';
import { createMonitorActivities } from './monitors.ts';
import { createPollActivities } from './poll-shard.ts';
import { createScrapeActivities } from './scrape.ts';
import { createTrackingActivities } from './tracking.ts';
import { trackingLimits } from '../src/market-data/tracking-lifecycle.ts';
import type { DeliveryAttempts } from '../src/webhooks/attempt.ts';
import { createDeliveryActivities } from './delivery.ts';

export interface Activities {
  activities: Record<string, (...args: never[]) => Promise<unknown>>;
  /** Ends the shard polls in flight, each handing its schedule back (poll-shard.ts). */
  handBack(): void;
  /**
   * Settles (never rejects) once the background warm-up of the scrapers has ended, warm or not:
   * for a caller that must not send a scrape before the browser is up (a test's stack, as a
   * worker in production has long been running by its first client-rendered scrape).
   */
  warmed: Promise<void>;
  /** First attempts for this process's webhook dispatcher; absent without WEBHOOK_SECRET_KEY. */
  webhookAttempts?: DeliveryAttempts;
  close(): Promise<void>;
}

export interface ActivityDeps {
  config: Config;
  log: Logger;
  /** The monitors' activities read and write snapshots and notifications here. */
  db: Db;
  /** The shard pollers LISTEN for membership changes over their own connection. */
  connectionString: string;
  /** Where the pollers' metrics go (the process's /metrics). */
  registry: Registry;
  baseUrls?: Record<string, string>;
  /** Where the event tracker scrapes marketplaces A and B (default: marketplaceBaseUrls(config)). */
  marketplaceBaseUrls?: Record<'marketplace_a' | 'marketplace_b', string>;
  /** `scrape`: no webhook or billing activities (WORKER_ROLE=scrape); default `all`. */
  role?: 'all' | 'scrape';
}

export async function createActivities(deps: ActivityDeps): Promise<Activities> {
  const { config, log } = deps;
  // One browser-grade HTTP client per identity (http-fetcher.ts), shared by the two fetchers
  // below: a session's cookies and connections are the same whichever of them sends its request.
  const caFile = scrapeCaFile(config);
  const httpClients = createHttpClients({ caFile });
  // The fetcher of the platform scrapers and the event tracker: one concurrency bound.
  // An on-demand attempt is bounded by the time left in its request (the scrape activity's
  // deadline); the fetchers' own bound is only a backstop past it (workflows/scrape-timing.ts).
  const backstopMs = scrapeBackstopMs(config.SCRAPE_TIMEOUT_MS);
  const http = createHttpFetcher({ concurrency: config.SCRAPE_CONCURRENCY, timeoutMs: backstopMs, clients: httpClients });
  const baseUrls = deps.baseUrls ?? platformBaseUrls(config);
  // One Chromium per process, for on-demand page visits and for making pf_01's clearances.
  const browser = createBrowserPages({
    pages: config.BROWSER_PAGES,
    chromiumPath: config.CHROMIUM_PATH,
    timeoutMs: backstopMs,
    caFile,
    browserUser: config.SCRAPE_BROWSER_USER === 'root' ? null : config.SCRAPE_BROWSER_USER,
    onLaunchDecided: ({ user, sandboxed }) => {
      const fields = { browser_user: user?.name ?? (process.getuid?.() === 0 ? 'root' : 'worker'), sandboxed };
      if (sandboxed) log.info(fields, 'Chromium runs sandboxed');
      else log.warn(fields, user ? "Chromium's sandbox cannot start here: it runs with --no-sandbox, as a user without the worker's secrets" : "Chromium runs with --no-sandbox as the worker's own user");
    },
  });
  // The pollers' fetcher: the same client, its own time bound; pf_01's clearances send their
  // requests through it too, polls and on-demand scrapes alike.
  const pollTimeoutMs = pollAttemptTimeoutMs(config.SCRAPE_TIMEOUT_MS);
  // Its own bound (MONITOR_FETCH_CONCURRENCY), well above SCRAPE_CONCURRENCY: the shards' pacers
  // and fair shares decide which poll goes when, and a poll waiting here would wait in arrival
  // order behind every slow platform's polls.
  // A capacity bench's synthetic pages replace the pollers' requests (never in production: so
  // loaded only then, and the simulator's page code it renders with never is in a production worker).
  const pollHttp =
    config.SCRAPE_SYNTHETIC_CHANGE_MS > 0
      ? (await import('../src/scrapers/synthetic-pages.ts')).createSyntheticPages(config.SCRAPE_SYNTHETIC_CHANGE_MS)
      : createHttpFetcher({ concurrency: config.MONITOR_FETCH_CONCURRENCY, timeoutMs: pollTimeoutMs, clients: httpClients });
  if (config.SCRAPE_SYNTHETIC_CHANGE_MS > 0) log.warn({ change_ms: config.SCRAPE_SYNTHETIC_CHANGE_MS }, "SCRAPE_SYNTHETIC_CHANGE_MS is set: the pollers read synthetic pf_03 pages, not the platform's (benches only)");
  // Where every request leaves from (SCRAPE_PROXY_URLS; direct when a platform has none), shared
  // by the on-demand scrapes and the pollers so a block one meets keeps the others off that address.
  const rpsPerExit = scrapeRpsPerExit(config);
  const exits = new ExitPools(config.SCRAPE_PROXY_URLS, {
    // The tracker's marketplaces are not paced per address (a tracking scrapes once per
    // TRACK_INTERVAL_MS); their pools give exits, sessions and blocks only.
    rpsPerExit: (site) => rpsPerExit[site as keyof typeof rpsPerExit] ?? DEFAULT_SCRAPE_RPS,
    sessionMaxRequests: config.SCRAPE_SESSION_MAX_REQUESTS,
    sessionMaxAgeMs: config.SCRAPE_SESSION_MAX_AGE_MS,
    cooldownMs: config.SCRAPE_PROXY_COOLDOWN_MS,
    targetBackoffMs: config.SCRAPE_TARGET_BACKOFF_MS,
  });
  const pf01 = createPf01Clearances({
    browser,
    http: pollHttp,
    baseUrl: baseUrls.pf_01!.replace(/\/+$/, ''),
    size: config.BROWSER_SESSIONS,
    makeTimeoutMs: backstopMs,
  });
  const scrapers = createScrapers({
    http,
    browser,
    clearances: { pf01, use: 'when-warm' },
    exits,
    baseUrls,
    browserPages: config.BROWSER_PAGES,
    chromiumPath: config.CHROMIUM_PATH,
    attemptTimeoutMs: backstopMs,
  });
  const scraperSources = { browser, clearances: { pf_01: pf01.pool } };
  registerScraperMetrics(deps.registry, scraperSources);
  registerProxyMetrics(deps.registry, exits);
  const browserFigures = scraperFigures(scraperSources);
  const figures = () => ({ ...browserFigures(), proxies: exits.all().filter((pool) => pool.proxied).map((pool) => pool.stats()) });
  // Prints the fix at start-up when Chromium is missing, and tells the gateways (browser-reports.ts).
  const browserReports = startBrowserReports({ db: deps.db, taskQueue: config.SCRAPE_TASK_QUEUE, chromiumPath: config.CHROMIUM_PATH, log, figures });
  // In the background: the first scrape should not pay for the browser launch (~1 s) or the
  // CA set-up, and the worker need not wait for them either.
  const warmed = scrapers.warm().catch((err: unknown) => {
    // A missing browser was reported above, with its fix; its launch error would only bury that.
    if (!(err instanceof ScrapeFailure && err.kind === 'browser_missing')) log.warn({ err }, 'could not warm the scrapers; the first scrape will');
  });
  const alog = log.child({ component: 'activities' });
  // The pollers' own scrapers: the same adapters, the same warm browser and clearances, over the
  // pollers' fetcher; a poll of pf_01 always goes with a clearance.
  const pollScrapers = createScrapers({
    http: pollHttp,
    browser,
    clearances: { pf01, use: 'always' },
    exits,
    // The pollers pace each exit, hand over its session and account for refusals themselves.
    exitsChosenByCaller: true,
    baseUrls,
    browserPages: config.BROWSER_PAGES,
    chromiumPath: config.CHROMIUM_PATH,
    attemptTimeoutMs: pollTimeoutMs,
  });
  const members = new MemberWatch({ connectionString: deps.connectionString, log: alog });
  const polls = createPollActivities({
    db: deps.db,
    scrapers: pollScrapers,
    members,
    metrics: new PollMetrics(deps.registry),
    log: alog,
    intervalMs: config.MONITOR_INTERVAL_MS,
    jitterRatio: config.MONITOR_JITTER_RATIO,
    exits,
    shardsPerPlatform: config.MONITOR_SHARDS_PER_PLATFORM,
    runMs: config.MONITOR_POLL_RUN_MS,
    retireAfterMs: config.MONITOR_RETIRE_AFTER_MS,
    incidentRule: incidentRuleOf(config),
    order: config.MONITOR_POLL_ORDER,
    takeoverGuard: config.MONITOR_TAKEOVER_GUARD,
  });
  // Every configured proxy: what callers are told of a failed scrape never names one.
  const proxies = Object.values(config.SCRAPE_PROXY_URLS).flat();
  const tracking = createTrackingActivities({
    db: deps.db,
    log: alog,
    baseUrls: deps.marketplaceBaseUrls ?? marketplaceBaseUrls(config),
    intervalMs: config.TRACK_INTERVAL_MS,
    limits: trackingLimits(config),
    http,
    exits,
    proxies,
  });
  const delivery = deps.role === 'scrape' ? { activities: {}, webhookAttempts: undefined } : createDeliveryActivities({ config, log: alog, db: deps.db });
  return {
    activities: { ...createScrapeActivities(scrapers, alog, proxies), ...polls.activities, ...createMonitorActivities({ db: deps.db }), ...tracking, ...delivery.activities },
    handBack: polls.handBack,
    warmed,
    webhookAttempts: delivery.webhookAttempts,
    close: async () => {
      await Promise.all([pollScrapers.close(), scrapers.close(), http.close(), members.close(), browserReports.stop(), pf01.pool.close()]);
      await browser.close();
      pollHttp.close();
      exits.close();
      httpClients.close();
    },
  };
}
