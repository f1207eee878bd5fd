// The bench's knobs, all from the environment so a quick run is one line
// (`BENCH_ITEMS=500 BENCH_TARGETS=50 BENCH_SOAK_MS=60000 npm run bench:monitors`), and the
// command line the report prints so a figure can be reproduced.
import os from 'node:os';
import { parseBenchPlatform, type BenchPlatform } from './platform.ts';
import { envNumber } from './support.ts';

export interface BenchConfig {
  /** The platform every target is on (BENCH_PLATFORM: pf_03, the default, or pf_01). */
  platform: BenchPlatform;
  /** Watchlist items created through POST /watchlist (BENCH_ITEMS). */
  items: number;
  /** Distinct events of the platform on the simulator the items are spread over (BENCH_TARGETS). */
  targets: number;
  /** Accounts owning the items (BENCH_ACCOUNTS; at least enough to stay under 1000 items each). */
  accounts: number;
  /** POST /watchlist requests in flight (BENCH_CONCURRENCY). */
  concurrency: number;
  /**
   * The order the items are created in (BENCH_CREATE_ORDER): `account` (the default), each
   * account's items one after another, as a broker importing a list sends them (issue 40), or
   * `interleaved`, item i by item i, the requests in flight each another account's (the order of
   * every run before issue 40's grouped creates).
   */
  createOrder: 'account' | 'interleaved';
  /** POSTs, one at a time, every 200 ms, once every item exists (BENCH_POST_SAMPLES; 0: none). */
  postSamples: number;
  /** MONITOR_INTERVAL_MS of the worker (BENCH_INTERVAL_MS). */
  intervalMs: number;
  /** A window before any item exists: what the parts cost doing nothing (BENCH_IDLE_MS; 0: none). */
  idleMs: number;
  /** The quiet window measuring CPU per poll (BENCH_QUIET_MS). */
  quietMs: number;
  /** The churn window (BENCH_SOAK_MS). */
  soakMs: number;
  /** Share of the targets changed every interval (BENCH_CHANGE_FRACTION). */
  changeFraction: number;
  /** SIGKILL the worker during the soak (BENCH_KILL=0: no). */
  kill: boolean;
  /** When, as a share of the soak (BENCH_KILL_AT, 0.6). */
  killAt: number;
  /** How long the worker stays dead (BENCH_KILL_DOWN_MS). */
  killDownMs: number;
  /**
   * BENCH_TEMPORAL: `dev` (the default: the CLI's dev server on SQLite, as `npm start` and the tests
   * run it) or `server` (go.temporal.io/server on the bench's PostgreSQL with deploy/temporal, its
   * services in one process, as docker-compose runs it).
   */
  temporal: 'dev' | 'server';
  /** The platform's SCRAPE_RPS_PER_PLATFORM for the worker (BENCH_RPS; default 2 × targets/interval). */
  rps: number;
  /** The simulator's pf_01 session lifetime, startSimulator's pf01SessionTtlMs (BENCH_SESSION_TTL_MS). */
  sessionTtlMs: number;
  /** The worker's BROWSER_SESSIONS, passed only when BENCH_BROWSER_SESSIONS is set (null: not set). */
  browserSessions: number | null;
  /** Accounts with a WebSocket client on the stream node (BENCH_STREAM_ACCOUNTS; default all). */
  streamAccounts: number;
  /** How long to wait for every baseline before going on without (BENCH_BASELINE_TIMEOUT_MS). */
  baselineTimeoutMs: number;
  /** Intervals to wait after the soak before checking the log (BENCH_SETTLE_INTERVALS). */
  settleIntervals: number;
  /** Loopback proxies the worker's requests go through (BENCH_PROXIES; 0: none, directly). */
  proxies: number;
  /** SCRAPE_RPS_PER_PROXY for the platform (BENCH_PROXY_RPS; default `rps` split over the proxies). */
  proxyRps: number;
  /** The simulator's bot walls (BENCH_WALLS=off: none; default on, as `npm start` runs it). */
  walls: boolean;
}

/**
 * bench:monitors' stack for a bench that drives it its own way (bench:alerts, bench:capacity):
 * the fields startStack reads, with nothing of bench:monitors' own phases (no kill, no POST
 * samples, no idle or soak window); `over` sets what the bench needs.
 */
export function stackOnlyConfig(over: Partial<BenchConfig> & Pick<BenchConfig, 'intervalMs'>): BenchConfig {
  return {
    platform: 'pf_03',
    temporal: 'dev',
    items: 1,
    targets: 1,
    accounts: 1,
    concurrency: 1,
    createOrder: 'account',
    postSamples: 0,
    idleMs: 0,
    quietMs: 1_000,
    soakMs: 1_000,
    changeFraction: 0,
    kill: false,
    walls: true,
    killAt: 0.5,
    killDownMs: 0,
    rps: 20,
    sessionTtlMs: 600_000,
    browserSessions: null,
    streamAccounts: 0,
    baselineTimeoutMs: 300_000,
    settleIntervals: 1,
    proxies: 0,
    proxyRps: 20,
    ...over,
  };
}

/** Defaults another bench gives the knobs it shares with bench:monitors (bench:proxies). */
export interface BenchDefaults {
  items?: number;
  targets?: number;
  quietMs?: number;
  soakMs?: number;
  proxies?: number;
}

export function benchConfig(defaults: BenchDefaults = {}): BenchConfig {
  const items = Math.max(1, Math.round(envNumber('BENCH_ITEMS', defaults.items ?? 10_000)));
  const targets = Math.max(1, Math.min(items, Math.round(envNumber('BENCH_TARGETS', defaults.targets ?? 1_000))));
  const intervalMs = Math.max(200, envNumber('BENCH_INTERVAL_MS', 5_000));
  const accounts = Math.max(1, Math.round(envNumber('BENCH_ACCOUNTS', 50)), Math.ceil(items / 900));
  const changeFraction = envNumber('BENCH_CHANGE_FRACTION', 0.1);
  if (changeFraction > 1) throw new Error(`BENCH_CHANGE_FRACTION is a share of the targets (0..1), got ${changeFraction}`);
  const killAt = envNumber('BENCH_KILL_AT', 0.6);
  if (killAt <= 0 || killAt >= 1) throw new Error(`BENCH_KILL_AT is a share of the soak (between 0 and 1), got ${killAt}`);
  const sessionTtlMs = envNumber('BENCH_SESSION_TTL_MS', 600_000);
  if (sessionTtlMs < 1_000) throw new Error(`BENCH_SESSION_TTL_MS is the simulator's pf_01 session lifetime in ms, at least 1000, got ${sessionTtlMs}`);
  const browserSessionsRaw = process.env.BENCH_BROWSER_SESSIONS?.trim();
  let browserSessions: number | null = null;
  if (browserSessionsRaw) {
    browserSessions = Number(browserSessionsRaw);
    if (!Number.isInteger(browserSessions) || browserSessions < 1) throw new Error(`BENCH_BROWSER_SESSIONS must be a whole number of at least 1, got ${browserSessionsRaw}`);
  }
  const rps = envNumber('BENCH_RPS', Math.ceil((2 * targets * 1000) / intervalMs));
  const proxies = envNumber('BENCH_PROXIES', defaults.proxies ?? 0);
  // Each proxy is a process's socket set and a 127.0.0.x address; loopbackAddress numbers them up to 127.0.255.251.
  if (!Number.isInteger(proxies) || proxies > 10_000) throw new Error(`BENCH_PROXIES is a number of loopback proxies (0 to 10000), got ${proxies}`);
  const proxyRps = envNumber('BENCH_PROXY_RPS', proxies > 0 ? rps / proxies : rps);
  if (proxies > 0 && proxyRps <= 0) throw new Error(`BENCH_PROXY_RPS must be above 0, got ${proxyRps}`);
  return {
    platform: parseBenchPlatform(process.env.BENCH_PLATFORM),
    items,
    targets,
    accounts,
    concurrency: Math.max(1, Math.round(envNumber('BENCH_CONCURRENCY', 16))),
    createOrder: createOrderOf(process.env.BENCH_CREATE_ORDER),
    postSamples: Math.max(0, Math.round(envNumber('BENCH_POST_SAMPLES', 100))),
    intervalMs,
    idleMs: envNumber('BENCH_IDLE_MS', 15_000),
    quietMs: Math.max(1_000, envNumber('BENCH_QUIET_MS', defaults.quietMs ?? 60_000)),
    soakMs: Math.max(1_000, envNumber('BENCH_SOAK_MS', defaults.soakMs ?? 600_000)),
    changeFraction,
    kill: process.env.BENCH_KILL !== '0',
    walls: process.env.BENCH_WALLS !== 'off',
    killAt,
    killDownMs: envNumber('BENCH_KILL_DOWN_MS', 2_000),
    temporal: temporalKind(process.env.BENCH_TEMPORAL),
    rps,
    sessionTtlMs,
    browserSessions,
    streamAccounts: Math.min(accounts, Math.round(envNumber('BENCH_STREAM_ACCOUNTS', accounts))),
    baselineTimeoutMs: envNumber('BENCH_BASELINE_TIMEOUT_MS', 300_000),
    settleIntervals: Math.max(1, Math.round(envNumber('BENCH_SETTLE_INTERVALS', 3))),
    proxies,
    proxyRps,
  };
}

function createOrderOf(v: string | undefined): BenchConfig['createOrder'] {
  if (v === undefined || v === '' || v === 'account') return 'account';
  if (v === 'interleaved') return 'interleaved';
  throw new Error(`BENCH_CREATE_ORDER is account or interleaved, got ${v}`);
}

/** Changes per interval: the share of the targets, at least one when the share is not zero. */
export function changesPerInterval(c: BenchConfig): number {
  return c.changeFraction > 0 ? Math.max(1, Math.round(c.changeFraction * c.targets)) : 0;
}

/**
 * The command as run: the settings given in the environment (DATABASE_URL without its password),
 * and BENCH_PLATFORM always, so the platform is named even when it was the default.
 */
export function commandLine(platform: BenchPlatform): string {
  return benchCommandLine('bench:monitors', { ...process.env, BENCH_PLATFORM: platform }, ['MONITOR_SHARDS_PER_PLATFORM', 'CHROMIUM_PATH', 'BROWSER_PAGES']);
}

/**
 * A bench's command as run: the BENCH_* knobs, DATABASE_URL (without its password) and `more`
 * settings given in `env`, then `npm run <script>`; shared by bench:monitors and bench:alerts.
 */
export function benchCommandLine(script: string, env: Record<string, string | undefined>, more: readonly string[]): string {
  const given = Object.entries(env)
    .filter(([k]) => k.startsWith('BENCH_') || k === 'DATABASE_URL' || more.includes(k))
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => {
      if (k !== 'DATABASE_URL' || !v) return `${k}=${v}`;
      try {
        const u = new URL(v);
        if (u.password) u.password = '***';
        return `${k}=${u.toString()}`;
      } catch {
        return `${k}=(set)`;
      }
    });
  return [...given, `npm run ${script}`].join(' ');
}

export function machineLine(): string {
  const cpus = os.cpus();
  return `${cpus.length} CPUs (${cpus[0]?.model.trim() ?? 'unknown'}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, load average at start ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`;
}

function temporalKind(raw: string | undefined): BenchConfig['temporal'] {
  const v = (raw ?? '').trim() || 'dev';
  if (v !== 'dev' && v !== 'server') throw new Error(`BENCH_TEMPORAL must be dev or server, got ${JSON.stringify(raw)}`);
  return v;
}
