// The markdown report on stdout: the platform, the command and date, a table of the issue's
// targets with each figure and PASS/FAIL, and where a target is missed the resources of its
// window (which process used how much of a core, the worker's Chromium among them, the machine,
// other work on it, the worker's database sessions and event loop, and on pf_01 what the browser
// cost and could carry), then the figures behind them, phase by phase.
import { percentile } from '../support/percentiles.ts';
import type { BaselineResult, CreateResult, PacedPosts } from './load.ts';
import type { BenchConfig } from './config.ts';
import type { IntegrityResult } from './integrity.ts';
import { machineShare, percent, serviceCpu, SERVICE_SOURCES, SOURCE_NAMES, SOURCES, SOURCES_WITH_PROXIES, type Source, type WallFigures, type Window } from './meter.ts';
import type { PgCpu, PgGroup } from './pg-cpu.ts';
import type { BenchPlatform, PlatformShape } from './platform.ts';
import type { SoakResult } from './soak.ts';
import type { StreamFigures } from './stream-clients.ts';
import { fmt1, fmtMs } from './support.ts';

/** The worker's database pool (temporal/runtime.ts startLocalWorkers). */
const WORKER_POOL_MAX = 10;

/**
 * CPU per poll, worker + Chromium + Temporal + PostgreSQL, at most (ms): pf_03's target of
 * issue 13, and issue 23's for pf_01, the browser included.
 */
const CPU_PER_POLL_TARGET_MS: Record<BenchPlatform, number> = { pf_03: 4, pf_01: 4 };

export interface Results {
  bench: BenchConfig;
  command: string;
  machine: string;
  date: Date;
  rpsSetting: string;
  shape: PlatformShape;
  /** The Chromium the worker was given, and its version (null: not asked, on an HTTP platform). */
  chromium: { path: string; version: string | null };
  /** BROWSER_PAGES as the worker reads it; BROWSER_SESSIONS as given (null: not set). */
  browserPages: number;
  browserSessions: string | null;
  /** The simulator's pf01SessionTtlMs (BENCH_SESSION_TTL_MS). */
  sessionTtlMs: number;
  shards: number;
  jitterRatio: number;
  /** BENCH_PROXIES: the worker's requests went through this many loopback proxies (null: directly). */
  proxies: { count: number; rpsPerProxy: string } | null;
  created: number;
  targetsWithItems: number;
  create: CreateResult;
  posts: PacedPosts;
  baseline: BaselineResult;
  idle: Window | null;
  /** Waited after the relays caught up, before the quiet window (settleAfterCreates). */
  settleSeconds: number;
  creationWindow: Window;
  baselineWindow: Window;
  quiet: Window;
  soak: SoakResult;
  steady: Window | null;
  integrity: IntegrityResult;
  stream: StreamFigures;
  pg: PgCpu | null;
  rss: Record<string, number>;
  /** The platform's bot wall over the whole run (null: the simulator reports none). */
  walls: WallFigures | null;
  logCounts: Map<string, number>;
  crashes: string[];
  runtimeSeconds: number;
}

export interface TargetRow {
  name: string;
  measured: string;
  pass: boolean | null;
  /** The window whose resources explain a miss. */
  window?: Window | null;
  note?: string;
}

export const verdict = (p: boolean | null) => (p === null ? 'n/a' : p ? 'PASS' : '**FAIL**');
export const pct = (x: number) => `${fmt1(x)} %`;
export const cell = (s: string) => s.replace(/\|/g, '/');

/** BENCH_CREATE_ORDER as the report's targets say it. */
function orderText(bench: BenchConfig): string {
  return bench.createOrder === 'account' ? "each account's items one after another" : 'interleaved across accounts';
}

function quantiles(values: readonly number[]) {
  const s = [...values].sort((a, b) => a - b);
  return { n: s.length, p50: percentile(s, 50), p95: percentile(s, 95), p99: percentile(s, 99), max: s.at(-1) ?? NaN };
}

/** ms of service CPU (worker + Temporal + PostgreSQL) per unit, by source and in total. */
function perUnit(w: Window, units: number, minus?: { polls: number; perPoll: Record<string, number> }) {
  const by: Record<string, number> = {};
  for (const s of SERVICE_SOURCES) by[s] = (1000 * w.cpu[s] - (minus ? minus.polls * minus.perPoll[s]! : 0)) / units;
  return { by, total: SERVICE_SOURCES.reduce((t, s) => t + by[s]!, 0) };
}

/** What a resources() reading needs to know about the run besides the window. */
export interface RunContext {
  shape: PlatformShape;
  browserPages: number;
  /** Polls per second the targets ask for (targets / interval). */
  expectedRate: number;
  /** The processes the run had (SOURCES, or SOURCES_WITH_PROXIES); SOURCES when not said. */
  sources?: readonly Source[];
}

/**
 * What ran out in a window: the machine, each process's share of a core (the worker's Chromium
 * apart), the worker's pool and event loop, and on a browser platform what Chromium cost and how
 * many polls its pages could carry.
 */
export function resources(w: Window, pg: PgCpu | null, run: RunContext): string[] {
  const m = machineShare(w);
  const out: string[] = [];
  const capacity = m.cores * 100;
  out.push(
    `machine ${pct(m.busyPercent)} of ${capacity} % busy${m.stealPercent >= 1 ? `, ${pct(m.stealPercent)} taken by the hypervisor (steal)` : ''}` +
      `${m.busyPercent + m.stealPercent >= 0.9 * capacity ? ' (**CPU saturated**: every core busy)' : ''}`,
  );
  const sources = run.sources ?? SOURCES;
  const procs = sources.map((s) => `${s} ${pct(percent(w, s))}`).join(', ');
  out.push(`% of one core: ${procs}`);
  if (percent(w, 'worker') >= 90) out.push(`the worker used ${pct(percent(w, 'worker'))} of a core: its JavaScript runs on one thread, so it is **saturated**`);
  if (run.shape.browser) out.push(...browserLines(w, run, m.busyPercent + m.stealPercent >= 0.9 * capacity));
  const ours = sources.reduce((t, s) => t + (Number.isFinite(w.cpu[s]) ? w.cpu[s] : 0), 0);
  const otherSeconds = (m.busyPercent / 100) * w.seconds - ours;
  const top = [...w.others.entries()].sort((a, b) => b[1] - a[1]).slice(0, 3);
  out.push(
    `other work on the machine: ${pct((100 * otherSeconds) / w.seconds)} of a core` +
      (top.length ? ` (busiest still running at the end: ${top.map(([n, s]) => `${cell(n.slice(0, 60))} ${pct((100 * s) / w.seconds)}`).join('; ')}; processes that came and went, and the kernel's own work, are in the total only)` : ''),
  );
  if (pg) {
    const groups = (Object.entries(w.pg) as [PgGroup, number][]).filter(([, s]) => s > 0.005 * w.seconds).map(([g, s]) => `${g} ${pct((100 * s) / w.seconds)}`);
    const sessions = pg.sessionsDuring(w.spans, WORKER_POOL_MAX);
    out.push(`PostgreSQL CPU by client: ${groups.join(', ') || 'idle'}`);
    if (sessions.samples) {
      const busy = sessions.means.filter(([, m]) => m >= 0.05).slice(0, 5);
      out.push(`database sessions not idle (mean over ${sessions.samples} samples): ${busy.map(([k, m]) => `${fmt1(m)} ${k}`).join(', ') || 'none'}`);
      out.push(
        `worker's sessions busy: mean ${fmt1(sessions.workerMean)}, max ${sessions.workerMax} of its pool of ${WORKER_POOL_MAX}` +
          `${sessions.workerFullShare >= 0.25 ? ` (**pool full in ${pct(100 * sessions.workerFullShare)} of the samples**)` : ''}`,
      );
    }
  }
  const lag = w.metrics?.gauge('nodejs_eventloop_lag_p99_seconds');
  if (lag !== null && lag !== undefined) out.push(`worker event loop delay p99 ${fmtMs(lag * 1000)} (its last metrics reading)`);
  return out;
}

/** Simulator requests per poll in a window (NaN without polls). */
function requestsPerPoll(w: Window): number {
  return w.polls > 0 ? w.requests / w.polls : NaN;
}

/** How a browser platform's polls reached the simulator, from the requests per poll. */
function pollPath(w: Window): string {
  const r = requestsPerPoll(w);
  if (!Number.isFinite(r)) return 'no polls counted';
  return `${fmt1(r)} simulator requests per poll` + (r >= 2.9 ? ' (page and both data arms: each poll renders the page in Chromium)' : r <= 2.2 ? ' (the data arms without the page: polls over HTTP, the browser only for sessions)' : ' (some polls render the page, some do not)');
}

/**
 * Chromium's part in a window: its share of a core and of the service's CPU, per poll, whether
 * it was the biggest consumer while the machine was saturated, and the polls its pages could
 * carry at the measured poll duration (when every poll renders a page).
 */
function browserLines(w: Window, run: RunContext, saturated: boolean): string[] {
  const out: string[] = [];
  const chromium = percent(w, 'chromium');
  const service = serviceCpu(w);
  const share = service > 0 ? (100 * w.cpu.chromium) / service : NaN;
  const biggest = SERVICE_SOURCES.every((s) => s === 'chromium' || !(w.cpu[s] > w.cpu.chromium));
  out.push(
    `Chromium (the worker's browser) used ${pct(chromium)} of a core, ${pct(share)} of the service's CPU` +
      (w.polls > 0 ? `, ${fmt1((1000 * w.cpu.chromium) / w.polls)} ms per poll` : '') +
      (saturated && biggest ? ' (**the biggest consumer on a saturated machine: the browser is what ran out of CPU**)' : biggest ? ' (the biggest consumer of the service)' : ''),
  );
  out.push(
    `polls reached the simulator as ${pollPath(w)}` +
      (w.sessions
        ? `; ${w.sessions.issued} pf_01 sessions made in the browser in the window` +
          (w.sessions.issued > 0 ? ` (${Math.round((1000 * w.cpu.chromium) / w.sessions.issued)} ms of Chromium CPU per session, its idle cost included)` : '') +
          `, ${w.sessions.refused} arm requests refused for want of one`
        : ''),
  );
  const duration = pollDuration(w, run);
  if (duration) out.push(duration);
  return out;
}

/**
 * The poll duration (the worker's histogram) and, when every poll renders a page, what the
 * browser's pages can carry at it: a page is held for the whole poll.
 */
function pollDuration(w: Window, run: RunContext): string | null {
  const p50 = w.metrics?.quantile('monitor_poll_duration_seconds', 0.5, { platform: run.shape.platform });
  const p99 = w.metrics?.quantile('monitor_poll_duration_seconds', 0.99, { platform: run.shape.platform });
  if (!p50 || p50.count === 0) return null;
  const bucket = (q: { above: number; atMost: number }) => (q.atMost === Infinity ? `> ${q.above} s` : `${q.above}–${q.atMost} s`);
  let line = `poll duration p50 ${bucket(p50)}, p99 ${p99 ? bucket(p99) : 'n/a'} (histogram buckets)`;
  if (requestsPerPoll(w) >= 2.9 && p50.above > 0) {
    const carry = run.browserPages / p50.above;
    line += `; with BROWSER_PAGES=${run.browserPages} pages each held at least ${p50.above} s per poll, the browser carries at most ~${fmt1(carry)} polls/s`;
    if (carry < run.expectedRate) line += ` (**below the ${fmt1(run.expectedRate)}/s the targets need: the browser's pages are the limit**)`;
  }
  return line;
}

/**
 * The targets table with PASS/FAIL, the count met, and for each missed target with a window what
 * ran out in it (resources); shared with bench:proxies.
 */
export function targetsSection(rows: readonly TargetRow[], pg: PgCpu | null, run: RunContext): string[] {
  const out: string[] = [];
  out.push('### Targets', '', '| target | measured | verdict |', '|---|---|---|');
  for (const row of rows) out.push(`| ${cell(row.name)} | ${cell(row.measured)}${row.note ? ` (${cell(row.note)})` : ''} | ${verdict(row.pass)} |`);
  const passed = rows.filter((x) => x.pass === true).length;
  const failed = rows.filter((x) => x.pass === false);
  out.push('', `${passed} of ${rows.length} targets met${failed.length ? `; missed: ${failed.map((f) => f.name).join('; ')}` : ''}.`);
  // A bench whose verdict failed exits non-zero once its report is out (Lifecycle.finish).
  if (failed.length) process.exitCode = 1;
  if (failed.some((f) => f.window)) {
    out.push('', '### Where the missed targets ran out', '');
    for (const f of failed) {
      if (!f.window) continue;
      out.push(`- **${f.name}** (${f.window.label}, ${f.window.seconds.toFixed(0)} s):`);
      for (const line of resources(f.window, pg, run)) out.push(`  - ${line}`);
    }
  }
  return out;
}

/**
 * The verdict on the platform's bot wall (issue 37): with walls on, not one request refused by a
 * fingerprint, HTTP/2, header or cookie check, out of some it let through (a wall that judged
 * nothing proves nothing); shared with bench:proxies and bench:alerts.
 */
export function wallRow(walls: WallFigures | null): TargetRow {
  const name = 'requests refused by the bot wall (TLS fingerprint, HTTP/2, headers, bot cookie): 0';
  if (!walls) return { name, measured: 'not measured (this simulator has no walls)', pass: null };
  if (!walls.on) return { name, measured: 'walls off (BENCH_WALLS=off)', pass: null };
  const refused = Object.entries(walls.refused).filter(([, n]) => n > 0);
  const total = refused.reduce((sum, [, n]) => sum + n, 0);
  const last = walls.lastRefusal ? `; last: ${walls.lastRefusal.reason}, ${walls.lastRefusal.detail}` : '';
  return {
    name,
    measured: `${total} refused${refused.length ? ` (${refused.map(([reason, n]) => `${reason} ${n}`).join(', ')})` : ''} of ${(walls.passed + total).toLocaleString('en')} judged${last}`,
    pass: total === 0 && walls.passed > 0,
  };
}

/** Issue 40's bulk-creation target. */
const BULK_ITEMS_PER_S_TARGET = 200;

/**
 * Where an item's cost goes: each process's CPU over the creation window and over the time
 * until every baseline (the relays, the monitor workflows' starts and the shards' reloads run
 * behind the creates), per item created. PostgreSQL by who sent the statements.
 */
function creationCosts(r: Results, sources: readonly Source[]): string[] {
  const n = Math.max(1, r.created);
  const windows = [r.creationWindow, r.baselineWindow];
  // A counter read twice can step back by a rounding: never shown as a negative cost.
  const per = (seconds: number) => fmt1(Math.max(0, (1000 * seconds) / n));
  const out = [
    `| process | during the creates (${r.creationWindow.seconds.toFixed(0)} s) | after, until every baseline (${r.baselineWindow.seconds.toFixed(0)} s) | together |`,
    '|---|---:|---:|---:|',
  ];
  for (const s of sources) out.push(`| ${SOURCE_NAMES[s]} | ${windows.map((w) => per(w.cpu[s])).join(' | ')} | ${per(windows.reduce((t, w) => t + w.cpu[s], 0))} |`);
  if (r.pg) {
    for (const grp of ['gateway', 'worker', 'stream', 'autovacuum', 'background'] as PgGroup[]) {
      out.push(`| &nbsp;&nbsp;PostgreSQL: ${grp} | ${windows.map((w) => per(w.pg[grp])).join(' | ')} | ${per(windows.reduce((t, w) => t + w.pg[grp], 0))} |`);
    }
  }
  const busy = (w: Window) => (machineShare(w).busyPercent / 100) * w.seconds;
  out.push(`| whole machine | ${windows.map((w) => per(busy(w))).join(' | ')} | ${per(windows.reduce((t, w) => t + busy(w), 0))} |`);
  return out;
}

export function renderReport(r: Results): string {
  const { bench, shape } = r;
  const platform = shape.platform;
  const interval = bench.intervalMs / 1000;
  const expectedRate = r.targetsWithItems / interval;
  const sources = r.proxies ? SOURCES_WITH_PROXIES : SOURCES;
  const run: RunContext = { shape, browserPages: r.browserPages, expectedRate, sources };
  const cpuTarget = CPU_PER_POLL_TARGET_MS[platform];
  const out: string[] = [];

  // --- figures --------------------------------------------------------------------------------
  const post = quantiles(r.create.latencies.filter(Number.isFinite));
  const firstTenth = quantiles(r.create.latencies.slice(0, Math.ceil(0.1 * r.create.latencies.length)).filter(Number.isFinite));
  const lastTenth = quantiles(r.create.latencies.slice(Math.floor(0.9 * r.create.latencies.length)).filter(Number.isFinite));
  const paced = quantiles(r.posts.post.filter(Number.isFinite));
  const pacedDelete = quantiles(r.posts.del.filter(Number.isFinite));
  const perPoll = perUnit(r.quiet, Math.max(1, r.quiet.polls));
  const quietMetricPolls = r.quiet.metrics?.sum('monitor_polls_total', { platform }) ?? NaN;
  const steady = r.steady;
  const perNotification = steady && steady.notifications > 0 ? perUnit(steady, steady.notifications, { polls: steady.polls, perPoll: perPoll.by }) : null;
  const pollRate = steady ? steady.polls / steady.seconds : NaN;
  const lateness = steady?.metrics?.quantile('monitor_poll_lateness_seconds', 0.99, { platform }) ?? null;
  const withinInterval = steady?.metrics?.shareAtMost('monitor_poll_lateness_seconds', interval, { platform }) ?? null;
  const streamSteady = quantiles(r.stream.steady);
  const streamKill = quantiles(r.stream.aroundKill);
  const k = r.soak.kill;
  const resumeS = k?.firstPollAt ? (k.firstPollAt - k.spawnedAt) / 1000 : null;
  const outcomes = steady?.metrics?.by('monitor_polls_total', 'outcome', { platform }) ?? {};
  const chromiumShare = (u: { by: Record<string, number>; total: number }) => (u.total > 0 ? `; Chromium ${pct((100 * u.by.chromium!) / u.total)} of it` : '');
  const baselineWindow = r.baselineWindow;

  const rows: TargetRow[] = [
    {
      name: `POST /watchlist p95 under 100 ms at ${r.posts.items.toLocaleString('en')} items`,
      measured: paced.n
        ? `p95 ${fmtMs(paced.p95)} (p50 ${fmtMs(paced.p50)}, p99 ${fmtMs(paced.p99)}; ${paced.n} POSTs one at a time, every 200 ms, while ${r.targetsWithItems.toLocaleString('en')} targets are polled)`
        : 'not measured (BENCH_POST_SAMPLES=0)',
      pass: paced.n ? paced.p95 < 100 : null,
      window: r.quiet,
    },
    {
      name: `bulk creation at least ${BULK_ITEMS_PER_S_TARGET} items/s (${bench.concurrency} POSTs in flight, ${orderText(bench)}, issue 40)`,
      measured: `${(r.created / r.create.seconds).toFixed(0)} items/s (${r.created.toLocaleString('en')} in ${r.create.seconds.toFixed(1)} s, ${r.create.failures} failures)`,
      pass: r.created > 0 && r.create.failures === 0 ? r.created / r.create.seconds >= BULK_ITEMS_PER_S_TARGET : false,
      window: r.creationWindow,
    },
    {
      name: `bulk POST /watchlist p95 under 100 ms (${bench.concurrency} in flight, ${orderText(bench)}, issue 40)`,
      measured: `p95 ${fmtMs(post.p95)} (p50 ${fmtMs(post.p50)}, p99 ${fmtMs(post.p99)})`,
      pass: post.n ? post.p95 < 100 : null,
      window: r.creationWindow,
    },
    {
      name: 'every item has its baseline within 60 s of the last create',
      measured: r.baseline.seconds !== null ? `${r.baseline.seconds.toFixed(1)} s` : `not within ${bench.baselineTimeoutMs / 1000} s (${r.baseline.baselined}/${r.created})`,
      pass: r.baseline.seconds !== null && r.baseline.seconds <= 60,
      window: baselineWindow,
    },
    {
      name: `CPU per poll at most ${cpuTarget} ms (worker + Temporal + PostgreSQL + Chromium)`,
      measured: r.quiet.polls > 0 ? `${fmt1(perPoll.total)} ms (${SERVICE_SOURCES.map((s) => `${s} ${fmt1(perPoll.by[s]!)}`).join(', ')}${chromiumShare(perPoll)})` : 'no polls counted in the quiet window',
      pass: r.quiet.polls > 0 && Number.isFinite(perPoll.total) ? perPoll.total <= cpuTarget : null,
      window: r.quiet,
    },
    {
      name: 'CPU per notification at most 3 ms',
      measured: perNotification ? `${fmt1(perNotification.total)} ms (${SERVICE_SOURCES.map((s) => `${s} ${fmt1(perNotification.by[s]!)}`).join(', ')})` : 'no notifications',
      pass: perNotification ? perNotification.total <= 3 : null,
      window: steady,
    },
    {
      name: 'polls per second at least 95% of targets/interval',
      measured: steady ? `${fmt1(pollRate)}/s = ${pct((100 * pollRate) / expectedRate)} of ${fmt1(expectedRate)}/s` : 'no steady window',
      pass: steady ? pollRate >= 0.95 * expectedRate : null,
      window: steady,
    },
    {
      name: `p99 lateness of a poll under one interval (${interval} s)`,
      measured: lateness
        ? `${lateness.atMost === Infinity ? `over ${lateness.above} s` : `${lateness.above}–${lateness.atMost} s`} (histogram bucket)` +
          (withinInterval !== null ? `; ${pct(100 * withinInterval)} of polls within ${interval} s` : '')
        : 'no polls measured',
      pass: lateness ? lateness.atMost <= interval : null,
      window: steady,
      note: lateness && lateness.atMost === interval ? `bucket resolution: p99 is at most ${interval} s, not provably under it` : undefined,
    },
    {
      name: `change to stream client p50 under interval + 1 s (${interval + 1} s)`,
      measured: streamSteady.n ? `${fmtMs(streamSteady.p50)} (n ${streamSteady.n})` : 'no samples',
      pass: streamSteady.n ? streamSteady.p50 < bench.intervalMs + 1000 : null,
      window: steady,
    },
    {
      name: `change to stream client p99 under 2 × interval (${2 * interval} s)`,
      measured: streamSteady.n ? `${fmtMs(streamSteady.p99)} (max ${fmtMs(streamSteady.max)})` : 'no samples',
      pass: streamSteady.n ? streamSteady.p99 < 2 * bench.intervalMs : null,
      window: steady,
    },
    {
      name: 'after a worker SIGKILL, polling resumes within 30 s of its restart',
      measured: !k
        ? 'not run (BENCH_KILL=0)'
        : resumeS !== null
          ? `${resumeS.toFixed(1)} s after the restart (${((k.firstPollAt! - k.readyAt) / 1000).toFixed(1)} s after it was ready, ${((k.firstPollAt! - k.killedAt) / 1000).toFixed(1)} s after the kill` +
            `${k.handOverAt !== null ? `, ${((k.firstPollAt! - Math.max(k.handOverAt, k.readyAt)) / 1000).toFixed(1)} s after both the worker was ready and Temporal handed the first shard over, ${((k.handOverAt - k.killedAt) / 1000).toFixed(1)} s after the kill` : ''})`
          : 'polling did NOT resume before the soak ended',
      pass: k ? resumeS !== null && resumeS <= 30 : null,
      window: k?.window,
    },
    {
      name: 'no missed change (notifications log against the changes made)',
      measured: `${r.integrity.missed} missed of ${r.integrity.expected.toLocaleString('en')} (change, item) pairs${k ? `, ${r.integrity.missedAroundKill} of them around the kill` : ''}`,
      pass: r.integrity.expected > 0 ? r.integrity.missed === 0 : null,
    },
    {
      name: 'no duplicate notification',
      measured: `${r.integrity.duplicated} extra copies${k ? ` (${r.integrity.duplicatedAroundKill} around the kill)` : ''}; ${r.integrity.sameSnapshotDuplicates} by (item, snapshot, section, type)`,
      pass: r.integrity.expected > 0 ? r.integrity.duplicated === 0 && r.integrity.sameSnapshotDuplicates === 0 : null,
    },
    wallRow(r.walls),
  ];

  const through = r.proxies ? `, through ${r.proxies.count} loopback ${r.proxies.count === 1 ? 'proxy' : 'proxies'}` : '';
  out.push(`## bench:monitors, ${platform}${through}, ${r.date.toISOString().slice(0, 10)}`, '');
  out.push(
    `- platform: **${platform}** (BENCH_PLATFORM), region ${shape.region}: ` +
      (shape.browser
        ? `client-rendered, read by the worker with Chromium (${r.chromium.version ?? 'version unknown'}, CHROMIUM_PATH=${r.chromium.path}; BROWSER_PAGES=${r.browserPages}, BROWSER_SESSIONS=${r.browserSessions ?? 'not set'}); ` +
          `the simulator's pf_01 sessions last ${fmtMs(r.sessionTtlMs)} (BENCH_SESSION_TTL_MS); polls counted at ${shape.pollRouteName}`
        : `plain HTML over HTTP; polls counted at ${shape.pollRouteName}`),
  );
  out.push(`- command: \`${r.command}\``);
  out.push(`- date: ${r.date.toISOString()}; runtime ${Math.round(r.runtimeSeconds)} s`);
  out.push(`- machine: ${r.machine}`);
  out.push(
    `- load: ${r.created.toLocaleString('en')} items on ${r.targetsWithItems.toLocaleString('en')} ${platform} targets (simulator in its own process), ${bench.accounts} accounts; ` +
      `MONITOR_INTERVAL_MS ${bench.intervalMs} (jitter ±${Math.round(r.jitterRatio * 100)}%), ${r.shards} shards per platform, SCRAPE_RPS_PER_PLATFORM=${r.rpsSetting}; ` +
      `${r.soak.driver.perInterval} targets changed every interval (${pct(100 * bench.changeFraction)}), soak ${bench.soakMs / 1000} s, quiet window ${bench.quietMs / 1000} s` +
      (bench.kill ? `, worker SIGKILL at ${Math.round(bench.killAt * 100)}% of the soak for ${bench.killDownMs} ms` : ''),
  );
  out.push(
    `- parts: scratch database, fresh ${bench.temporal === 'server' ? "Temporal server (go.temporal.io/server, deploy/temporal, one process, its databases on the bench's PostgreSQL: BENCH_TEMPORAL=server)" : 'Temporal dev server (SQLite)'}, ` +
      'the worker as a child process (`temporal/worker-main.ts`), gateway and stream node in the bench process; ' +
      "CPU targets count the worker + its Chromium (every browser process under it, also shown on its own) + the Temporal server's process tree + this run's PostgreSQL backends and background processes, not the simulator",
  );
  if (r.proxies) {
    out.push(
      `- proxies (BENCH_PROXIES=${r.proxies.count}): the worker's HTTP requests to ${platform} went through ${r.proxies.count} loopback ${r.proxies.count === 1 ? 'proxy' : 'proxies'} (proxy-chain, in a child process of their own, each sending from its own 127.0.0.x address; ` +
        `SCRAPE_PROXY_URLS set to them, SCRAPE_RPS_PER_PROXY=${r.proxies.rpsPerProxy}); their CPU is shown apart and, like the simulator's, is not in the targets. Compare CPU per poll with a run without BENCH_PROXIES`,
    );
  }
  out.push('');
  out.push(...targetsSection(rows, r.pg, run));

  // --- details --------------------------------------------------------------------------------
  out.push('', '### Creation and baselines', '');
  out.push('| figure | value |', '|---|---|');
  out.push(`| items created | ${r.created} in ${r.create.seconds.toFixed(1)} s (${(r.created / r.create.seconds).toFixed(0)}/s, ${bench.concurrency} concurrent), ${r.create.failures} failures |`);
  out.push(`| bulk POST /watchlist (${bench.concurrency} in flight: mostly queueing), all | p50 ${fmtMs(post.p50)}, p95 ${fmtMs(post.p95)}, p99 ${fmtMs(post.p99)}, max ${fmtMs(post.max)} |`);
  out.push(`| bulk POST /watchlist, first 10% (the new targets' first polls, a cold gateway) | p50 ${fmtMs(firstTenth.p50)}, p95 ${fmtMs(firstTenth.p95)}, p99 ${fmtMs(firstTenth.p99)}, max ${fmtMs(firstTenth.max)} |`);
  out.push(`| bulk POST /watchlist, last 10% | p50 ${fmtMs(lastTenth.p50)}, p95 ${fmtMs(lastTenth.p95)}, p99 ${fmtMs(lastTenth.p99)}, max ${fmtMs(lastTenth.max)} |`);
  out.push(`| POST /watchlist at ${r.posts.items} items, one at a time | p50 ${fmtMs(paced.p50)}, p95 ${fmtMs(paced.p95)}, p99 ${fmtMs(paced.p99)}, max ${fmtMs(paced.max)} (n ${paced.n}) |`);
  out.push(`| DELETE /watchlist/{id} at ${r.posts.items} items, one at a time | p50 ${fmtMs(pacedDelete.p50)}, p95 ${fmtMs(pacedDelete.p95)}, p99 ${fmtMs(pacedDelete.p99)} |`);
  out.push(`| every item with a baseline, after the last create | ${r.baseline.seconds !== null ? `${r.baseline.seconds.toFixed(1)} s` : `not reached (${r.baseline.baselined}/${r.created}; ${r.baseline.members} members)`} |`);
  out.push(`| relays caught up (per-item monitor workflows started, monitors queue empty) | ${r.baseline.relaysSeconds !== null ? `${r.baseline.relaysSeconds.toFixed(1)} s after the last create` : 'not within 120 s'} |`);
  out.push(`| then waited for the Temporal server's CPU to settle before the quiet window | ${r.settleSeconds.toFixed(0)} s |`);
  out.push('', '### Creation: CPU per item created (ms), by process', '', ...creationCosts(r, sources));

  out.push('', '### Polls and notifications', '');
  out.push(
    '| window | seconds | polls/s at the simulator (of expected) | polls in worker metrics | simulator requests per poll | notifications/s | lateness p99 (bucket) |',
    '|---|---:|---:|---:|---:|---:|---:|',
  );
  const windows = [r.quiet, r.soak.before, r.soak.kill?.window ?? null, r.soak.after, steady].filter((w): w is Window => w !== null);
  for (const w of windows) {
    const q = w.metrics?.quantile('monitor_poll_lateness_seconds', 0.99, { platform });
    const mp = w.metrics?.sum('monitor_polls_total', { platform });
    out.push(
      `| ${w === steady ? `**${w.label}**` : w.label} | ${w.seconds.toFixed(0)} | ${fmt1(w.polls / w.seconds)} (${pct((100 * w.polls) / w.seconds / expectedRate)}) | ${mp ?? 'n/a'} | ${fmt1(requestsPerPoll(w))} | ${fmt1(w.notifications / w.seconds)} | ${q ? (q.atMost === Infinity ? `> ${q.above} s` : `≤ ${q.atMost} s`) : 'n/a'} |`,
    );
  }
  out.push('');
  out.push(
    `- quiet window: ${r.quiet.polls} polls at the simulator, ${Number.isFinite(quietMetricPolls) ? quietMetricPolls : 'n/a'} in monitor_polls_total, ${r.quiet.notifications} notifications (expected 0)`,
  );
  for (const w of windows) {
    const mp = w.metrics?.sum('monitor_polls_total', { platform });
    if (mp !== undefined && w.polls > 0 && Math.abs(mp - w.polls) > Math.max(2, 0.02 * w.polls)) {
      out.push(`- **${w.label}: the simulator served ${w.polls} polls (${shape.pollRouteName}) but monitor_polls_total grew by ${mp}** (more than 2% apart)`);
    }
    if (w.polls === 0 && w.requests > 0) {
      out.push(`- **${w.label}: the simulator served ${w.requests} requests for ${platform}'s events but none to ${shape.pollRouteName}**: the platform's requests changed shape, and the bench's poll count (bench/monitors/platform.ts pollRoute) must follow`);
    }
  }
  out.push(`- poll outcomes in the steady soak: ${Object.entries(outcomes).map(([o, n]) => `${o} ${n}`).join(', ') || 'n/a'}`);
  out.push(
    `- changes: ${r.soak.driver.changes.length} made (${r.soak.driver.failures} PUT failures, ${r.soak.driver.late} sent late), a target again every ${r.soak.driver.cycleIntervals.toFixed(1)} intervals`,
  );
  if (r.idle) {
    // The per-poll target divides everything the parts used by the polls, fixed costs included
    // (as the issue's 44 ms did); at a low poll rate those dominate. The marginal cost says what
    // one more poll adds.
    const idle = r.idle;
    const marginal = SERVICE_SOURCES.map((s) => (1000 * (r.quiet.cpu[s] - (idle.cpu[s] / idle.seconds) * r.quiet.seconds)) / Math.max(1, r.quiet.polls));
    out.push(
      `- fixed cost with no items (idle window, ${idle.seconds.toFixed(0)} s): ${fmt1((100 * serviceCpu(idle)) / idle.seconds)} % of a core (${SERVICE_SOURCES.map((s) => `${s} ${fmt1(percent(idle, s))} %`).join(', ')}); ` +
        `marginal CPU per poll (quiet minus idle) ${fmt1(marginal.reduce((a, b) => a + b, 0))} ms (${SERVICE_SOURCES.map((s, i) => `${s} ${fmt1(marginal[i]!)}`).join(', ')})`,
    );
  }
  if (perNotification) {
    out.push(
      `- CPU per notification = (steady soak CPU − ${steady!.polls} polls × ${fmt1(perPoll.total)} ms) / ${steady!.notifications} notifications` +
        (perNotification.total < 0 ? ': negative, i.e. within the noise of the per-poll figure (the soak used less CPU per poll than the quiet window)' : ''),
    );
  }

  out.push('', '### Chromium', '');
  const browserWindows = [r.idle, r.quiet, steady].filter((w): w is Window => w !== null);
  out.push(
    `- CPU of the worker's Chromium: ${browserWindows
      .map((w) => `${w.label} ${pct(percent(w, 'chromium'))} of a core${w.polls > 0 ? ` (${fmt1((1000 * w.cpu.chromium) / w.polls)} ms per poll, ${pct((100 * w.cpu.chromium) / Math.max(1e-9, serviceCpu(w)))} of the service's CPU)` : ''}`)
      .join('; ')}; memory at the end ${r.rss.chromium !== undefined ? `${Math.round(r.rss.chromium)} MiB (its processes' proportional set sizes, summed)` : 'n/a'}`,
  );
  if (shape.browser) {
    out.push(`- quiet window: ${pollPath(r.quiet)}${steady ? `; steady soak: ${pollPath(steady)}` : ''}`);
    const phases = [r.idle, r.creationWindow, r.baselineWindow, r.quiet, r.soak.before, r.soak.kill?.window ?? null, r.soak.after].filter((w): w is Window => w !== null);
    if (phases.every((w) => w.sessions)) {
      out.push(
        `- pf_01 sessions the simulator issued (arm requests it refused for want of one), by phase: ${phases.map((w) => `${w.label} ${w.sessions!.issued} (${w.sessions!.refused})`).join('; ')}`,
      );
    } else {
      out.push("- pf_01 sessions: the simulator reports none (its pf_01 has no session protection in this checkout)");
    }
    const duration = pollDuration(r.quiet, run);
    if (duration) out.push(`- quiet window: ${duration}`);
  } else {
    out.push(`- ${platform} is read over HTTP: this is the warm browser the worker keeps for the browser platforms, idle here`);
  }

  out.push('', '### Stream', '');
  out.push(
    `- ${r.stream.accounts} WebSocket clients (one per account); ${r.stream.expected.toLocaleString('en')} logged notifications for their accounts, ${r.stream.notDelivered} not received, ${r.stream.duplicates} received twice; ${r.stream.reconnects} reconnects${r.stream.closes.length ? ` (closes: ${cell(r.stream.closes.slice(0, 3).join('; '))})` : ''}`,
  );
  out.push(`- simulator PUT → client, steady: p50 ${fmtMs(streamSteady.p50)}, p95 ${fmtMs(streamSteady.p95)}, p99 ${fmtMs(streamSteady.p99)}, max ${fmtMs(streamSteady.max)} (n ${streamSteady.n})`);
  if (k) out.push(`- the same for changes made around the kill (2 intervals before it until the recovery): p50 ${fmtMs(streamKill.p50)}, p99 ${fmtMs(streamKill.p99)}, max ${fmtMs(streamKill.max)} (n ${streamKill.n})`);

  if (k) {
    out.push('', '### Worker SIGKILL', '');
    const rel = (t: number | null, from: number) => (t === null ? 'not reached' : `${((t - from) / 1000).toFixed(1)} s`);
    out.push('| step | after the kill | after the restart |', '|---|---:|---:|');
    out.push(`| new worker started (after ${bench.killDownMs} ms down) | ${rel(k.spawnedAt, k.killedAt)} | 0 |`);
    out.push(`| new worker ready (/metrics answers) | ${rel(k.readyAt, k.killedAt)} | ${rel(k.readyAt, k.spawnedAt)} |`);
    out.push(
      `| Temporal hands the first shard over (the killed worker's last heartbeat + the 15 s heartbeat timeout; by the kill's phase, 3 to 15 s) | ${rel(k.handOverAt, k.killedAt)} | ${rel(k.handOverAt, k.spawnedAt)} |`,
    );
    out.push(`| first poll at the simulator | ${rel(k.firstPollAt, k.killedAt)} | ${rel(k.firstPollAt, k.spawnedAt)} |`);
    out.push(`| poll rate over the last interval back to ≥ 90% | ${rel(k.recoveredAt, k.killedAt)} | ${rel(k.recoveredAt, k.spawnedAt)} |`);
  }

  out.push('', '### Notifications log against the changes', '');
  const g = r.integrity;
  out.push(
    `- ${g.expected.toLocaleString('en')} (change, item) pairs expected: ${g.found.toLocaleString('en')} found, **${g.missed} missed**, **${g.duplicated} duplicated**; ` +
      `${g.superseded} not observable (the target changed again before any poll; not counted as missed); ${g.unmatched} notifications matching no change`,
  );
  if (g.examples.length) out.push(`- missed, for example: ${g.examples.join('; ')}`);

  out.push('', '### CPU by phase (% of one core)', '');
  const phases = [r.idle, r.creationWindow, r.baselineWindow, r.quiet, r.soak.before, r.soak.kill?.window ?? null, r.soak.after].filter((w): w is Window => w !== null);
  out.push(`| process | ${phases.map((w) => `${w.label} (${w.seconds.toFixed(0)} s)`).join(' | ')} | RSS MiB at the end (Chromium: PSS, summed) |`, `|---|${phases.map(() => '---:').join('|')}|---:|`);
  for (const s of sources) out.push(`| ${SOURCE_NAMES[s]} | ${phases.map((w) => fmt1(percent(w, s))).join(' | ')} | ${r.rss[s] !== undefined ? Math.round(r.rss[s]) : ''} |`);
  if (r.pg) {
    for (const grp of ['worker', 'stream', 'gateway', 'autovacuum', 'background'] as PgGroup[]) {
      out.push(`| &nbsp;&nbsp;PostgreSQL: ${grp}${grp === 'background' ? ' (checkpointer, WAL writer...: shared by the server)' : ''} | ${phases.map((w) => fmt1((100 * w.pg[grp]) / w.seconds)).join(' | ')} | |`);
    }
    out.push(`| PostgreSQL: the bench's own queries (not counted) | ${phases.map((w) => fmt1((100 * w.pg.bench) / w.seconds)).join(' | ')} | |`);
  }
  out.push(`| worker + Chromium + Temporal + PostgreSQL | ${phases.map((w) => `**${fmt1((100 * serviceCpu(w)) / w.seconds)}**`).join(' | ')} | |`);
  out.push(`| whole machine (of ${machineShare(r.quiet).cores * 100} %) | ${phases.map((w) => fmt1(machineShare(w).busyPercent)).join(' | ')} | |`);
  out.push(`| steal (hypervisor) | ${phases.map((w) => fmt1(machineShare(w).stealPercent)).join(' | ')} | |`);
  out.push(
    `| busiest other processes | ${phases
      .map((w) =>
        cell(
          [...w.others.entries()]
            .sort((a, b) => b[1] - a[1])
            .slice(0, 2)
            .map(([n, s]) => `${n.slice(0, 40)} ${fmt1((100 * s) / w.seconds)}`)
            .join('; ') || 'none',
        ),
      )
      .join(' | ')} | |`,
  );

  const warnings = [...r.logCounts.entries()].sort((a, b) => b[1] - a[1]);
  out.push('', '### Log lines at warn and above', '');
  out.push(warnings.length ? warnings.slice(0, 10).map(([key, n]) => `- ${n} × ${cell(key)}`).join('\n') : '- none');
  if (r.crashes.length) out.push('', '### Worker exits the bench did not cause', '', ...r.crashes.map((c) => `\`\`\`\n${c}\n\`\`\``));
  return out.join('\n');
}
