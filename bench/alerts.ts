// `npm run bench:alerts`: alert quality on all eleven platforms (issue 24). Scripted inventory
// histories are played on the simulator, and the notifications each should produce are written
// down before the run by the bench itself (bench/alerts/model.ts: the documented change rules
// and the cooldown, never the service's code or state); real WebSocket clients receive what the
// service sends, and the two are compared.
//
// Parts (bench/monitors/stack.ts, shared with bench:monitors): a scratch database
// (DATABASE_URL's server, e.g. postgres://postgres@127.0.0.1:5432/postgres, else an embedded
// PostgreSQL), a Temporal dev server, the simulator in its own process, the worker as a child
// process (it polls pf_01 through Chromium-made sessions, so Chromium must be installed), and in
// this process the gateway and a stream node with one WebSocket client per platform's account.
//
// Scenarios per platform (bench/alerts/scenarios.ts): flapping (cart holds released, price down
// and up, a listing delisted and relisted, a section appearing and selling out, blocked /
// malformed / failing / hanging pages between identical inventories, muted and paused twins),
// cooldown (two changes held and sent as one at the end; a change undone before the end: nothing),
// mixed ticket kinds in one section (all but pf_07, whose offers are all resale), and on pf_01
// its data arms failing and recovering. Phase 1 runs, every scenario at once; then the worker
// is SIGKILLed right after phase 2's first changes and started again; phase 2 runs.
//
// Report (stdout, markdown): per platform the notifications expected, received, false, missed
// and duplicated, the delay from the simulator control call to the client (p50/p95/max), and
// PASS/FAIL against 0 false, 0 missed, 0 duplicated on every platform (nothing expected or
// nothing received on a platform fails too); per scenario the same, with what a failing one
// waits on (issue 24's cooldown and pf_01 work), and every false, missed or duplicated
// notification with its step. Progress on stderr. Everything started is stopped at the end, on
// failure and on Ctrl-C. About 3 minutes on 2 cores.
//
// Knobs (bench/alerts/config.ts): BENCH_PLATFORMS (pf_01,pf_03; default all), BENCH_INTERVAL_MS
// (1000), BENCH_COOLDOWN_S (10 intervals), BENCH_KILL (0: none), BENCH_KILL_DOWN_MS (2000),
// BENCH_STEP_TIMEOUT_MS (30000), BENCH_SCRAPE_TIMEOUT_MS (9000: a hanging page fails in 3 s),
// BENCH_BASELINE_TIMEOUT_MS (120000); also DATABASE_URL, CHROMIUM_PATH, MONITOR_SHARDS_PER_PLATFORM.
import { PLATFORMS } from '../src/platform/registry.ts';
import { alertsCommandLine, alertsConfig, stackConfig } from './alerts/config.ts';
import { createAccounts, createItems, waitForBaselines } from './alerts/items.ts';
import { expectations, notificationKey } from './alerts/model.ts';
import { alertPlatform, checkEventId } from './alerts/platforms.ts';
import { renderReport } from './alerts/report.ts';
import { Inbox, Runner, type ScriptRun } from './alerts/runner.ts';
import { allSteps, scriptsFor, type Script } from './alerts/scenarios.ts';
import { score } from './alerts/score.ts';
import { SimControl } from './alerts/sim.ts';
import { machineLine } from './monitors/config.ts';
import { Lifecycle } from './monitors/lifecycle.ts';
import { startStack } from './monitors/stack.ts';
import { StreamClients } from './monitors/stream-clients.ts';
import { inParallel, progress, setProgressLabel, sleep } from './monitors/support.ts';

setProgressLabel('bench:alerts');
const life = new Lifecycle();

/** The scripts and what each should produce, written down before anything starts. */
function plan(cfg: ReturnType<typeof alertsConfig>): { scripts: Script[]; expectedBy: Map<Script, ReturnType<typeof expectations>> } {
  let n = 0;
  const scripts = cfg.platforms.flatMap((p) => scriptsFor(alertPlatform(p), { intervalS: cfg.intervalMs / 1000, cooldownS: cfg.cooldownS }, () => n++));
  const expectedBy = new Map<Script, ReturnType<typeof expectations>>();
  for (const s of scripts) {
    checkEventId(s.platform.platform, s.eventId, s.key, s.region);
    expectedBy.set(s, expectations(s.initial, allSteps(s), s.items, s.platform.kinds));
  }
  for (const p of cfg.platforms) {
    const mine = scripts.filter((s) => s.platform.platform === p);
    const expected = mine.reduce((t, s) => t + expectedBy.get(s)!.length, 0);
    const quiet = mine.reduce((t, s) => t + allSteps(s).filter((_, i) => !expectedBy.get(s)!.some((e) => e.step === i)).length, 0);
    // The bench's own honesty: a platform it expects nothing of could pass by counting nothing.
    if (expected < 8 || quiet < 3) throw new Error(`bench defect: ${p} has ${expected} expected notifications and ${quiet} expect-nothing steps (want ≥ 8 and ≥ 3)`);
    progress(`  ${p} (${PLATFORMS[p].sections_type}): ${mine.length} scenarios, ${expected} notifications expected, ${quiet} steps expecting nothing`);
  }
  return { scripts, expectedBy };
}

async function main(): Promise<string> {
  const cfg = alertsConfig();
  const started = performance.now();
  const date = new Date();
  const machine = machineLine();
  progress(`${cfg.platforms.length} platforms, interval ${cfg.intervalMs} ms, cooldown ${cfg.cooldownS} s${cfg.kill ? ', worker SIGKILL between the phases' : ''}; ${machine}`);
  progress('writing down the expected notifications...');
  const { scripts, expectedBy } = plan(cfg);

  const stack = await startStack(stackConfig(cfg), life, {
    databasePrefix: 'tm_bench_alerts',
    rpsSetting: '20',
    env: { SCRAPE_TIMEOUT_MS: String(cfg.scrapeTimeoutMs) },
    browser: cfg.platforms.includes('pf_01'),
  });
  const sim = new SimControl(stack.sim.url);
  progress(`putting ${scripts.length} events on the simulator, creating the accounts and connecting a WebSocket client per platform...`);
  for (const s of scripts) await sim.put(s, s.initial, {});
  const accounts = await createAccounts(stack, cfg.platforms);
  const inbox = new Inbox();
  const clients = await StreamClients.connect(stack.streamUrl, [...accounts.values()], (n, at) => inbox.add(n, at));
  life.onCleanup('stream clients', async () => clients.close());
  life.check();

  progress('creating the items through POST /watchlist...');
  const runs: ScriptRun[] = scripts.map((script) => ({ script, items: [], expected: [], steps: allSteps(script).map((step, index) => ({ step, index, putAt: null, hitsAtPut: 0, seen: false, lateMs: null })), startedAt: null }));
  await inParallel(runs, 4, async (r) => {
    life.check();
    r.items = await createItems(stack, r.script, accounts.get(r.script.platform.platform)!);
    const ids = new Map(r.items.map((i) => [i.spec.label, i.id]));
    r.expected = expectedBy.get(r.script)!.map((e) => {
      const itemId = ids.get(e.item)!;
      return { ...e, itemId, key: notificationKey(itemId, e.section, e.change_type, e.before, e.after) };
    });
  });
  const refused = runs.flatMap((r) => r.items.filter((i) => i.refused));
  if (refused.length) progress(`  ${refused.length} items created without cooldown_seconds: ${refused[0]!.refused}`);
  const active = runs.flatMap((r) => r.items.filter((i) => !i.spec.paused).map((i) => i.id));
  progress(`  ${runs.reduce((t, r) => t + r.items.length, 0)} items; waiting until the ${active.length} active ones have their baseline...`);
  const baselineSeconds = await waitForBaselines(stack, active, cfg.baselineTimeoutMs, life);

  const runner = new Runner(cfg, stack, sim, inbox, runs, life);
  const expectedTotal = runs.reduce((t, r) => t + r.expected.length, 0);
  const ticker = setInterval(() => progress(`  ${runner.stepsDone}/${runner.stepsTotal} steps done, ${inbox.arrivals.length} notifications received (${expectedTotal} expected in all)`), 10_000);
  try {
    await runner.run();
  } finally {
    clearInterval(ticker);
  }

  progress('settling: waiting for late notifications...');
  await sleep(3 * cfg.intervalMs);
  for (let i = 0, count = inbox.arrivals.length; i < 10; i++) {
    life.check();
    await sleep(2 * cfg.intervalMs);
    if (inbox.arrivals.length === count) break;
    count = inbox.arrivals.length;
  }
  const result = score(runs, inbox.arrivals, cfg.intervalMs, runner.kill);
  return renderReport({
    cfg,
    command: alertsCommandLine(),
    machine,
    date,
    score: result,
    kill: runner.kill,
    baselineSeconds,
    stepsTotal: runner.stepsTotal,
    runtimeSeconds: (performance.now() - started) / 1000,
    stream: { reconnects: clients.reconnects, closes: clients.closes },
    crashes: stack.worker.crashes,
    logCounts: stack.logCounts,
    walls: await stack.meter.wallsAll(),
  });
}

life.finish(main());
