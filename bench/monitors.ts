// `npm run bench:monitors`: issue 13's targets for the watchlist monitors, measured side by side
// in one run on real parts started for it (bench/monitors/stack.ts): a scratch database, a fresh
// Temporal dev server, the platform simulator in its own process, the worker as a child process
// (temporal/worker-main.ts, so its CPU is measured apart and it can be SIGKILLed), and in this
// process the gateway (Watchlist API) and a stream node with a WebSocket client per account.
//
//   0. an idle window (BENCH_IDLE_MS) before any item exists: what the parts cost doing nothing;
//   1. BENCH_ITEMS items on BENCH_TARGETS events of BENCH_PLATFORM (pf_03, plain HTML over HTTP,
//      by default; or pf_01, client-rendered: the worker makes sessions in its Chromium and polls
//      over HTTP; the browser's CPU is counted and shown on its own), created through
//      POST /watchlist (latency overall and for the last 10%);
//   2. time from the last create until every item has its baseline;
//   3. a quiet window (BENCH_QUIET_MS, no changes): CPU per poll, polls counted at the simulator
//      and in the worker's monitor_polls_total;
//   4. the soak (BENCH_SOAK_MS): BENCH_CHANGE_FRACTION of the targets changed every interval;
//      polls/s, p99 lateness (the worker's histogram), CPU per notification, simulator change to
//      stream client latency;
//   5. during the soak (BENCH_KILL, at BENCH_KILL_AT of it) the worker is SIGKILLed and started
//      again after BENCH_KILL_DOWN_MS: when polling resumed, when the rate was back;
//   6. after it, the notifications log against every change made: missed and duplicated.
// Progress goes to stderr; the markdown report (targets with PASS/FAIL, where a missed target ran
// out of what) to stdout. Knobs: bench/monitors/config.ts. Everything started is stopped at the
// end, on failure and on Ctrl-C.
//
// With BENCH_PROXIES=N the worker's requests go through N loopback proxies in a process of their
// own (bench/proxies/proxies-main.ts, its CPU shown apart), each allowed BENCH_PROXY_RPS (default
// BENCH_RPS split over them), so `BENCH_PROXIES=1 npm run bench:monitors` against a run without
// it says what a proxy costs a poll.
import { benchConfig, commandLine, machineLine } from './monitors/config.ts';
import type { Change } from './monitors/changes.ts';
import { checkLog } from './monitors/integrity.ts';
import { Lifecycle } from './monitors/lifecycle.ts';
import { createItems, pacedPosts, settleAfterCreates, setUp, waitForBaselines } from './monitors/load.ts';
import { between, combine, type Window } from './monitors/meter.ts';
import { rssMiB } from './monitors/proc.ts';
import { renderReport } from './monitors/report.ts';
import { settleAfterSoak, soak, waitWindow } from './monitors/soak.ts';
import { startStack } from './monitors/stack.ts';
import { StreamClients, streamFigures } from './monitors/stream-clients.ts';
import { progress } from './monitors/support.ts';
import { startProxiesProcess } from './proxies/proxies-process.ts';

const life = new Lifecycle();

async function main(): Promise<string> {
  const bench = benchConfig();
  const command = commandLine(bench.platform);
  const machine = machineLine();
  const date = new Date();
  const started = performance.now();
  progress(
    `${bench.items} items on ${bench.targets} ${bench.platform} targets over ${bench.accounts} accounts, interval ${bench.intervalMs} ms, ` +
      `quiet ${bench.quietMs / 1000} s, soak ${bench.soakMs / 1000} s; ${machine}`,
  );
  let proxies: { count: number; rpsPerProxy: string } | null = null;
  let proxiesPid: number | null = null;
  let stackOptions = {};
  if (bench.proxies > 0) {
    progress(`starting ${bench.proxies} loopback proxies (own process)...`);
    const started = await startProxiesProcess(bench.proxies, life);
    proxiesPid = started.pid;
    proxies = { count: bench.proxies, rpsPerProxy: `${bench.platform}=${bench.proxyRps}` };
    stackOptions = { proxiesPid: started.pid, env: { SCRAPE_PROXY_URLS: started.setting, SCRAPE_RPS_PER_PROXY: proxies.rpsPerProxy } };
  }
  const stack = await startStack(bench, life, stackOptions);
  const { meter } = stack;
  const { targets, accounts } = await setUp(bench, stack);
  life.check();

  // 0: what the parts cost with nothing to poll.
  let idle: Window | null = null;
  if (bench.idleMs > 0) {
    progress(`idle window of ${bench.idleMs / 1000} s (no items yet): the parts' fixed CPU...`);
    const i0 = await meter.read();
    await waitWindow(bench.idleMs, life);
    idle = between('idle, no items', i0, await meter.read());
  }

  // 1 and 2: creation and baselines.
  const c0 = await meter.read();
  const create = await createItems(bench, stack, targets, accounts, life);
  const c1 = await meter.read();
  const baseline = await waitForBaselines(bench, stack, create, life);
  const c2 = await meter.read();
  const watched = targets.filter((t) => t.items.length > 0);

  // The stream clients connect before the windows, so they only ever see the soak's notifications.
  const streamAccounts = accounts.slice(0, bench.streamAccounts);
  progress(`connecting ${streamAccounts.length} WebSocket clients to the stream node...`);
  const clients = await StreamClients.connect(stack.streamUrl, streamAccounts);
  life.onCleanup('stream clients', async () => clients.close());

  // 3: quiet window, once the creates' last work in the Temporal server has settled.
  const settleSeconds = await settleAfterCreates(bench, stack, idle, life);
  progress(`phase 3: quiet window of ${bench.quietMs / 1000} s (no changes): CPU per poll...`);
  const q0 = await meter.read();
  await waitWindow(bench.quietMs, life);
  const quiet = between('quiet window', q0, await meter.read());
  progress(`  ${quiet.polls} polls (${(quiet.polls / quiet.seconds).toFixed(1)}/s), ${quiet.notifications} notifications`);
  const posts = await pacedPosts(bench, stack, watched, accounts, create.created, life);

  // 4 and 5: soak, with the kill.
  const soaked = await soak(bench, stack, watched, life);
  const steady = combine('steady soak', [soaked.before, soaked.after].filter((w) => w !== null));

  // 6: settle, then the log against the changes.
  progress(`phase 6: changes stopped; settling ${bench.settleIntervals} intervals, then checking the notifications log...`);
  await settleAfterSoak(bench, stack);
  const k = soaked.kill;
  const aroundKill = (c: Change) => k !== null && c.putAt >= k.killedAt - 2 * bench.intervalMs && c.putAt <= (k.recoveredAt ?? soaked.endedAt);
  const integrity = await checkLog(stack, soaked.driver.changes, soaked.logHeadAtStart, aroundKill);
  progress(`  ${integrity.found}/${integrity.expected} found, ${integrity.missed} missed, ${integrity.duplicated} duplicated`);

  const stream = streamFigures(clients, soaked.driver.changes, integrity.logged, aroundKill);

  const rss: Record<string, number> = { worker: stack.worker.rssMiB(), chromium: stack.worker.chromiumMemoryMiB(), simulator: rssMiB(stack.sim.pid), bench: rssMiB('self') };
  if (stack.temporalPid) rss.temporal = rssMiB(stack.temporalPid);
  if (proxiesPid) rss.proxies = rssMiB(proxiesPid);
  const walls = await stack.meter.walls();
  return renderReport({
    bench,
    command,
    machine,
    date,
    rpsSetting: stack.rpsSetting,
    shape: stack.shape,
    chromium: stack.chromium,
    browserPages: stack.browserPages,
    browserSessions: stack.browserSessions,
    sessionTtlMs: bench.sessionTtlMs,
    walls,
    shards: stack.shards,
    jitterRatio: stack.config.MONITOR_JITTER_RATIO,
    proxies,
    created: create.created,
    targetsWithItems: watched.length,
    create,
    posts,
    baseline,
    idle,
    settleSeconds,
    creationWindow: between('creation', c0, c1),
    baselineWindow: between('until every baseline', c1, c2),
    quiet,
    soak: soaked,
    steady,
    integrity,
    stream,
    pg: stack.pg,
    rss,
    logCounts: stack.logCounts,
    crashes: stack.worker.crashes,
    runtimeSeconds: (performance.now() - started) / 1000,
  });
}

life.finish(main());
