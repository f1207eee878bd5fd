// `npm run bench:proxies`: issue 27's targets for the proxy pool, measured in one run on the real
// parts of bench:monitors (bench/monitors/stack.ts: scratch database, Temporal dev server, the
// simulator in its own process, the worker as a child process, gateway and stream node here) and
// BENCH_PROXIES loopback proxies in a process of their own (bench/proxies/proxies-main.ts, each
// sending from its own 127.0.0.x address, so the simulator limits and bans them apart; their CPU
// is measured apart, as the simulator's is). BENCH_ITEMS items on BENCH_TARGETS pf_03 targets are
// created through POST /watchlist; then:
//
//   a. direct: the worker without proxies (SCRAPE_RPS_PER_PLATFORM=pf_03=BENCH_RPS, no limit at
//      the simulator), a quiet window: the worker's CPU per poll, the baseline;
//   b. through the proxies: the worker restarted with SCRAPE_PROXY_URLS and SCRAPE_RPS_PER_PROXY
//      =pf_03=BENCH_PROXY_RPS, the simulator limiting pf_03 to BENCH_SIM_LIMIT_PER_MIN requests per
//      address per minute (a ban of BENCH_SIM_BAN_MS past it); a quiet window: polls/s, CPU per poll
//      against the direct one, the most any address sent in 60 s, the limiter's bans;
//   r. one event the platform refuses (403 to everything) watched and scraped on demand 60 times,
//      three at a time, in the soak's first part (issue 36): the other targets' polls/s against
//      their schedule, every proxy still carrying its share, the refused event asked once per
//      back-off step (bench/proxies/refused-event.ts); the soak's notification check covers it;
//   c. BENCH_BANNED proxies banned at once during a soak with inventory changes (bench:monitors'
//      churn, each change written down before it is made): how long the targets of the banned
//      addresses waited for a poll through a healthy one, what each banned address cost in refused
//      requests, no healthy address past the limit; after the soak the notifications log against
//      the changes: nothing missed, nothing twice;
//   d. more banned, BENCH_FEW_HEALTHY left, too few for the targets: polls/s against that budget,
//      how evenly the targets' intervals stretch, no address past the limit, and what
//      `npm run ops -- scrapers:proxies` (src/ops/proxies.ts) says once the worker reported.
//
// Every poll is counted at the simulator's request log (the ground truth), not by the worker.
// Progress on stderr, the markdown report on stdout. Knobs: bench/proxies/config.ts. Everything
// started is stopped at the end, on failure and on Ctrl-C (bench/monitors/lifecycle.ts).
import { platformProxies } from '../src/ops/proxies.ts';
import { machineLine } from './monitors/config.ts';
import { checkLog } from './monitors/integrity.ts';
import { Lifecycle } from './monitors/lifecycle.ts';
import { createItems, setUp, settleAfterCreates, waitForBaselines } from './monitors/load.ts';
import { between, percent } from './monitors/meter.ts';
import { rssMiB } from './monitors/proc.ts';
import { settleAfterSoak, soak, waitWindow } from './monitors/soak.ts';
import { startStack } from './monitors/stack.ts';
import { progress, setProgressLabel, sleep } from './monitors/support.ts';
import { neededRps, proxiesBenchConfig, proxiesCommandLine } from './proxies/config.ts';
import { acrossBan, evenness, intervalsBy, peaksPer60s, perAddress, waitsAfterRefusal } from './proxies/figures.ts';
import { proxyStats, startProxiesProcess } from './proxies/proxies-process.ts';
import { renderProxiesReport, type ProxiedWindow } from './proxies/report.ts';
import { refusedEventFigures, runRefusedEvent } from './proxies/refused-event.ts';
import { RequestLogCopy, SimControl, type LoggedRequest } from './proxies/simulator.ts';

setProgressLabel('bench:proxies');
const life = new Lifecycle();
const PLATFORM = 'pf_03';
/** How long the worker may take to poll at 90% of the rate again after its restart. */
const RATE_BACK_TIMEOUT_MS = 180_000;
/** Refusals of a banned address within this long of its ban are "before it was set aside". */
const SET_ASIDE_MS = 10_000;
/** The worker reports its exits every 30 s (src/scrapers/browser-reports.ts); ops reads one this far into the phase. */
const REPORT_INTO_PHASE_MS = 30_000;
const REPORT_WAIT_MS = 90_000;

async function untilTime(at: number): Promise<void> {
  while (Date.now() < at) {
    life.check();
    await sleep(Math.min(1_000, at - Date.now()));
  }
}

/** Waits until the polls over the last interval (the simulator's log) are at least 90% of `expected`/s. */
async function waitForRate(log: RequestLogCopy, expected: number, intervalMs: number, since: number): Promise<number | null> {
  let printed = Date.now();
  while (Date.now() - since < RATE_BACK_TIMEOUT_MS) {
    life.check();
    await sleep(1_000);
    await log.pull();
    const now = Date.now();
    const rate = log.polls(now - intervalMs, now) / (intervalMs / 1000);
    if (now - since >= intervalMs && rate >= 0.9 * expected) return now;
    if (now - printed >= 10_000) {
      printed = now;
      progress(`  ${((now - since) / 1000).toFixed(0)} s: ${rate.toFixed(1)} polls/s over the last interval (of ${expected.toFixed(1)})`);
    }
  }
  return null;
}

async function main(): Promise<string> {
  const cfg = proxiesBenchConfig();
  const bench = cfg.bench;
  const command = proxiesCommandLine();
  const machine = machineLine();
  const date = new Date();
  const started = performance.now();
  const needed = neededRps(cfg);
  progress(
    `${bench.items} items on ${bench.targets} ${PLATFORM} targets, interval ${bench.intervalMs} ms (${needed.toFixed(1)} polls/s needed); ${cfg.proxies} proxies × ${cfg.proxyRps} req/s; ` +
      `simulator limit ${cfg.limitPerMin}/min per address; ${machine}`,
  );
  if (cfg.proxies * cfg.proxyRps < needed) progress(`  note: ${cfg.proxies} × ${cfg.proxyRps} = ${cfg.proxies * cfg.proxyRps} req/s is less than the ${needed} the targets need: phase b cannot keep up`);
  if (cfg.proxyRps * 60 > cfg.limitPerMin) progress(`  note: ${cfg.proxyRps} req/s per proxy is ${cfg.proxyRps * 60}/min, past the simulator's ${cfg.limitPerMin}: the limiter will ban them`);
  if (cfg.fewHealthy * cfg.proxyRps >= needed) progress(`  note: ${cfg.fewHealthy} × ${cfg.proxyRps} req/s covers the ${needed} needed: phase d's budget does not run out`);

  progress(`starting ${cfg.proxies} loopback proxies (own process)...`);
  const proxies = await startProxiesProcess(cfg.proxies, life);
  const stack = await startStack(bench, life, { databasePrefix: 'tm_bench_proxies', proxiesPid: proxies.pid });
  const { meter, worker } = stack;
  const sim = new SimControl(stack.sim.url, PLATFORM);
  const log = new RequestLogCopy(sim);
  log.start(life);

  const { targets, accounts } = await setUp(bench, stack);
  life.check();
  const create = await createItems(bench, stack, targets, accounts, life);
  const baseline = await waitForBaselines(bench, stack, create, life);
  const watched = targets.filter((t) => t.items.length > 0);
  const keys = watched.map((t) => t.key);
  const expected = (watched.length * 1000) / bench.intervalMs;

  // a: direct.
  const settleDirect = await settleAfterCreates(bench, stack, null, life);
  progress(`phase a: direct (no proxies), quiet window of ${bench.quietMs / 1000} s: the worker's CPU per poll...`);
  const a0 = await meter.read();
  await waitWindow(bench.quietMs, life);
  const a1 = await meter.read();
  await log.pull();
  const direct = { window: between('direct, quiet', a0, a1), polls: log.polls(a0.wall, a1.wall), settleSeconds: settleDirect };
  progress(`  ${direct.polls} polls (${(direct.polls / direct.window.seconds).toFixed(1)}/s), worker ${percent(direct.window, 'worker').toFixed(1)} % of a core`);

  // b: through the proxies.
  const rpsPerProxy = `${PLATFORM}=${cfg.proxyRps}`;
  progress(`phase b: restarting the worker with SCRAPE_PROXY_URLS (${cfg.proxies} proxies), SCRAPE_RPS_PER_PROXY=${rpsPerProxy}; the simulator limits ${PLATFORM} to ${cfg.limitPerMin}/min per address...`);
  const restartAt = Date.now();
  const restarted = await worker.restart({ SCRAPE_PROXY_URLS: proxies.setting, SCRAPE_RPS_PER_PROXY: rpsPerProxy }, async () => {
    // Only once the direct worker is gone: its one address would be banned at once.
    await sim.setLimits({ requests_per_minute: cfg.limitPerMin, ban_ms: cfg.banMs, ban_answer: cfg.banAnswer });
  });
  progress(`  new worker ready in ${((restarted.readyAt - restarted.spawnedAt) / 1000).toFixed(1)} s (pid ${worker.pid}); waiting for the poll rate...`);
  const rateBackAt = await waitForRate(log, expected, bench.intervalMs, restarted.readyAt);
  progress(rateBackAt ? `  back to 90% of the rate ${((rateBackAt - restarted.readyAt) / 1000).toFixed(1)} s after it was ready` : '  the poll rate did NOT come back to 90%; measuring anyway');
  const settleProxied = await settleAfterCreates(bench, stack, null, life);
  progress(`  quiet window of ${bench.quietMs / 1000} s through the proxies...`);
  const limitsB0 = await sim.limits();
  const b0 = await meter.read();
  await waitWindow(bench.quietMs, life);
  const b1 = await meter.read();
  await log.pull();
  const limitsB1 = await sim.limits();
  const bRequests = log.between(b0.wall, b1.wall);
  const proxied: ProxiedWindow = {
    window: between(`through ${cfg.proxies} proxies, quiet`, b0, b1),
    polls: bRequests.filter((r) => !r.refused).length,
    refused: bRequests.filter((r) => r.refused).length,
    perAddress: perAddress(bRequests),
    peaks: peaksPer60s(log.between(b0.wall - 60_000, b1.wall), b0.wall, b1.wall),
    limiterBans: limitsB1.totals.bans_issued - limitsB0.totals.bans_issued,
    proxyStats: await proxyStats(proxies),
    settleSeconds: settleProxied,
    restart: { at: restartAt, readyAt: restarted.readyAt, rateBackAt },
  };
  progress(
    `  ${proxied.polls} polls (${(proxied.polls / proxied.window.seconds).toFixed(1)}/s), worker ${percent(proxied.window, 'worker').toFixed(1)} % of a core, ` +
      `proxies ${percent(proxied.window, 'proxies').toFixed(1)} %; most any address sent in 60 s: ${proxied.peaks[0]?.peak ?? 0}; limiter bans ${proxied.limiterBans}`,
  );

  // c: bans during a soak.
  const bannedFirst = proxies.addresses.slice(0, cfg.banned);
  const limitsC0 = await sim.limits();
  const bansBeforeC = sim.bansByBench;
  const soaking = soak(bench, stack, watched, life);
  // Observed here and awaited below: a failure of the soak must not be an unhandled rejection meanwhile.
  soaking.catch(() => {});
  const soakStart = Date.now();
  // r: one refused event, watched and scraped on demand, in the soak's first part, before any ban.
  const refusedRun = await runRefusedEvent({
    shape: stack.shape,
    eventIndex: bench.targets,
    simUrl: stack.sim.url,
    gatewayUrl: stack.gatewayUrl,
    accountKey: accounts[0]!.key,
    client: stack.temporal.client,
    taskQueue: stack.config.SCRAPE_TASK_QUEUE,
    windowMs: cfg.banAfterMs - 3 * bench.intervalMs,
    life,
  });
  await log.pull();
  const refused = refusedEventFigures(refusedRun, log.between(refusedRun.from, refusedRun.to), new Set(keys), proxies.addresses, bench.intervalMs);
  const notRefusedEvent = (reqs: LoggedRequest[]) => reqs.filter((r) => r.key !== refusedRun.key);
  progress(
    `  other targets ${refused.othersRate.toFixed(1)} polls/s of ${refused.othersExpected.toFixed(1)}; the refused event asked at ${refused.asked.map((t) => (t / 1000).toFixed(1)).join(', ')} s`,
  );
  await untilTime(soakStart + cfg.banAfterMs);
  progress(`phase c: banning ${cfg.banned} proxies at once (${bannedFirst[0]}..${bannedFirst.at(-1)}, ${cfg.banMs / 1000} s, answered ${cfg.banAnswer}), ${(cfg.banAfterMs / 1000).toFixed(0)} s into the soak...`);
  await sim.ban(bannedFirst, cfg.banMs);
  const banAt = Date.now();
  const soaked = await soaking;
  progress(`  changes stopped; settling ${bench.settleIntervals} intervals, then checking the notifications log...`);
  await settleAfterSoak(bench, stack);
  const integrity = await checkLog(stack, soaked.driver.changes, soaked.logHeadAtStart, () => false);
  progress(`  ${integrity.found}/${integrity.expected} found, ${integrity.missed} missed, ${integrity.duplicated} duplicated`);
  const cEnd = Date.now();
  await log.pull();
  const limitsC1 = await sim.limits();
  const bannedSet = new Set(bannedFirst);
  const afterBan = notRefusedEvent(log.between(banAt, soaked.endedAt));
  const cFigures = {
    soak: soaked,
    integrity,
    banned: bannedFirst,
    banAt,
    acrossBan: acrossBan(notRefusedEvent(log.between(banAt - 3 * bench.intervalMs, cEnd)), bannedSet, banAt),
    setAsideMs: SET_ASIDE_MS,
    refusedSetAside: perAddress(notRefusedEvent(log.between(banAt, banAt + SET_ASIDE_MS)).filter((r) => bannedSet.has(r.address))),
    refusedAll: perAddress(notRefusedEvent(log.between(banAt, soaked.endedAt)).filter((r) => bannedSet.has(r.address))),
    waitsAfterRefusal: waitsAfterRefusal(notRefusedEvent(log.between(banAt, cEnd)), bannedSet, soaked.endedAt),
    healthyPeaks: peaksPer60s(
      log.between(soaked.startedAt - 60_000, cEnd).filter((r) => !bannedSet.has(r.address)),
      soaked.startedAt,
      cEnd,
    ),
    limiterBans: limitsC1.totals.bans_issued - limitsC0.totals.bans_issued - (sim.bansByBench - bansBeforeC),
    pollsAfterBan: afterBan.filter((r) => !r.refused).length,
    secondsAfterBan: (soaked.endedAt - banAt) / 1000,
  };

  // d: too few healthy proxies.
  const bannedMore = proxies.addresses.slice(0, cfg.proxies - cfg.fewHealthy);
  const limitsD0 = await sim.limits();
  const bansBeforeD = sim.bansByBench;
  progress(
    `phase d: banning ${bannedMore.length} proxies (the ${cfg.banned} again, and ${bannedMore.length - cfg.banned} more) so ${cfg.fewHealthy} stay healthy: ` +
      `${cfg.fewHealthy} × ${cfg.proxyRps} = ${(cfg.fewHealthy * cfg.proxyRps).toFixed(1)} req/s for the ${needed.toFixed(1)} needed...`,
  );
  const dBanAt = await sim.ban(bannedMore, cfg.banMs);
  await untilTime(dBanAt + cfg.fewSettleMs);
  progress(`  window of ${cfg.fewMs / 1000} s...`);
  const d0 = await meter.read();
  await waitWindow(cfg.fewMs, life);
  const d1 = await meter.read();
  await log.pull();
  const limitsD1 = await sim.limits();
  const healthySet = new Set(proxies.addresses.slice(cfg.proxies - cfg.fewHealthy));
  const dRequests = notRefusedEvent(log.between(d0.wall, d1.wall));
  const shardRows = (await stack.pool.query<{ key: string; shard: number }>(`SELECT DISTINCT ref->>'key' AS key, shard FROM monitor_members WHERE platform = $1`, [PLATFORM])).rows;
  const shardOf = new Map(shardRows.map((row) => [row.key, row.shard]));
  // The fair share (issue 25) divides a shard's slots between accounts: how many targets a
  // target's account has in its shard may decide how often it is polled when slots run short.
  const accountOf = new Map(watched.filter((t) => new Set(t.items.map((i) => i.account)).size === 1).map((t) => [t.key, t.items[0]!.account]));
  const accountInShard = (key: string) => `${accountOf.get(key)}:${shardOf.get(key)}`;
  const accountTargets = new Map<string, number>();
  for (const key of accountOf.keys()) accountTargets.set(accountInShard(key), (accountTargets.get(accountInShard(key)) ?? 0) + 1);

  // What an operator sees: ops reads the workers' reports, one written well into this phase.
  progress(`  waiting for a worker report written at least ${REPORT_INTO_PHASE_MS / 1000} s after the bans...`);
  const reportDeadline = Date.now() + REPORT_WAIT_MS;
  let reportAt: Date | null = null;
  while (Date.now() < reportDeadline) {
    life.check();
    const row = (await stack.pool.query<{ at: Date | null }>(`SELECT max(reported_at) AS at FROM scrape_worker_browsers`)).rows[0];
    if (row?.at && row.at.getTime() >= dBanAt + REPORT_INTO_PHASE_MS) {
      reportAt = row.at;
      break;
    }
    await sleep(1_000);
  }
  const ops = await platformProxies(stack.db, { intervalMs: bench.intervalMs, platform: PLATFORM });
  const dFigures = {
    banAt: dBanAt,
    banned: bannedMore,
    window: between(`${cfg.fewHealthy} healthy proxies`, d0, d1),
    polls: dRequests.filter((r) => !r.refused).length,
    pollsHealthy: dRequests.filter((r) => !r.refused && healthySet.has(r.address)).length,
    refused: dRequests.filter((r) => r.refused).length,
    evenness: evenness(dRequests, keys),
    byShard: intervalsBy(dRequests, keys, (key) => shardOf.get(key)),
    byAccountTargets: intervalsBy(dRequests, keys, (key) => (accountOf.has(key) ? accountTargets.get(accountInShard(key)) : undefined)),
    peaks: peaksPer60s(log.between(d0.wall - 60_000, d1.wall), d0.wall, d1.wall),
    limiterBans: limitsD1.totals.bans_issued - limitsD0.totals.bans_issued - (sim.bansByBench - bansBeforeD),
    reportAt,
    ops: ops.find((p) => p.platform === PLATFORM) ?? null,
  };
  progress(
    `  ${dFigures.polls} polls (${(dFigures.polls / dFigures.window.seconds).toFixed(1)}/s of a ${(cfg.fewHealthy * cfg.proxyRps).toFixed(1)} budget); ` +
      `mean interval per target ${(dFigures.evenness.interval.min / 1000).toFixed(1)}..${(dFigures.evenness.interval.max / 1000).toFixed(1)} s; ops: ${dFigures.ops?.budget_ran_out ?? 'no budget_ran_out'}`,
  );

  const rss: Record<string, number> = { worker: worker.rssMiB(), simulator: rssMiB(stack.sim.pid), proxies: rssMiB(proxies.pid), bench: rssMiB('self') };
  const walls = await stack.meter.walls();
  return renderProxiesReport({
    cfg,
    command,
    machine,
    date,
    runtimeSeconds: (performance.now() - started) / 1000,
    shards: stack.shards,
    jitterRatio: stack.config.MONITOR_JITTER_RATIO,
    cooldownMs: stack.config.SCRAPE_PROXY_COOLDOWN_MS,
    created: create.created,
    targets: watched.length,
    keys,
    baseline,
    expected,
    direct,
    proxied,
    walls,
    refused,
    targetBackoffMs: stack.config.SCRAPE_TARGET_BACKOFF_MS,
    c: cFigures,
    d: dFigures,
    logLost: log.lost,
    limiterPeak: log.limiterPeak,
    pg: stack.pg,
    rss,
    logCounts: stack.logCounts,
    crashes: worker.crashes,
  });
}

life.finish(main());
