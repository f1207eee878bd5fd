// The service's configuration: one schema, parsed once at start-up from the environment.
// A bad value stops the process with a message naming the variable (see ConfigError).
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { parseProxyUrls, type ProxiedSite, type ProxyEndpoint } from './scrapers/egress/proxy-urls.ts';
import { readCaCertificates } from './scrapers/scrape-trust.ts';
import { isPlatformKey, PLATFORM_KEYS, type PlatformKey } from './platform/registry.ts';
import { POLL_ORDERS } from './monitors/fair-share.ts';

const port = z.coerce.number().int().min(0).max(65535);
/** Open stream connections per key and per account by default (the AsyncAPI document states them). */
export const STREAM_CONNECTION_DEFAULTS = { perKey: 10, perAccount: 50 } as const;

const positiveInt = z.coerce.number().int().positive();
const flag = (fallback: 'true' | 'false') =>
  z
    .enum(['true', 'false'])
    .default(fallback)
    .transform((v) => v === 'true');

/** Requests per second each platform gets when SCRAPE_RPS_PER_PLATFORM does not name it. */
export const DEFAULT_SCRAPE_RPS = 20;

/** A positive decimal: `50`, `0.5`. No exponents or hex, which Number() would also take. */
const RATE = /^(?:\d+(?:\.\d*)?|\.\d+)$/;

function rate(text: string): number | null {
  const n = RATE.test(text) ? Number(text) : NaN;
  return Number.isFinite(n) && n > 0 ? n : null;
}

/**
 * SCRAPE_RPS_PER_PLATFORM: one rate for every platform (`50`), or a list (`pf_03=200,pf_01=5`)
 * whose unlisted platforms get DEFAULT_SCRAPE_RPS. A platform that does not exist is refused
 * rather than ignored: a misspelt key would otherwise leave its platform at the default unseen.
 */
function parseRatePerPlatform(text: string, ctx: z.RefinementCtx): Readonly<Record<PlatformKey, number>> {
  const problem = (message: string) => {
    ctx.addIssue({ code: 'custom', message });
    return z.NEVER;
  };
  const trimmed = text.trim();
  const single = rate(trimmed);
  if (single !== null) return Object.fromEntries(PLATFORM_KEYS.map((k) => [k, single])) as Record<PlatformKey, number>;
  if (!trimmed.includes('=')) return problem(`must be a positive number of requests per second, or a list such as pf_03=200,pf_01=5 (got '${trimmed.slice(0, 40)}')`);
  const out = Object.fromEntries(PLATFORM_KEYS.map((k) => [k, DEFAULT_SCRAPE_RPS])) as Record<PlatformKey, number>;
  const seen = new Set<string>();
  for (const entry of trimmed.split(',')) {
    const match = /^\s*([^=\s]+)\s*=\s*(\S*)\s*$/.exec(entry);
    if (!match) return problem(`'${entry.trim().slice(0, 40)}' is not platform=rate (e.g. pf_03=200)`);
    const key = match[1]!.toLowerCase();
    if (!isPlatformKey(key)) return problem(`unknown platform '${match[1]!.slice(0, 40)}' (expected ${PLATFORM_KEYS[0]} … ${PLATFORM_KEYS.at(-1)})`);
    if (seen.has(key)) return problem(`${key} is listed twice`);
    seen.add(key);
    const value = rate(match[2]!);
    if (value === null) return problem(`${key}: '${match[2]!.slice(0, 40)}' is not a positive number of requests per second`);
    out[key] = value;
  }
  return out;
}

const scrapeRpsSchema = z.string().default(String(DEFAULT_SCRAPE_RPS)).transform(parseRatePerPlatform);

/** SCRAPE_RPS_PER_PROXY: as SCRAPE_RPS_PER_PLATFORM; unset, each proxy gets the platform's rate. */
const scrapeRpsPerProxySchema = z
  .string()
  .optional()
  .transform((text, ctx) => (text === undefined || text.trim() === '' ? undefined : parseRatePerPlatform(text, ctx)));

/** SCRAPE_PROXY_URLS (src/scrapers/egress/proxy-urls.ts); the message never repeats a URL (it may hold a password). */
const proxyUrlsSchema = z
  .string()
  .optional()
  .transform((text, ctx): Readonly<Record<ProxiedSite, readonly ProxyEndpoint[]>> => {
    try {
      return parseProxyUrls(text);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
      return z.NEVER;
    }
  });

/** SCRAPE_CA_FILE (src/scrapers/scrape-trust.ts): a readable PEM file of certificates that parse, or unset. */
const caFileSchema = z
  .string()
  .optional()
  .transform((file, ctx) => {
    if (file === undefined || file.trim() === '') return undefined;
    try {
      readCaCertificates(file);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
      return z.NEVER;
    }
    return file;
  });

const schema = z.object({
  /** PostgreSQL connection string; when unset, an embedded PostgreSQL is started under DATA_DIR. */
  DATABASE_URL: z.string().url().optional(),
  /** Where the embedded PostgreSQL and other local state live between runs. */
  DATA_DIR: z.string().min(1).default('./data'),
  /** Port of the embedded PostgreSQL (5432 is usually a system server's). */
  EMBEDDED_PG_PORT: port.default(5433),
  /** Public gateway port. */
  PORT: port.default(8080),
  /** Address the gateway and metrics servers bind to. */
  HOST: z.string().min(1).default('0.0.0.0'),
  /** Trust X-Forwarded-For from a reverse proxy when limiting unauthenticated callers by address. */
  TRUST_PROXY: flag('false'),
  /** Largest accepted request body, in bytes. */
  MAX_BODY_BYTES: positiveInt.default(1_048_576),
  /** Internal Prometheus metrics port (never routed publicly). */
  METRICS_PORT: port.default(9464),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** How long a verified key is trusted in-process: the upper bound on revocation delay. */
  KEY_CACHE_TTL_MS: z.coerce.number().int().min(0).max(60_000).default(5_000),
  /** Default per-key requests per calendar minute (spec section 8); keys may override. */
  RATE_LIMIT_PER_MINUTE: positiveInt.default(30),
  /** Requests per minute per client address that carry no valid key. */
  UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: positiveInt.default(30),
  /**
   * On-demand scrapes (POST /events/scrape) one account may send to one platform per calendar
   * minute, over all its keys; a plan may set its own (plans.scrape_requests_per_platform_per_minute).
   * On-demand scrapes are not paced per address (docs/scraping.md), so this is what keeps one
   * account from spending a platform's request budget; why 10: docs/live-availability.md.
   */
  SCRAPE_REQUESTS_PER_PLATFORM_PER_MINUTE: positiveInt.max(1_000_000).default(10),
  /** Reservations older than this are released by the sweeper (a crashed request is never billed). */
  RESERVATION_TIMEOUT_MS: positiveInt.default(10 * 60_000),
  /** Most live (not deleted) watchlist items one account may hold. */
  WATCHLIST_MAX_ITEMS: positiveInt.default(1000),
  /** Statement timeout for API queries, so no request hangs on the database. */
  DB_STATEMENT_TIMEOUT_MS: positiveInt.default(5_000),
  DB_POOL_MAX: positiveInt.default(20),

  // --- Retention (src/retention/, docs/operations.md "Retention"): pruned by the gateway's housekeeping ---
  /** Days a watchlist change is kept once every change-feed consumer has passed it. */
  WATCHLIST_CHANGES_RETENTION_DAYS: positiveInt.default(7),
  /** Days a deleted watchlist item is kept before its row is removed. */
  WATCHLIST_DELETED_RETENTION_DAYS: positiveInt.default(30),
  /** Days settled credit ledger rows, past periods' usage counters and meter batches are kept: billing evidence. */
  CREDIT_LEDGER_RETENTION_DAYS: z.coerce
    .number()
    .int()
    .min(35, 'must be at least 35: Stripe takes meter events up to 35 days old, and the ledger is the evidence of them')
    .default(400),
  /** Days a Stripe event id is kept to recognise a redelivery; Stripe retries for up to 3 days. */
  STRIPE_EVENTS_RETENTION_DAYS: z.coerce.number().int().min(4, "must be at least 4: Stripe retries an event for up to 3 days").default(30),
  /** Hours the snapshots and failure status of a target no item watches are kept. */
  MONITOR_UNWATCHED_RETENTION_HOURS: positiveInt.default(24),
  /** Hours every tracking statistics row is kept; older ones are thinned to each event's last row of a UTC day. */
  TRACKING_DETAIL_RETENTION_HOURS: z.coerce
    .number()
    .int()
    .min(25, 'must be at least 25: the 24 h figures read the row a day before the newest')
    .default(48),
  /**
   * The scrape worker's own PostgreSQL role (docker-compose: ticket_market_scraper). When set,
   * applying the migrations also gives it exactly the rights of db/scraper-grants.ts.
   */
  SCRAPER_DB_ROLE: z
    .string()
    .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case PostgreSQL role name (letters, digits, _)')
    .optional(),
  /** Create a demo account and key on first start (printed once); off by default with NODE_ENV=production. */
  DEMO_ACCOUNT: flag('true'),
  /** Which billing provider backs plans and subscriptions: `local` (PostgreSQL) or `stripe`. */
  BILLING_PROVIDER: z.enum(['local', 'stripe']).default('local'),
  // --- Stripe (src/billing/stripe/), read only when BILLING_PROVIDER=stripe ---
  /** A secret or restricted API key: `sk_live_…`, `sk_test_…`, `rk_live_…` or `rk_test_…`. */
  STRIPE_SECRET_KEY: z
    .string()
    .regex(/^[sr]k_(live|test)_[A-Za-z0-9]+$/, 'must be a Stripe secret key (sk_live_…, sk_test_…, rk_live_… or rk_test_…)')
    .optional(),
  /** The signing secret of the Stripe webhook endpoint that posts to /billing/stripe/webhook (`whsec_…`). */
  STRIPE_WEBHOOK_SECRET: z
    .string()
    .regex(/^whsec_[A-Za-z0-9+/=]+$/, 'must be a Stripe webhook signing secret (whsec_…)')
    .optional(),
  /** Where the Stripe API is: unset for Stripe itself; stripe-mock's URL in tests. */
  STRIPE_API_BASE: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL such as http://127.0.0.1:12111' })
    .refine((v) => {
      const u = new URL(v);
      return (u.pathname === '/' || u.pathname === '') && !u.search && !u.hash && !u.username && !u.password;
    }, 'must be a bare origin (scheme, host and port, no path, query or credentials)')
    .optional(),
  /** How often every Stripe subscription is read again into the mirror (repairs a missed webhook). */
  STRIPE_RECONCILE_INTERVAL_MS: z.coerce.number().int().min(10_000).default(15 * 60_000),
  /** How often charged credits are reported to the Stripe Billing Meter (src/billing/stripe/meter-sync.ts). */
  STRIPE_METER_SYNC_INTERVAL_MS: z.coerce.number().int().min(1_000).default(60_000),
  /** Task queue of Stripe billing's background work (reconcile, meter sync). */
  BILLING_TASK_QUEUE: z.string().min(1).default('billing'),
  /** The Billing Meter's event name that captured credits are reported under. */
  STRIPE_METER_EVENT_NAME: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,100}$/, 'must be 1 to 100 letters, digits, _ . or -')
    .default('api_credits'),

  // --- Temporal (temporal/) ---
  /** host:port of a Temporal frontend; when unset, `npm start` runs `temporal server start-dev`. */
  TEMPORAL_ADDRESS: z.string().min(1).optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  /** A temporal CLI binary to use instead of the per-machine cache (temporal/binary.ts). */
  TEMPORAL_CLI_PATH: z.string().min(1).optional(),
  /** Ports of the embedded dev server: gRPC frontend and Web UI. */
  TEMPORAL_PORT: port.default(7233),
  TEMPORAL_UI_PORT: port.default(8233),
  /** Task queues, split so scrapes and monitors can be scaled apart. */
  SCRAPE_TASK_QUEUE: z.string().min(1).default('scrapes'),
  MONITOR_TASK_QUEUE: z.string().min(1).default('monitors'),
  /** Run the Temporal worker inside `npm start` (dev); production runs `npm run worker` apart. */
  RUN_WORKER: flag('true'),
  /**
   * What `npm run worker` runs (temporal/worker-roles.ts): `scrape` (scrapes, monitors, event
   * tracking; the browser; refuses to start holding a webhook or Stripe secret), `deliver`
   * (webhooks and Stripe billing; never loads the scrapers) or `all` (both, as `npm start` does).
   */
  WORKER_ROLE: z.enum(['all', 'scrape', 'deliver']).default('all'),
  /**
   * How often the worker compares each account's subscription with the state its monitoring,
   * webhooks and tracking last acted on (src/accounts/service-state.ts): a change takes effect
   * within this, and an account that stopped being served stops consuming.
   */
  SERVICE_SWEEP_MS: z.coerce.number().int().min(100).max(50_000).default(10_000),

  // --- Watchlist monitors (src/monitors/, workflows/) ---
  /** How often each watched target (platform, event, region) is scraped, shared by all its items. */
  MONITOR_INTERVAL_MS: z.coerce.number().int().min(200).default(5_000),
  /** Each wait is MONITOR_INTERVAL_MS × (1 ± this), so targets polled together spread out. */
  MONITOR_JITTER_RATIO: z.coerce.number().min(0).max(0.9).default(0.2),
  /** Shard pollers per platform: each is one workflow and one long-running poll activity (src/monitors/shards.ts). */
  MONITOR_SHARDS_PER_PLATFORM: z.coerce.number().int().min(1).max(256).default(4),
  /** How long one poll activity runs before it hands its schedule back and the workflow continues as new. */
  MONITOR_POLL_RUN_MS: z.coerce.number().int().min(1_000).max(30 * 60_000).default(10 * 60_000),
  /**
   * A target whose event answers not-found this long in a row is retired: each item on it is told
   * once (`target_retired`) and it is no longer polled (src/monitors/target-status.ts).
   */
  MONITOR_RETIRE_AFTER_MS: z.coerce.number().int().min(1_000).default(3_600_000),
  /**
   * Platform incidents (src/monitors/platform-incidents.ts): at least this share of a platform's
   * watched targets failing at once (not found or blocked), and at least MONITOR_INCIDENT_MIN_TARGETS
   * of them, is the platform's failure: nothing of it is retired, its items are told once, and
   * again when fewer than half this share fail. docs/monitoring.md "Platform incidents" gives the figures.
   */
  MONITOR_INCIDENT_SHARE: z.coerce.number().gt(0).max(1).default(0.5),
  MONITOR_INCIDENT_MIN_TARGETS: z.coerce.number().int().min(2).max(100_000).default(5),
  /** A target's failure counts toward an incident this long after its last answer (a blocked one also while its Retry-After lasts). */
  MONITOR_INCIDENT_WINDOW_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(120_000),
  /** How often the workers evaluate the platforms (one evaluation at a time across workers). */
  MONITOR_INCIDENT_CHECK_MS: z.coerce.number().int().min(100).max(60_000).default(2_000),
  /**
   * Which due target gets a shard's next request slot: `fair` shares the platform's budget
   * between the accounts watching it (src/monitors/fair-share.ts); `due`, the earliest due first
   * (first come, first served, as before issue 25), is kept for comparison (`npm run bench:fairness`).
   */
  MONITOR_POLL_ORDER: z.enum(POLL_ORDERS).default('fair'),
  /**
   * One poller per shard around a takeover (activities/poll-shard.ts): a loop that stood still past
   * its heartbeat timeout asks nothing more, and a retry waits for the previous attempt's checks to
   * stop. `false` exists for the rehearsal's deliberately broken run (docs/operations.md), which
   * must show its double-poll check failing; never in production.
   */
  MONITOR_TAKEOVER_GUARD: flag('true'),
  /**
   * Requests the shard pollers of one worker have open at once, all platforms together. Past it a
   * poll waits in arrival order, so keep it above what the budgets need (each platform's rate ×
   * its answer time); each shard also runs at most 64 polls at once.
   */
  MONITOR_FETCH_CONCURRENCY: positiveInt.max(4_096).default(256),

  // --- Market Data event tracking (workflows/track-event.ts) ---
  /** How often each tracked marketplace event is scraped (the worker's setting, read every tick). */
  TRACK_INTERVAL_MS: z.coerce.number().int().min(200).default(60_000),
  /**
   * A tracking ends this long after its event's date (the worker's setting, read every tick).
   * A day: the date is the event's start, and sales, resale and the last 24 h figures carry on
   * for some hours after it, in any time zone.
   */
  TRACKING_END_AFTER_EVENT_MS: z.coerce.number().int().min(0).default(86_400_000),
  /** A tracking whose event has no date (or was never scraped) ends this long after it started: 30 days. */
  TRACKING_UNDATED_MAX_MS: z.coerce.number().int().min(1_000).default(30 * 86_400_000),
  /**
   * A tracking from before accounts were recorded (`unattributed`, migration 027) that no account
   * has claimed (added again) this long after migration 034 ends like a tracking no account holds: 30 days.
   */
  TRACKING_UNATTRIBUTED_MAX_MS: z.coerce.number().int().min(1_000).default(30 * 86_400_000),
  /** Events one account may track at once (POST /svc/data/events/add answers 400 past it). */
  TRACKING_MAX_EVENTS_PER_ACCOUNT: positiveInt.default(100),

  // --- Scrapers (src/scrapers/) and the platform simulator (src/simulator/) ---
  /** Port of the platform simulator that `npm start` runs; the scrapers' default target. */
  SIM_PORT: port.default(8090),
  /** Run the simulator inside `npm start`; off by default with NODE_ENV=production. */
  RUN_SIMULATOR: flag('true'),
  /**
   * The bot walls of the simulator that `npm start` runs (docs/simulator.md, "Bot walls"): every
   * platform and marketplace checks TLS, HTTP/2, headers and its rotating bot cookie, as the real
   * ones do; false answers as before issue 37 (plain HTTP accepted, nothing checked).
   */
  SIM_WALLS: flag('true'),
  /** Milliseconds between the simulator's inventory drift steps; 0 turns drift off. */
  SIM_DRIFT_MS: z.coerce.number().int().min(0).default(30_000),
  /** How long a session token of the simulated pf_01's anti-bot protection lives. */
  SIM_PF01_SESSION_TTL_MS: z.coerce.number().int().min(1000).max(86_400_000).default(600_000),
  /** Upper bound of one on-demand scrape, retries included (spec 4.2: 60 s). */
  SCRAPE_TIMEOUT_MS: positiveInt.default(60_000),
  /** Scrapes (HTTP and browser pages) one worker runs at once. */
  SCRAPE_CONCURRENCY: positiveInt.default(20),
  /** Pages the warm browser runs at once (pf_01). */
  BROWSER_PAGES: positiveInt.default(4),
  /** pf_01 sessions a worker keeps, each made in the warm browser and used by HTTP polls. */
  BROWSER_SESSIONS: positiveInt.max(64).default(4),
  /** Chromium for the client-rendered platforms. */
  CHROMIUM_PATH: z.string().min(1).default('/usr/bin/chromium'),
  /**
   * The user the scrapers' Chromium runs as when the worker runs as root (src/scrapers/browser-user.ts):
   * it renders third-party pages, so it holds none of the worker's secrets or files; `root` keeps
   * it as root with --no-sandbox (the way before issue 38).
   */
  SCRAPE_BROWSER_USER: z
    .string()
    .regex(/^[a-z_][a-z0-9_-]{0,31}$/, 'a user name (getent passwd)')
    .default('nobody'),
  /**
   * Requests per second each platform may receive from the monitors of the whole deployment:
   * one number for all, or `pf_03=200,pf_01=5` (the rest get DEFAULT_SCRAPE_RPS). Parsed into a
   * rate per platform.
   */
  SCRAPE_RPS_PER_PLATFORM: scrapeRpsSchema,
  /**
   * The proxies scrapes and polls leave through (docs/scraping.md): one list for every platform,
   * or `pf_03,pf_08=http://u:p@a:8000 http://b:8000;*=socks5://c:1080`. Unset: direct.
   */
  SCRAPE_PROXY_URLS: proxyUrlsSchema,
  /**
   * A PEM file of CAs the scrapers trust beside the system's (a simulator's own CA, a TLS-inspecting
   * gateway's); checked at start. Unset: the system store only. Verification is never turned off.
   */
  SCRAPE_CA_FILE: caFileSchema,
  /**
   * Requests per second each proxy may send to a platform (the same forms as
   * SCRAPE_RPS_PER_PLATFORM). A platform's budget is this times its healthy proxies. Unset: each
   * proxy gets SCRAPE_RPS_PER_PLATFORM, the rate one address has always had.
   */
  SCRAPE_RPS_PER_PROXY: scrapeRpsPerProxySchema,
  /** A scrape session (an exit, a cookie jar, a header set) ends after this many requests... */
  SCRAPE_SESSION_MAX_REQUESTS: positiveInt.max(1_000_000).default(1_000),
  /** ... or this long after it began, whichever comes first. */
  SCRAPE_SESSION_MAX_AGE_MS: positiveInt.min(1_000).default(30 * 60_000),
  /** How long an exit the platform blocked rests when it gave no Retry-After; doubles while blocks go on. */
  SCRAPE_PROXY_COOLDOWN_MS: positiveInt.min(100).max(3_600_000).default(60_000),
  /**
   * The first back-off of a target the platform refused, when the refusal is charged to the
   * target rather than to the address it came from (src/scrapers/egress/refusals.ts); doubles
   * while it is refused in a row, up to 30 minutes, and a Retry-After comes first.
   */
  SCRAPE_TARGET_BACKOFF_MS: positiveInt.min(100).max(3_600_000).default(10_000),
  /**
   * Benches only (bench:capacity): above 0, the pollers' pf_03 pages are synthetic, rendered in the
   * worker with no request, each event's stock moving once per this many ms
   * (src/scrapers/synthetic-pages.ts). 0, the default: off. Never set in production.
   */
  SCRAPE_SYNTHETIC_CHANGE_MS: z.coerce.number().int().min(0).max(86_400_000).default(0),

  // --- Real-time stream (src/stream/) ---
  /** Port of the uWebSockets.js stream node (bound to HOST); `npm start` also forwards the path from PORT. */
  STREAM_PORT: port.default(8081),
  /** Run the stream node inside `npm start` (production: `npm run stream` apart). */
  RUN_STREAM: flag('true'),
  /** Milliseconds between heartbeats on every live connection. */
  STREAM_HEARTBEAT_MS: z.coerce.number().int().min(1_000).max(300_000).default(25_000),
  /** Unsent bytes one connection may hold; past it the client is closed with 1013 and resumes. */
  STREAM_MAX_BUFFERED_BYTES: z.coerce.number().int().min(16_384).max(64 * 1_048_576).default(1_048_576),
  /** Most log rows one connection replays on resume; past it the server closes with 1013 and the client reconnects from where it got to. */
  STREAM_MAX_REPLAY_ROWS: positiveInt.default(10_000),
  /** How long notifications stay in the log for resuming; older rows are pruned. */
  STREAM_RETENTION_HOURS: positiveInt.default(168),
  /** Safety re-read of the log when no NOTIFY arrived (milliseconds). */
  STREAM_POLL_MS: z.coerce.number().int().min(100).default(5_000),
  /** Open stream connections one key may hold, across every node (a key's own limit overrides it). */
  STREAM_MAX_CONNECTIONS_PER_KEY: positiveInt.default(STREAM_CONNECTION_DEFAULTS.perKey),
  /** Open stream connections one account may hold over all its keys, across every node. */
  STREAM_MAX_CONNECTIONS_PER_ACCOUNT: positiveInt.default(STREAM_CONNECTION_DEFAULTS.perAccount),
  // --- Webhooks (src/webhooks/, src/apis/webhooks/) ---
  /**
   * 32 bytes in base64 that seal webhook URLs and signing secrets at rest; every process of a
   * deployment needs the same one. Unset: `npm start` keeps one in DATA_DIR/webhook-secret.key.
   */
  WEBHOOK_SECRET_KEY: z
    .string()
    .refine((v) => /^[A-Za-z0-9+/]{43}=$/.test(v) && Buffer.from(v, 'base64').length === 32, 'must be 32 bytes in base64 (openssl rand -base64 32)')
    .optional(),
  /** Local development and tests only: webhooks may use http and reach private and loopback addresses. */
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: flag('false'),
  /** Task queue of the webhook deliveries, apart so a slow endpoint never holds up monitors or scrapes. */
  WEBHOOK_TASK_QUEUE: z.string().min(1).default('webhooks'),
  /** Retry rounds (activities) one worker runs at once; the dispatcher bounds first attempts apart. */
  WEBHOOK_CONCURRENCY: positiveInt.default(200),
  /** Delivery attempts to one webhook one worker runs at once: a slow endpoint holds at most this many slots. */
  WEBHOOK_PER_ENDPOINT_CONCURRENCY: positiveInt.default(4),
  /** Days a delivered or failed webhook delivery (with its attempts) is kept before it is pruned. */
  WEBHOOK_RETENTION_DAYS: positiveInt.default(30),
  /** Waits between delivery attempts in ms, comma-separated (default: src/webhooks/retry-schedule.ts, about 31.7 h). */
  WEBHOOK_RETRY_SCHEDULE_MS: z
    .string()
    .regex(/^\s*\d+(\s*,\s*\d+)*\s*$/, 'must be a comma-separated list of milliseconds')
    .transform((v) => v.split(',').map((x) => Number(x.trim())))
    .optional(),
  // Each platform's base URL (PF_01_BASE_URL .. PF_11_BASE_URL) and each marketplace's
  // (MARKETPLACE_A_BASE_URL, MARKETPLACE_B_BASE_URL) defaults to the simulator; they are read by
  // platformBaseUrls() and marketplaceBaseUrls() below, not listed one by one here.
});

export type Config = z.infer<typeof schema> & { dataDir: string };

export class ConfigError extends Error {}

/** Stripe billing cannot start without its API key and its webhook signing secret. */
function requireStripeSettings(c: z.infer<typeof schema>, ctx: z.RefinementCtx): void {
  if (c.BILLING_PROVIDER !== 'stripe') return;
  for (const name of ['STRIPE_SECRET_KEY', 'STRIPE_WEBHOOK_SECRET'] as const) {
    if (!c[name]) ctx.addIssue({ code: 'custom', path: [name], message: 'is required when BILLING_PROVIDER=stripe' });
  }
}

/** For entry points: the configuration, or exit 2 with the message naming the bad variable. */
export function loadConfigOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      // eslint-disable-next-line no-console -- an entry point's one message to the operator
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
}

/**
 * What NODE_ENV=production (the image sets it) turns off unless asked for: a deployment serves
 * paying accounts, so it starts no demo account with a printed key and no simulated platforms.
 */
export const PRODUCTION_DEFAULTS = { DEMO_ACCOUNT: 'false', RUN_SIMULATOR: 'false' } as const;

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  // Empty strings mean "unset" so `PORT= npm start` behaves like no PORT at all.
  const given = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const cleaned = given.NODE_ENV === 'production' ? { ...PRODUCTION_DEFAULTS, ...given } : given;
  const parsed = schema.superRefine(requireStripeSettings).safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  return { ...parsed.data, dataDir: path.resolve(parsed.data.DATA_DIR) };
}

/**
 * Each key's base URL: its environment variable when set (an http(s) URL), else the simulator's
 * mount for the key. What every scraper and tracker fetches must lie below one of these.
 */
function baseUrls<K extends string>(
  keys: readonly K[],
  variable: (key: K) => string,
  config: Pick<Config, 'SIM_PORT'>,
  env: Record<string, string | undefined>,
): Record<K, string> {
  const out = {} as Record<K, string>;
  for (const key of keys) {
    const name = variable(key);
    const given = env[name];
    if (given && !z.url({ protocol: /^https?$/ }).safeParse(given).success) {
      throw new ConfigError(`invalid configuration:\n  ${name}: must be an http(s) URL`);
    }
    // The simulator is reached as its platforms would be: over HTTPS, its CA trusted (scrapeCaFile).
    out[key] = (given || `https://127.0.0.1:${config.SIM_PORT}/${key}`).replace(/\/+$/, '');
  }
  return out;
}

/** Where the simulator that `npm start` runs writes its CA (a fresh one at every start). */
export function simulatorCaFile(config: Pick<Config, 'dataDir'>): string {
  return path.join(config.dataDir, 'simulator', 'ca.pem');
}

/**
 * The CA file the scrapers trust beside the system store: SCRAPE_CA_FILE when set; else, when a
 * platform or marketplace is left to its default (the simulator's HTTPS port), the simulator's CA,
 * once it has written it, so that `npm start` needs no setting; else none.
 */
export function scrapeCaFile(config: Pick<Config, 'SCRAPE_CA_FILE' | 'dataDir'>, env: Record<string, string | undefined> = process.env): string | undefined {
  if (config.SCRAPE_CA_FILE) return config.SCRAPE_CA_FILE;
  const variables = [...PLATFORM_KEYS.map((k) => `${k.toUpperCase()}_BASE_URL`), 'MARKETPLACE_A_BASE_URL', 'MARKETPLACE_B_BASE_URL'];
  // Only once that simulator has written it: a worker whose scrapes are all pointed elsewhere (a
  // test's own simulator) has no such file, and needs none.
  const own = simulatorCaFile(config);
  return variables.some((name) => !env[name]) && fs.existsSync(own) ? own : undefined;
}

/**
 * Base URL of every live-availability platform: `PF_NN_BASE_URL` when set, else the simulator's
 * mount for that platform. Scrapers only ever fetch below these URLs (never a client's host).
 */
export function platformBaseUrls(config: Pick<Config, 'SIM_PORT'>, env: Record<string, string | undefined> = process.env): Record<string, string> {
  return baseUrls(PLATFORM_KEYS, (key) => `${key.toUpperCase()}_BASE_URL`, config, env);
}

/**
 * Requests per second each platform may receive from this deployment (SCRAPE_RPS_PER_PLATFORM,
 * checked at start-up like every variable): a poller running one of N shards of a platform
 * takes 1/N of it.
 */
export function scrapeRpsPerPlatform(config: Pick<Config, 'SCRAPE_RPS_PER_PLATFORM'>): Readonly<Record<PlatformKey, number>> {
  return config.SCRAPE_RPS_PER_PLATFORM;
}

/**
 * Requests per second one exit (a proxy, or this machine when a platform has none) may send to
 * each platform: SCRAPE_RPS_PER_PROXY for proxied platforms (SCRAPE_RPS_PER_PLATFORM when unset),
 * SCRAPE_RPS_PER_PLATFORM for direct ones, so a deployment without proxies behaves as before.
 */
export function scrapeRpsPerExit(config: Pick<Config, 'SCRAPE_RPS_PER_PLATFORM' | 'SCRAPE_RPS_PER_PROXY' | 'SCRAPE_PROXY_URLS'>): Readonly<Record<PlatformKey, number>> {
  return Object.fromEntries(
    PLATFORM_KEYS.map((k) => [k, config.SCRAPE_PROXY_URLS[k].length > 0 ? (config.SCRAPE_RPS_PER_PROXY?.[k] ?? config.SCRAPE_RPS_PER_PLATFORM[k]) : config.SCRAPE_RPS_PER_PLATFORM[k]]),
  ) as Record<PlatformKey, number>;
}

/**
 * Base URL of the trackable marketplaces (MARKETPLACE_A_BASE_URL, MARKETPLACE_B_BASE_URL), else
 * the simulator's mount for each. The tracker only ever fetches below these URLs, and an event
 * URL sent to POST /svc/data/events/add must name the marketplace's public host or lie below
 * its base URL.
 */
export function marketplaceBaseUrls(
  config: Pick<Config, 'SIM_PORT'>,
  env: Record<string, string | undefined> = process.env,
): Record<'marketplace_a' | 'marketplace_b', string> {
  return baseUrls(['marketplace_a', 'marketplace_b'] as const, (key) => `${key.toUpperCase()}_BASE_URL`, config, env);
}
