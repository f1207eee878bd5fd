// The rehearsal's knobs, all from the environment (REHEARSAL_*), so a shorter iteration is one
// line: `REHEARSAL_FAULTS=temporal-down,pg-restart REHEARSAL_SETTLE_MS=15000 npm run rehearsal`.
// The defaults are the full schedule, sized so the whole run stays under 30 minutes on 2 cores.
// Two more, read where they act: REHEARSAL_KEEP_DIR=1 keeps the run directory (every process's
// log), REHEARSAL_DUMP=file writes what the load recorded (windows, changes, items, requests,
// arrivals, the simulator's request log) as JSON.
import { envNumber } from '../bench/monitors/support.ts';

export const FAULT_NAMES = [
  'gateway-kill',
  'stream-kill',
  'scrape-worker-kill',
  'deliver-worker-kill',
  'nginx-kill',
  'worker-sigstop',
  'pg-restart',
  'pg-drop-connections',
  'pg-slow',
  'worker-cut-pg',
  'worker-cut-temporal',
  'deliver-worker-cut-pg',
  'deliver-worker-cut-temporal',
  'stream-cut-pg',
  'webhook-receiver-down',
  'webhook-receiver-slow',
  'webhook-receiver-500',
  'platform-slow',
  'platform-refusing',
  'platform-half',
  'temporal-down',
  'temporal-frontend-kill',
  'temporal-history-kill',
  'temporal-matching-kill',
  'temporal-worker-kill',
  'temporal-cut-pg',
  'nginx-reload',
  'nginx-restart',
] as const;
export type FaultName = (typeof FAULT_NAMES)[number];

export interface RehearsalConfig {
  /** REHEARSAL_FAULTS: a comma-separated subset, run in the order given (default: all, in FAULT_NAMES order). */
  faults: FaultName[];
  /** REHEARSAL_SETTLE_MS: load after a part is back before the next fault (each fault's recovery wait). */
  settleMs: number;
  /** REHEARSAL_WARMUP_MS: load before the first fault (the "no fault" window). */
  warmupMs: number;
  /** REHEARSAL_FINAL_MS: after the load stops, at least this long before the ground truth is read. */
  finalMs: number;
  /** REHEARSAL_ACCOUNTS: accounts, each with its own stream client. */
  accounts: number;
  /** REHEARSAL_KEYS_PER_ACCOUNT: paid requests rotate over every key. */
  keysPerAccount: number;
  /** REHEARSAL_TARGETS: pf_03 events watched. */
  targets: number;
  /** REHEARSAL_ITEMS_PER_TARGET: the standing items on each target (from different accounts). */
  itemsPerTarget: number;
  /** REHEARSAL_WEBHOOK_ACCOUNTS: accounts whose items also deliver to a webhook endpoint on the receiver. */
  webhookAccounts: number;
  /** REHEARSAL_INTERVAL_MS: MONITOR_INTERVAL_MS of the workers. */
  intervalMs: number;
  /** REHEARSAL_CHANGES_PER_S: inventory changes on the simulator, round robin over the targets. */
  changesPerSecond: number;
  /** REHEARSAL_PAID_PER_S: paid requests (ping, platforms) per second. */
  paidPerSecond: number;
  /** REHEARSAL_SCRAPE_EVERY_MS: one POST /events/scrape this often. */
  scrapeEveryMs: number;
  /** REHEARSAL_CHURN_EVERY_MS: one watchlist create, edit or delete this often. */
  churnEveryMs: number;
  /** REHEARSAL_CHURN_LIFE_MS: a churned item is deleted this long after its create. */
  churnLifeMs: number;
  /** REHEARSAL_DOWN_MS: how long Temporal stays down. */
  temporalDownMs: number;
  /** REHEARSAL_SLOW_MS: how long PostgreSQL is 300 ms slower. */
  slowMs: number;
  /** REHEARSAL_CUT_MS: how long a worker is cut off from PostgreSQL or Temporal. */
  cutMs: number;
  /** REHEARSAL_STOP_MS: how long a worker is SIGSTOPped (past the shard pollers' 15 s heartbeat timeout). */
  stopMs: number;
  /** REHEARSAL_WORKERS: `split` (scrape workers and one deliver worker, as docker-compose) or `all` (two of role all). */
  workers: 'split' | 'all';
  /** REHEARSAL_SCRAPE_WORKERS: scrape workers sharing the shards under `split` (docker-compose's replicas: 2). */
  scrapeWorkers: number;
  /** REHEARSAL_TEMPORAL: `server` (go.temporal.io/server on PostgreSQL, as docker-compose) or `dev` (the CLI's dev server on SQLite). */
  temporal: 'server' | 'dev';
  /** REHEARSAL_TEMPORAL_LAYOUT: the server's services `per-service` (a process each, killed in turn) or in `one-process` (as compose). */
  temporalLayout: 'per-service' | 'one-process';
  /**
   * REHEARSAL_BREAK: a deliberately broken build, to show the verdict failing: `takeover-guard`
   * runs the workers with MONITOR_TAKEOVER_GUARD=false (two pollers of a shard around a takeover:
   * the double-poll check must fail). Unset: nothing broken.
   */
  breakWith: 'takeover-guard' | null;
  /** REHEARSAL_CUT_WORKER: which worker the cut-off and SIGSTOP faults take (`scrape` or `deliver`). */
  cutWorker: 'scrape' | 'deliver';
  /** The run must finish within this (30 minutes: 28 faults); the report says whether it did. */
  budgetMs: number;
}

/** The faults a Temporal of this kind can take: one service at a time needs a process each, a database cut needs a database. */
export function faultsFor(temporal: RehearsalConfig['temporal'], layout: RehearsalConfig['temporalLayout']): FaultName[] {
  return FAULT_NAMES.filter((f) => {
    if (f === 'temporal-cut-pg') return temporal === 'server';
    if (/^temporal-(frontend|history|matching|worker)-kill$/.test(f)) return temporal === 'server' && layout === 'per-service';
    return true;
  });
}

function parseFaults(raw: string | undefined, available: FaultName[]): FaultName[] {
  const given = (raw ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (given.length === 0) return available;
  const unknown = given.filter((g) => !(FAULT_NAMES as readonly string[]).includes(g));
  if (unknown.length) throw new Error(`REHEARSAL_FAULTS: unknown ${unknown.join(', ')}; the faults are ${FAULT_NAMES.join(', ')}`);
  // Asked for but impossible here: refused now rather than skipped later, which would fail the run.
  const impossible = given.filter((g) => !(available as string[]).includes(g));
  if (impossible.length) throw new Error(`REHEARSAL_FAULTS: ${impossible.join(', ')} cannot run with this Temporal (REHEARSAL_TEMPORAL, REHEARSAL_TEMPORAL_LAYOUT)`);
  return given as FaultName[];
}

function oneOf<T extends string>(name: string, values: readonly T[], fallback: T): T {
  const raw = (process.env[name] ?? '').trim();
  if (!raw) return fallback;
  if ((values as readonly string[]).includes(raw)) return raw as T;
  throw new Error(`${name} must be one of ${values.join(', ')}, got ${JSON.stringify(raw)}`);
}

export function rehearsalConfig(): RehearsalConfig {
  const accounts = Math.max(2, Math.round(envNumber('REHEARSAL_ACCOUNTS', 20)));
  const temporal = oneOf('REHEARSAL_TEMPORAL', ['server', 'dev'] as const, 'server');
  const temporalLayout = oneOf('REHEARSAL_TEMPORAL_LAYOUT', ['per-service', 'one-process'] as const, 'per-service');
  return {
    faults: parseFaults(process.env.REHEARSAL_FAULTS, faultsFor(temporal, temporalLayout)),
    settleMs: envNumber('REHEARSAL_SETTLE_MS', 30_000),
    warmupMs: envNumber('REHEARSAL_WARMUP_MS', 30_000),
    finalMs: envNumber('REHEARSAL_FINAL_MS', 20_000),
    accounts,
    keysPerAccount: Math.max(1, Math.round(envNumber('REHEARSAL_KEYS_PER_ACCOUNT', 2))),
    targets: Math.max(1, Math.round(envNumber('REHEARSAL_TARGETS', 50))),
    itemsPerTarget: Math.max(1, Math.min(accounts, Math.round(envNumber('REHEARSAL_ITEMS_PER_TARGET', 2)))),
    webhookAccounts: Math.min(accounts, Math.round(envNumber('REHEARSAL_WEBHOOK_ACCOUNTS', 5))),
    intervalMs: Math.max(200, envNumber('REHEARSAL_INTERVAL_MS', 2_000)),
    changesPerSecond: envNumber('REHEARSAL_CHANGES_PER_S', 2),
    paidPerSecond: envNumber('REHEARSAL_PAID_PER_S', 4),
    scrapeEveryMs: envNumber('REHEARSAL_SCRAPE_EVERY_MS', 10_000),
    churnEveryMs: envNumber('REHEARSAL_CHURN_EVERY_MS', 3_000),
    churnLifeMs: envNumber('REHEARSAL_CHURN_LIFE_MS', 120_000),
    temporalDownMs: envNumber('REHEARSAL_DOWN_MS', 60_000),
    slowMs: envNumber('REHEARSAL_SLOW_MS', 60_000),
    cutMs: envNumber('REHEARSAL_CUT_MS', 30_000),
    stopMs: envNumber('REHEARSAL_STOP_MS', 25_000),
    workers: oneOf('REHEARSAL_WORKERS', ['split', 'all'] as const, 'split'),
    scrapeWorkers: Math.max(1, Math.round(envNumber('REHEARSAL_SCRAPE_WORKERS', 2))),
    cutWorker: oneOf('REHEARSAL_CUT_WORKER', ['scrape', 'deliver'] as const, 'scrape'),
    temporal,
    temporalLayout,
    breakWith: process.env.REHEARSAL_BREAK ? oneOf('REHEARSAL_BREAK', ['takeover-guard'] as const, 'takeover-guard') : null,
    budgetMs: 30 * 60_000,
  };
}

/** The settings given in the environment, for the report's command line. */
export function commandLine(): string {
  const given = Object.entries(process.env)
    .filter(([k]) => k.startsWith('REHEARSAL_') || k === 'DATABASE_URL')
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => (k === 'DATABASE_URL' ? `${k}=(set)` : `${k}=${v}`));
  return [...given, 'npm run rehearsal'].join(' ');
}
