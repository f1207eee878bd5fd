// bench:proxies' markdown report: the command, the machine, issue 27's targets with PASS/FAIL
// (and for a missed one what ran out in its window, as bench:monitors says it), the direct and
// the proxied quiet windows side by side, then each phase's figures. Every poll is the
// simulator's count (its request log), never the worker's own.
import type { PlatformProxies, ProxyRow } from '../../src/ops/proxies.ts';
import type { IntegrityResult } from '../monitors/integrity.ts';
import type { BaselineResult } from '../monitors/load.ts';
import { machineShare, percent, serviceCpu, SOURCE_NAMES, SOURCES_WITH_PROXIES, type Window } from '../monitors/meter.ts';
import type { PgCpu } from '../monitors/pg-cpu.ts';
import { atMostText } from '../monitors/prom.ts';
import { PLATFORM_SHAPES } from '../monitors/platform.ts';
import { cell, pct, targetsSection, wallRow, type RunContext, type TargetRow } from '../monitors/report.ts';
import type { WallFigures } from '../monitors/meter.ts';
import type { SoakResult } from '../monitors/soak.ts';
import { fmt1, fmtMs } from '../monitors/support.ts';
import { neededRps, type ProxiesBenchConfig } from './config.ts';
import { ON_DEMAND, oncePerStep, type RefusedEventFigures } from './refused-event.ts';
import { spread, type AcrossBan, type AddressCounts, type AddressPeak, type Evenness, type GroupIntervals } from './figures.ts';

/** Worker CPU per poll through the proxies, at most this many times the direct one (issue 27). */
const CPU_RATIO_TARGET = 1.25;
/** Polls per second, at least this share of targets/interval (issue 27). */
const RATE_TARGET = 0.95;
/** With too few proxies: polls/s within this share of their budget. */
const BUDGET_LOW = 0.9;
const BUDGET_HIGH = 1.02;
/** With too few proxies: the longest mean interval of a target at most this many times the shortest. */
const EVENNESS_TARGET = 1.5;

export interface DirectWindow {
  window: Window;
  polls: number;
  settleSeconds: number;
}

export interface ProxiedWindow extends DirectWindow {
  refused: number;
  perAddress: Map<string, AddressCounts>;
  peaks: AddressPeak[];
  limiterBans: number;
  /** What each proxy says it forwarded, at the window's end (since it started). */
  proxyStats: Map<string, { http: number; connect: number }>;
  restart: { at: number; readyAt: number; rateBackAt: number | null };
}

export interface ProxiesResults {
  cfg: ProxiesBenchConfig;
  command: string;
  machine: string;
  date: Date;
  runtimeSeconds: number;
  shards: number;
  jitterRatio: number;
  cooldownMs: number;
  created: number;
  targets: number;
  keys: string[];
  baseline: BaselineResult;
  /** Polls per second the targets ask for. */
  expected: number;
  direct: DirectWindow;
  proxied: ProxiedWindow;
  /** pf_03's bot wall over the whole run (null: the simulator reports none). */
  walls: WallFigures | null;
  /** Phase r (issue 36): one refused event, watched and scraped on demand. */
  refused: RefusedEventFigures;
  /** The worker's SCRAPE_TARGET_BACKOFF_MS. */
  targetBackoffMs: number;
  c: {
    soak: SoakResult;
    integrity: IntegrityResult;
    banned: string[];
    banAt: number;
    /** Every target polled before the ban: its next poll through a healthy address after it. */
    acrossBan: AcrossBan[];
    /** Refusals of each banned address within setAsideMs of the ban, and until the soak's end. */
    setAsideMs: number;
    refusedSetAside: Map<string, AddressCounts>;
    refusedAll: Map<string, AddressCounts>;
    /** Every refused request after the ban: its target's wait for a poll through a healthy address (null: none). */
    waitsAfterRefusal: (number | null)[];
    healthyPeaks: AddressPeak[];
    limiterBans: number;
    pollsAfterBan: number;
    secondsAfterBan: number;
  };
  d: {
    banAt: number;
    banned: string[];
    window: Window;
    polls: number;
    pollsHealthy: number;
    refused: number;
    evenness: Evenness;
    /** The targets' mean intervals by shard, and by how many targets their one account has in their shard. */
    byShard: GroupIntervals[];
    byAccountTargets: GroupIntervals[];
    peaks: AddressPeak[];
    limiterBans: number;
    reportAt: Date | null;
    ops: PlatformProxies | null;
  };
  logLost: number;
  limiterPeak: Map<string, number>;
  pg: PgCpu | null;
  rss: Record<string, number>;
  logCounts: Map<string, number>;
  crashes: string[];
}

/** ms of CPU per poll by process: the worker alone (its node and esbuild), and the others for context. */
function perPoll(w: Window, polls: number) {
  const ms = (seconds: number) => (polls > 0 ? (1000 * seconds) / polls : NaN);
  return { worker: ms(w.cpu.worker), chromium: ms(w.cpu.chromium), service: ms(serviceCpu(w)), proxies: ms(w.cpu.proxies), simulator: ms(w.cpu.simulator) };
}

const s1 = (ms: number) => `${fmt1(ms / 1000)} s`;
const proxiesN = (n: number) => `${n} ${n === 1 ? 'proxy' : 'proxies'}`;
/** A run of addresses, `first..last` (one alone when it is one). */
const range = (a: readonly string[]) => (a.length > 1 ? `${a[0]}..${a.at(-1)}` : (a[0] ?? 'none'));

export function renderProxiesReport(r: ProxiesResults): string {
  const { cfg } = r;
  const bench = cfg.bench;
  const interval = bench.intervalMs;
  const limit = cfg.limitPerMin;
  const run: RunContext = { shape: PLATFORM_SHAPES.pf_03, browserPages: 0, expectedRate: r.expected, sources: SOURCES_WITH_PROXIES };
  const out: string[] = [];

  // --- figures --------------------------------------------------------------------------------
  const dRate = r.direct.polls / r.direct.window.seconds;
  const pRate = r.proxied.polls / r.proxied.window.seconds;
  const dCpu = perPoll(r.direct.window, r.direct.polls);
  const pCpu = perPoll(r.proxied.window, r.proxied.polls);
  const ratio = pCpu.worker / dCpu.worker;
  const bPeak = r.proxied.peaks[0];
  const admitted = [...r.proxied.perAddress.values()].map((c) => c.admitted);
  const bSpread = spread(admitted);
  const allowedGap = interval * (1 + r.jitterRatio);
  const affected = r.c.acrossBan.filter((t) => t.viaBanned);
  const got = affected.filter((t) => t.nextGood !== null);
  const fromBan = spread(got.map((t) => t.nextGood! - r.c.banAt));
  const gap = spread(got.map((t) => t.nextGood! - t.lastBefore));
  const others = r.c.acrossBan.filter((t) => !t.viaBanned && t.nextGood !== null);
  const othersFromBan = spread(others.map((t) => t.nextGood! - r.c.banAt));
  const othersGap = spread(others.map((t) => t.nextGood! - t.lastBefore));
  const waits = r.c.waitsAfterRefusal.filter((w): w is number => w !== null);
  const unanswered = r.c.waitsAfterRefusal.length - waits.length;
  const reroute = spread(waits);
  const neverAgain = affected.length - got.length;
  const setAside = r.c.banned.map((a) => r.c.refusedSetAside.get(a)?.refused ?? 0);
  const refusedAll = r.c.banned.map((a) => r.c.refusedAll.get(a)?.refused ?? 0);
  const cPeak = r.c.healthyPeaks[0];
  const budget = cfg.fewHealthy * cfg.proxyRps;
  const dRatePolls = r.d.polls / r.d.window.seconds;
  const ev = r.d.evenness;
  const evRatio = ev.interval.max / ev.interval.min;
  const dPeak = r.d.peaks[0];
  const ops = r.d.ops;

  const rf = r.refused;
  const rfShares = [...rf.perAddress.values()];
  const rfTotal = rfShares.reduce((a, b) => a + b, 0);
  const rfLeast = rfShares.length ? Math.min(...rfShares) : 0;
  const rfSteps = oncePerStep(rf.asked, r.targetBackoffMs);
  const rfWindow = ((rf.run.to - rf.run.from) / 1000).toFixed(0);
  const rows: TargetRow[] = [
    {
      name: `through ${cfg.proxies} proxies: polls per second at least ${RATE_TARGET * 100}% of targets/interval`,
      measured: `${fmt1(pRate)}/s = ${pct((100 * pRate) / r.expected)} of ${fmt1(r.expected)}/s (simulator's request log, ${r.proxied.window.seconds.toFixed(0)} s quiet window)`,
      pass: pRate >= RATE_TARGET * r.expected,
      window: r.proxied.window,
    },
    {
      name: `through ${cfg.proxies} proxies: the worker's CPU per poll at most ${CPU_RATIO_TARGET} × direct`,
      measured: `${fmt1(pCpu.worker)} ms against ${fmt1(dCpu.worker)} ms direct: ${Number.isFinite(ratio) ? `${ratio.toFixed(2)} ×` : 'n/a'} (worker node process and its helpers, without its Chromium)`,
      pass: Number.isFinite(ratio) ? ratio <= CPU_RATIO_TARGET : null,
      window: r.proxied.window,
    },
    {
      name: `through ${cfg.proxies} proxies: no address past the simulator's ${limit}/min, no ban by its limiter`,
      measured: `most requests any address sent in any 60 s: ${bPeak?.peak ?? 0} (${bPeak?.address ?? 'none'}); limiter bans ${r.proxied.limiterBans}; ${r.proxied.refused} requests refused`,
      pass: (bPeak?.peak ?? 0) <= limit && r.proxied.limiterBans === 0,
    },
    {
      name: `one event refused (403) and scraped on demand ${ON_DEMAND} times: the other targets keep at least ${RATE_TARGET * 100}% of their polls`,
      measured: `${fmt1(rf.othersRate)}/s = ${pct((100 * rf.othersRate) / rf.othersExpected)} of ${fmt1(rf.othersExpected)}/s (${rfWindow} s from the watch; simulator's request log)`,
      pass: rf.othersRate >= RATE_TARGET * rf.othersExpected,
    },
    {
      name: 'one event refused: every proxy keeps carrying traffic (each at least half its even share)',
      measured: `least any of the ${rfShares.length} proxies carried: ${rfLeast} of the others' ${rfTotal} requests (even share ${fmt1(rfTotal / Math.max(1, rfShares.length))})`,
      pass: rfShares.length > 0 && rfTotal > 0 ? rfLeast >= (0.5 * rfTotal) / rfShares.length : null,
    },
    {
      name: `one event refused: it is asked once per back-off step (step k at least 0.9 × ${r.targetBackoffMs / 1000} s × 2^(k−1)), and on demand answered from its back-off`,
      measured:
        `asked at ${rf.asked.map((t) => (t / 1000).toFixed(1)).join(', ')} s; on demand ${Object.entries(rf.run.onDemand)
          .map(([k, n]) => `${k} ${n}`)
          .join(', ')}, slowest ${fmtMs(rf.run.slowestOnDemandMs)}`,
      pass: rfSteps.ok === null ? null : rfSteps.ok && (rf.run.onDemand.served ?? 0) === 0,
    },
    {
      name: `${proxiesN(cfg.banned)} banned at once: every target whose last poll went through one is polled through a healthy one within an interval (${s1(allowedGap)}: ${interval / 1000} s + ${Math.round(r.jitterRatio * 100)}% jitter)`,
      measured: affected.length
        ? `${affected.length} targets; ban → next poll through a healthy address: p99 ${s1(fromBan.p99)}, max ${s1(fromBan.max)}` +
          `${neverAgain ? `; **${neverAgain} never polled again**` : ''}; any refused poll → its target's next poll through a healthy address: p99 ${fmtMs(reroute.p99)}, max ${fmtMs(reroute.max)} (n ${reroute.n})`
        : 'no target had its last poll through a banned address',
      pass: affected.length ? neverAgain === 0 && unanswered === 0 && fromBan.max <= allowedGap : null,
      window: r.c.soak.before,
    },
    {
      name: `${cfg.banned} banned: no healthy address past ${limit}/min, no ban by the limiter`,
      measured: `most any healthy address sent in any 60 s of the soak: ${cPeak?.peak ?? 0} (${cPeak?.address ?? 'none'}); limiter bans ${r.c.limiterBans}`,
      pass: (cPeak?.peak ?? 0) <= limit && r.c.limiterBans === 0,
    },
    {
      name: 'during the bans, no missed change (notifications log against the changes made)',
      measured: `${r.c.integrity.missed} missed of ${r.c.integrity.expected.toLocaleString('en')} (change, item) pairs`,
      pass: r.c.integrity.expected > 0 ? r.c.integrity.missed === 0 : null,
    },
    {
      name: 'during the bans, no duplicate notification',
      measured: `${r.c.integrity.duplicated} extra copies; ${r.c.integrity.sameSnapshotDuplicates} by (item, snapshot, section, type)`,
      pass: r.c.integrity.expected > 0 ? r.c.integrity.duplicated === 0 && r.c.integrity.sameSnapshotDuplicates === 0 : null,
    },
    {
      name: `${cfg.fewHealthy} healthy ${cfg.fewHealthy === 1 ? 'proxy' : 'proxies'} (${fmt1(budget)} req/s for ${fmt1(neededRps(cfg))} needed): polls per second at the budget (${BUDGET_LOW * 100}–${BUDGET_HIGH * 100}%)`,
      measured: `${fmt1(dRatePolls)}/s = ${pct((100 * dRatePolls) / budget)} of ${fmt1(budget)}/s (${r.d.window.seconds.toFixed(0)} s window; ${r.d.refused} refused requests of banned addresses on top)`,
      pass: dRatePolls >= BUDGET_LOW * budget && dRatePolls <= BUDGET_HIGH * budget,
      window: r.d.window,
    },
    {
      name: `${cfg.fewHealthy} healthy: every target's interval stretches alike (longest mean interval at most ${EVENNESS_TARGET} × the shortest)`,
      measured:
        `mean interval per target min ${s1(ev.interval.min)}, median ${s1(ev.interval.p50)}, max ${s1(ev.interval.max)}: ${fmt1(evRatio)} ×, CV ${fmt1(100 * ev.interval.cv)} %` +
        `${ev.underTwice ? `; **${ev.underTwice} targets polled fewer than twice**` : ''}; polls per target ${ev.polls.min}..${ev.polls.max} (median ${ev.polls.p50})`,
      pass: ev.underTwice === 0 && evRatio <= EVENNESS_TARGET,
      window: r.d.window,
    },
    {
      name: `${cfg.fewHealthy} healthy: no address past ${limit}/min, no ban by the limiter`,
      measured: `most any address sent in any 60 s: ${dPeak?.peak ?? 0} (${dPeak?.address ?? 'none'}); limiter bans ${r.d.limiterBans}`,
      pass: (dPeak?.peak ?? 0) <= limit && r.d.limiterBans === 0,
    },
    {
      name: '`npm run ops -- scrapers:proxies` says the budget ran out',
      measured: ops ? (ops.budget_ran_out ? 'yes (below)' : `no: budget ${ops.budget_rps} req/s, needed ${ops.needed_rps}, ${ops.healthy} of ${ops.proxies} healthy`) : 'no report of pf_03 proxies',
      pass: ops ? ops.budget_ran_out !== null : false,
    },
    wallRow(r.walls),
  ];

  out.push(`## bench:proxies, pf_03, ${r.date.toISOString().slice(0, 10)}`, '');
  out.push(`- command: \`${r.command}\``);
  out.push(`- date: ${r.date.toISOString()}; runtime ${Math.round(r.runtimeSeconds)} s`);
  out.push(`- machine: ${r.machine}`);
  out.push(
    `- load: ${r.created.toLocaleString('en')} items on ${r.targets.toLocaleString('en')} pf_03 targets (${bench.accounts} accounts), MONITOR_INTERVAL_MS ${interval} (jitter ±${Math.round(r.jitterRatio * 100)}%), ` +
      `${r.shards} shards: ${fmt1(r.expected)} polls/s needed; every item had its baseline ${r.baseline.seconds !== null ? `${r.baseline.seconds.toFixed(1)} s after the last create` : '**not within the timeout**'}`,
  );
  out.push(
    `- direct (a): SCRAPE_RPS_PER_PLATFORM=pf_03=${cfg.directRps}, no limit at the simulator. Through the proxies (b–d): the worker restarted with SCRAPE_PROXY_URLS = ${cfg.proxies} loopback proxies ` +
      `(proxy-chain with credentials, in a child process of their own, each sending from its own address 127.0.0.2 onward), SCRAPE_RPS_PER_PROXY=pf_03=${cfg.proxyRps} ` +
      `(${fmt1(cfg.proxyRps * 60)}/min per address), SCRAPE_PROXY_COOLDOWN_MS ${r.cooldownMs}; the simulator limits pf_03 to ${limit} requests per address in any 60 s, past it a ban of ${cfg.banMs / 1000} s answered \`${cfg.banAnswer}\``,
  );
  out.push(
    '- polls are counted at the simulator (its request log: every request with its source address and whether the limit refused it), not by the worker; a poll is a request the platform answered. ' +
      "CPU: the worker's process tree from /proc (its Chromium, idle on pf_03, apart); the proxies' and the simulator's processes apart, not in the targets",
  );
  if (r.logLost) out.push(`- **the simulator's request log dropped ${r.logLost} requests before the bench read them: the counts above are short by that much**`);
  out.push('');
  out.push(...targetsSection(rows, r.pg, run));

  // --- side by side ---------------------------------------------------------------------------
  out.push('', '### Direct against through the proxies (quiet windows, no changes)', '');
  out.push('| figure | a. direct | b. through the proxies | b / a |', '|---|---:|---:|---:|');
  const row = (name: string, a: number, b: number, f: (v: number) => string) => out.push(`| ${name} | ${f(a)} | ${f(b)} | ${Number.isFinite(a) && a !== 0 && Number.isFinite(b) ? `${(b / a).toFixed(2)} ×` : ''} |`);
  row('window (s)', r.direct.window.seconds, r.proxied.window.seconds, (v) => v.toFixed(0));
  row('polls/s (simulator request log)', dRate, pRate, fmt1);
  row('**worker CPU per poll (ms)**', dCpu.worker, pCpu.worker, (v) => fmt1(v));
  row('worker, % of one core', percent(r.direct.window, 'worker'), percent(r.proxied.window, 'worker'), fmt1);
  row("worker's Chromium CPU per poll (ms; idle on pf_03)", dCpu.chromium, pCpu.chromium, (v) => v.toFixed(2));
  row('service CPU per poll (ms: worker + Chromium + Temporal + PostgreSQL)', dCpu.service, pCpu.service, fmt1);
  row('proxies process CPU per poll (ms)', dCpu.proxies, pCpu.proxies, fmt1);
  row('proxies process, % of one core', percent(r.direct.window, 'proxies'), percent(r.proxied.window, 'proxies'), fmt1);
  row('simulator CPU per poll (ms)', dCpu.simulator, pCpu.simulator, fmt1);
  row('machine busy, % of all cores', machineShare(r.direct.window).busyPercent, machineShare(r.proxied.window).busyPercent, fmt1);
  row('other work on the machine (not this run), % of one core', otherWork(r.direct.window), otherWork(r.proxied.window), fmt1);
  const duration = (w: Window) => w.metrics?.quantile('monitor_poll_duration_seconds', 0.5, { platform: 'pf_03' });
  const dd = duration(r.direct.window);
  const pd = duration(r.proxied.window);
  out.push(`| poll duration p50 (worker histogram bucket) | ${dd ? atMostText(dd) : 'n/a'} | ${pd ? atMostText(pd) : 'n/a'} | |`);
  out.push('');
  const busiest = (w: Window) =>
    [...w.others.entries()]
      .sort((x, y) => y[1] - x[1])
      .slice(0, 2)
      .map(([name, seconds]) => `${cell(name.slice(0, 60))} ${pct((100 * seconds) / w.seconds)}`)
      .join('; ') || 'none';
  out.push(`- busiest other processes still running at each window's end (the rest of "other work" came and went): direct ${busiest(r.direct.window)}; proxied ${busiest(r.proxied.window)}`);
  out.push(
    `- waited before each window for the Temporal server's CPU to settle: ${r.direct.settleSeconds.toFixed(0)} s (direct), ${r.proxied.settleSeconds.toFixed(0)} s (proxied); ` +
      `the proxied worker was ready ${s1(r.proxied.restart.readyAt - r.proxied.restart.at)} after the direct one was told to stop, ` +
      `and polled at 90% of the rate ${r.proxied.restart.rateBackAt ? `${s1(r.proxied.restart.rateBackAt - r.proxied.restart.readyAt)} after it was ready` : '**never within the wait**'}`,
  );

  // --- b ---------------------------------------------------------------------------------------
  out.push('', '### b. Through the proxies: each address', '');
  const forwarded = [...r.proxied.proxyStats.values()].reduce((t, s) => t + s.http + s.connect, 0);
  out.push(
    `- requests per address in the window: min ${bSpread.min}, median ${bSpread.p50}, max ${bSpread.max} over ${bSpread.n} addresses ` +
      `(${fmt1(bSpread.min / r.proxied.window.seconds)}–${fmt1(bSpread.max / r.proxied.window.seconds)} req/s; each may send ${cfg.proxyRps})`,
  );
  out.push(`- most in any 60 s (request log; the limit ${limit}): ${r.proxied.peaks.slice(0, 3).map((p) => `${p.address} ${p.peak}`).join(', ') || 'none'}`);
  const limiterMax = [...r.limiterPeak.entries()].sort((a, b) => b[1] - a[1])[0];
  out.push(`- the simulator limiter's own requests_last_minute, highest sampled every 2 s over phases b–d: ${limiterMax ? `${limiterMax[1]} (${limiterMax[0]})` : 'none'}`);
  out.push(`- the proxies forwarded ${forwarded.toLocaleString('en')} requests since they started (their own counters: a cross-check of the log by address)`);
  const outcomes = r.proxied.window.metrics?.by('monitor_polls_total', 'outcome', { platform: 'pf_03' }) ?? {};
  out.push(`- poll outcomes (worker metrics): ${Object.entries(outcomes).map(([o, n]) => `${o} ${n}`).join(', ') || 'n/a'}; blocks met (scrape_proxy_blocks_total): ${r.proxied.window.metrics?.sum('scrape_proxy_blocks_total', { platform: 'pf_03' }) ?? 'n/a'}`);

  // --- c ---------------------------------------------------------------------------------------
  out.push('', `### c. ${proxiesN(cfg.banned)} banned at once, during a soak with changes`, '');
  const soak = r.c.soak;
  out.push(
    `- soak of ${bench.soakMs / 1000} s, ${soak.driver.perInterval} targets changed every interval (${soak.driver.changes.length} changes, ${soak.driver.failures} PUT failures); ` +
      `the bans (${range(r.c.banned)}, for ${cfg.banMs / 1000} s through the control API) ${s1(r.c.banAt - soak.startedAt)} into it`,
  );
  out.push(
    `- polls after the bans until the soak's end: ${fmt1(r.c.pollsAfterBan / r.c.secondsAfterBan)}/s = ${pct((100 * r.c.pollsAfterBan) / r.c.secondsAfterBan / r.expected)} of ${fmt1(r.expected)}/s ` +
      `(${cfg.proxies - cfg.banned} healthy × ${cfg.proxyRps} = ${fmt1((cfg.proxies - cfg.banned) * cfg.proxyRps)} req/s)`,
  );
  out.push(
    `- ${affected.length} targets had their last poll before the ban through a banned address; ${affected.filter((t) => t.refused > 0).length} of them met a refusal before their next poll ` +
      `(${affected.reduce((s, t) => s + t.refused, 0)} refused requests), the others went out through a healthy address straight away`,
  );
  out.push('', '| time | n | p50 | p99 | max |', '|---|---:|---:|---:|---:|');
  out.push(`| ban → next poll through a healthy address | ${fromBan.n} | ${fmtMs(fromBan.p50)} | ${fmtMs(fromBan.p99)} | ${fmtMs(fromBan.max)} |`);
  out.push(`| last poll before the ban → next poll through a healthy address (the target's interval across the ban) | ${gap.n} | ${fmtMs(gap.p50)} | ${fmtMs(gap.p99)} | ${fmtMs(gap.max)} |`);
  out.push(`| for comparison, targets whose last poll went through a healthy address: ban → next poll | ${othersFromBan.n} | ${fmtMs(othersFromBan.p50)} | ${fmtMs(othersFromBan.p99)} | ${fmtMs(othersFromBan.max)} |`);
  out.push(`| the same, their interval across the ban | ${othersGap.n} | ${fmtMs(othersGap.p50)} | ${fmtMs(othersGap.p99)} | ${fmtMs(othersGap.max)} |`);
  out.push(`| any refused request after the ban → its target's next poll through a healthy address | ${reroute.n} | ${fmtMs(reroute.p50)} | ${fmtMs(reroute.p99)} | ${fmtMs(reroute.max)} |`);
  out.push('');
  if (unanswered) out.push(`- **${unanswered} refused requests were not followed by a poll of their target through a healthy address before the end of the soak**`);
  const sa = spread(setAside);
  const ra = spread(refusedAll);
  out.push(
    `- requests refused per banned address within ${r.c.setAsideMs / 1000} s of the ban (what each cost before it was set aside): min ${sa.min}, median ${sa.p50}, max ${sa.max}; ` +
      `until the soak's end (${s1(soak.endedAt - r.c.banAt)}, its retries after each cool-down of SCRAPE_PROXY_COOLDOWN_MS ${r.cooldownMs / 1000} s, doubling, included): min ${ra.min}, median ${ra.p50}, max ${ra.max}`,
  );
  out.push(`  - by address (within ${r.c.setAsideMs / 1000} s / until the end): ${r.c.banned.map((a, i) => `${a} ${setAside[i]}/${refusedAll[i]}`).join(', ')}`);
  out.push(`- most any healthy address sent in any 60 s of the soak: ${r.c.healthyPeaks.slice(0, 3).map((p) => `${p.address} ${p.peak}`).join(', ') || 'none'}`);
  const g = r.c.integrity;
  out.push(
    `- notifications log against the changes: ${g.expected.toLocaleString('en')} (change, item) pairs expected, ${g.found.toLocaleString('en')} found, **${g.missed} missed**, **${g.duplicated} duplicated**; ` +
      `${g.superseded} not observable (the target changed again before any poll); ${g.unmatched} notifications matching no change`,
  );
  if (g.examples.length) out.push(`- missed, for example: ${g.examples.join('; ')}`);
  const cw = soak.before;
  if (cw) {
    const cOutcomes = cw.metrics?.by('monitor_polls_total', 'outcome', { platform: 'pf_03' }) ?? {};
    out.push(`- poll outcomes in the soak (worker metrics): ${Object.entries(cOutcomes).map(([o, n]) => `${o} ${n}`).join(', ') || 'n/a'}`);
  }

  // --- d ---------------------------------------------------------------------------------------
  out.push('', `### d. ${cfg.fewHealthy} healthy ${cfg.fewHealthy === 1 ? 'proxy' : 'proxies'}: the budget runs out`, '');
  out.push(
    `- ${r.d.banned.length} addresses banned (${range(r.d.banned)}), ${cfg.fewHealthy} healthy: ${fmt1(budget)} req/s for ${fmt1(r.expected)} needed; ` +
      `window of ${r.d.window.seconds.toFixed(0)} s starting ${s1(cfg.fewSettleMs)} after the bans`,
  );
  out.push(
    `- polls ${fmt1(dRatePolls)}/s (${r.d.pollsHealthy} of ${r.d.polls} through the healthy addresses); ${r.d.refused} requests refused (banned addresses tried again after their cool-downs)`,
  );
  out.push(
    '- evenness: each target\'s mean interval in the window, (its last poll − its first) / (its polls − 1). Counts per target would read a ±1 poll rounding as unevenness (10 against 12 polls ' +
      'is 1.2 × in a 2-minute window); the mean interval does not, and it is what a watcher sees: how often their target is looked at',
  );
  out.push('', '| per target | min | median | p99 | max | CV |', '|---|---:|---:|---:|---:|---:|');
  out.push(`| polls in the window | ${ev.polls.min} | ${ev.polls.p50} | ${ev.polls.p99} | ${ev.polls.max} | ${pct(100 * ev.polls.cv)} |`);
  out.push(`| mean interval | ${s1(ev.interval.min)} | ${s1(ev.interval.p50)} | ${s1(ev.interval.p99)} | ${s1(ev.interval.max)} | ${pct(100 * ev.interval.cv)} |`);
  out.push('');
  out.push(`- expected mean interval at the budget: ${s1((1000 * r.targets) / Math.max(1e-9, dRatePolls))} (targets ÷ polls/s)`);
  out.push(`- by shard (each shard gets 1/${r.shards} of every address's rate): ${r.d.byShard.map((g) => `shard ${g.group}: ${g.targets} targets, mean interval ${s1(g.interval.mean)} (${s1(g.interval.min)}–${s1(g.interval.max)})`).join('; ')}`);
  out.push(
    `- by how many targets the target's account has in its shard (the fair share of issue 25 divides a shard's slots between its accounts, so when slots run short ` +
      `an account's targets share its part: the more it has in the shard, the longer each waits):`,
  );
  out.push('', "| the account's targets in the shard | targets | mean interval: min | median | max |", '|---:|---:|---:|---:|---:|');
  for (const g of r.d.byAccountTargets) out.push(`| ${g.group} | ${g.targets} | ${s1(g.interval.min)} | ${s1(g.interval.p50)} | ${s1(g.interval.max)} |`);
  out.push('');
  out.push(`- most any address sent in any 60 s: ${r.d.peaks.slice(0, 3).map((p) => `${p.address} ${p.peak}`).join(', ') || 'none'}`);
  out.push('', `#### \`npm run ops -- scrapers:proxies\` (src/ops/proxies.ts) against the bench database`, '');
  out.push(`- read after a worker report written at ${r.d.reportAt ? `${r.d.reportAt.toISOString()}, ${s1(r.d.reportAt.getTime() - r.d.banAt)} after the bans` : '**no report written 30 s into the phase within the wait** (an older one)'}`);
  if (ops) {
    out.push(
      `- ${ops.platform}: ${ops.workers} worker(s), ${ops.proxies} proxies, ${ops.healthy} healthy, ${ops.rps_per_proxy} req/s each: budget ${ops.budget_rps} req/s, needed ${ops.needed_rps} (${ops.watched_targets} watched targets)`,
    );
    out.push(`- budget_ran_out: ${ops.budget_ran_out ? `"${ops.budget_ran_out}"` : 'null'}`);
    out.push(`- proxies by health: ${healthLine(ops.by_proxy)}`);
  } else {
    out.push('- no pf_03 proxies in any fresh worker report');
  }

  // --- CPU by phase -----------------------------------------------------------------------------
  out.push('', '### CPU by phase (% of one core)', '');
  const phases = [r.direct.window, r.proxied.window, soak.before, r.d.window].filter((w): w is Window => w !== null);
  out.push(`| process | ${phases.map((w) => `${w.label} (${w.seconds.toFixed(0)} s)`).join(' | ')} | RSS MiB at the end |`, `|---|${phases.map(() => '---:').join('|')}|---:|`);
  for (const s of SOURCES_WITH_PROXIES) out.push(`| ${SOURCE_NAMES[s]} | ${phases.map((w) => fmt1(percent(w, s))).join(' | ')} | ${r.rss[s] !== undefined ? Math.round(r.rss[s]) : ''} |`);
  out.push(`| polls/s (simulator) | ${phases.map((w) => fmt1(w.polls / w.seconds)).join(' | ')} | |`);
  out.push(`| whole machine (of ${machineShare(r.direct.window).cores * 100} %) | ${phases.map((w) => fmt1(machineShare(w).busyPercent)).join(' | ')} | |`);
  out.push(`| other work on the machine (not this run) | ${phases.map((w) => fmt1(otherWork(w))).join(' | ')} | |`);

  const warnings = [...r.logCounts.entries()].sort((a, b) => b[1] - a[1]);
  out.push('', '### Log lines at warn and above', '');
  out.push(warnings.length ? warnings.slice(0, 10).map(([key, n]) => `- ${n} × ${cell(key)}`).join('\n') : '- none');
  if (r.crashes.length) out.push('', '### Worker exits the bench did not cause', '', ...r.crashes.map((c) => `\`\`\`\n${c}\n\`\`\``));
  return out.join('\n');
}

/** What the machine did besides this run's processes in the window, in % of one core (noise in the CPU figures). */
function otherWork(w: Window): number {
  const ours = SOURCES_WITH_PROXIES.reduce((t, s) => t + (Number.isFinite(w.cpu[s]) ? w.cpu[s] : 0), 0);
  return machineShare(w).busyPercent - (100 * ours) / w.seconds;
}

function healthLine(rows: readonly ProxyRow[]): string {
  const healthy = rows.filter((p) => p.healthy).length;
  const blocks = rows.reduce((t, p) => t + p.blocks, 0);
  return `${healthy} healthy, ${rows.length - healthy} cooling down; ${blocks} blocks in all; ${rows.filter((p) => p.blocks > 0).length} proxies with a block`;
}

