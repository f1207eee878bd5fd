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
// cooldown (two changes held and sent as one at the end; a rise after a fall; a change undone
// before the end: nothing; a hold made in phase 1 whose cooldown ends after the worker's SIGKILL:
// released once), mixed ticket kinds in one section (all but pf_07, whose offers are all resale),
// a platform incident (five targets or more, at least half the platform's, answering 404 for
// three retirement times: every item told `failing` and `recovered` once, none retired, the change
// after it notified), on pf_01 its data arms failing and recovering (kinds unknown, as the code
// reads them), and on pf_06 listings moving between its pages during reads. Phase 1 runs, every
// scenario at once; then the worker is SIGKILLed right after phase 2's first changes and started
// again; phase 2 runs.
//
// Channels (bench/alerts/channels.ts): every item is created twice, one twin naming the
// account's standard webhook (Standard Webhooks, verified by the reference library on a loopback
// endpoint), the other its Discord webhook (a loopback stand-in for Discord, the item told by the
// role it mentions); the stream hears both. Every channel is scored against the same
// expectations.
//
// Report (stdout, markdown): per platform and channel the messages expected, received, false,
// missed and duplicated, the delay from the simulator control call to the client (p50/p95/max),
// and PASS/FAIL against 0 false, 0 missed, 0 duplicated on every platform and channel (nothing
// expected or nothing received fails too; so does a webhook request whose signature does not
// verify); per scenario the same, and every false, missed or duplicated message with its channel
// and step. Progress on stderr. Everything started is stopped at the end, on failure and on
// Ctrl-C. The process exits 1 on FAIL. About 5 minutes on 2 cores.
//
// Knobs (bench/alerts/config.ts): BENCH_PLATFORMS (pf_01,pf_03; default all), BENCH_INTERVAL_MS
// (1000), BENCH_COOLDOWN_S (10 intervals), BENCH_KILL_COOLDOWN_S (120 intervals), BENCH_KILL (0:
// none), BENCH_KILL_DOWN_MS (2000), BENCH_RETIRE_AFTER_MS (8 intervals), BENCH_STEP_TIMEOUT_MS
// (30000), BENCH_SCRAPE_TIMEOUT_MS (9000: a hanging page fails in 3 s), BENCH_BASELINE_TIMEOUT_MS
// (120000); also DATABASE_URL, CHROMIUM_PATH, MONITOR_SHARDS_PER_PLATFORM.
import { PLATFORMS } from '../src/platform/registry.ts';
import { newWebhookKey } from '../src/webhooks/secret-box.ts';
import { AlertStream, Endpoints, Inbox } from './alerts/channels.ts';
import { alertsCommandLine, alertsConfig, stackConfig } from './alerts/config.ts';
import { createAccounts, createItems, waitForBaselines } from './alerts/items.ts';
import { expectations, expectedKey, incidentExpectations, type Expected } from './alerts/model.ts';
import { alertPlatform, checkEventId } from './alerts/platforms.ts';
import { renderReport } from './alerts/report.ts';
import { Runner, type ScriptRun } from './alerts/runner.ts';
import { allSteps, scriptsFor, type Script } from './alerts/scenarios.ts';
import { score } from './alerts/score.ts';
import { SimControl } from './alerts/sim.ts';
import { machineLine } from './monitors/config.ts';
import { Lifecycle } from './monitors/lifecycle.ts';
import { startStack } from './monitors/stack.ts';
import { inParallel, progress, setProgressLabel, sleep } from './monitors/support.ts';

setProgressLabel('bench:alerts');
const life = new Lifecycle();

/** The scripts and what each should produce, written down before anything starts. */
function plan(cfg: ReturnType<typeof alertsConfig>): { scripts: Script[]; expectedBy: Map<Script, Expected[]> } {
  let n = 0;
  const options = { intervalS: cfg.intervalMs / 1000, cooldownS: cfg.cooldownS, killCooldownS: cfg.killCooldownS, retireS: cfg.retireMs / 1000 };
  const scripts = cfg.platforms.flatMap((p) => scriptsFor(alertPlatform(p), options, () => n++));
  const expectedBy = new Map<Script, Expected[]>();
  for (const s of scripts) {
    checkEventId(s.platform.platform, s.eventId, s.key, s.region);
    expectedBy.set(s, expectations(s.initial, allSteps(s), s.items, s.platform.kinds, s.initialPages));
  }
  for (const p of cfg.platforms) {
    const mine = scripts.filter((s) => s.platform.platform === p);
    // The platform's incident, from every target of it (the rule counts them all).
    const incidents = incidentExpectations(mine.map((s) => ({ name: `${p} ${s.role} ${s.key}`, items: s.items, steps: allSteps(s) })));
    mine.forEach((s, i) => expectedBy.get(s)!.push(...incidents[i]!));
    if (mine.some((s) => allSteps(s).some((st) => st.behaviour === 'not_found')) && incidents.every((x) => x.length === 0)) {
      throw new Error(`bench defect: ${p}'s 404s make no platform incident by the documented rule`);
    }
    const expected = mine.reduce((t, s) => t + expectedBy.get(s)!.length, 0);
    const quiet = mine.reduce((t, s) => t + allSteps(s).filter((_, i) => !expectedBy.get(s)!.some((e) => e.step === i)).length, 0);
    // The bench's own honesty: a platform it expects nothing of could pass by counting nothing.
    if (expected < 8 || quiet < 3) throw new Error(`bench defect: ${p} has ${expected} expected messages and ${quiet} expect-nothing steps (want ≥ 8 and ≥ 3)`);
    progress(`  ${p} (${PLATFORMS[p].sections_type}): ${mine.length} scenarios, ${expected} messages expected per channel, ${quiet} steps expecting nothing`);
  }
  return { scripts, expectedBy };
}

async function main(): Promise<string> {
  const cfg = alertsConfig();
  const started = performance.now();
  const date = new Date();
  const machine = machineLine();
  progress(
    `${cfg.platforms.length} platforms, interval ${cfg.intervalMs} ms, cooldowns ${cfg.cooldownS} s and ${cfg.killCooldownS} s, retirement after ${cfg.retireMs} ms` +
      `${cfg.kill ? ', worker SIGKILL between the phases' : ''}; ${machine}`,
  );
  progress('writing down the expected messages...');
  const { scripts, expectedBy } = plan(cfg);

  const inbox = new Inbox();
  const endpoints = await Endpoints.start(inbox);
  life.onCleanup('webhook endpoints', () => endpoints.close());
  const stack = await startStack(stackConfig(cfg), life, {
    databasePrefix: 'tm_bench_alerts',
    // Every platform's own budget: pf_01's incident targets ask three times per 404 poll.
    rpsSetting: '40',
    env: {
      SCRAPE_TIMEOUT_MS: String(cfg.scrapeTimeoutMs),
      MONITOR_RETIRE_AFTER_MS: String(cfg.retireMs),
      // The gateway seals the webhooks' URLs and secrets, the worker's dispatcher opens them: one key.
      WEBHOOK_SECRET_KEY: newWebhookKey(),
      // The endpoints are on loopback (as in the tests), and the Discord one is not discord.com.
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    },
    browser: cfg.platforms.includes('pf_01'),
  });
  const sim = new SimControl(stack.sim.url);
  progress(`putting ${scripts.length} events on the simulator, creating the accounts and their webhooks, and connecting a WebSocket client per platform...`);
  for (const s of scripts) await sim.put(s, s.initial, s.initialPages ?? {});
  const accounts = await createAccounts(stack, cfg.platforms, endpoints);
  const stream = await AlertStream.connect(stack.streamUrl, [...accounts.values()], inbox);
  life.onCleanup('stream clients', async () => stream.close());
  life.check();

  progress('creating the items through POST /watchlist (a twin per webhook)...');
  const runs: ScriptRun[] = scripts.map((script) => ({
    script,
    items: [],
    expected: [],
    steps: allSteps(script).map((step, index) => ({ step, index, putAt: null, hitsAtPut: 0, seen: false, seenAt: null, lateMs: null, problem: null })),
    startedAt: null,
  }));
  await inParallel(runs, 4, async (r) => {
    life.check();
    r.items = await createItems(stack, r.script, accounts.get(r.script.platform.platform)!, endpoints);
    r.expected = expectedBy.get(r.script)!.flatMap((e) =>
      r.items.filter((i) => i.spec.label === e.item).map((i) => ({ ...e, itemId: i.id, hook: i.hook, key: expectedKey(i.id, e) })),
    );
  });
  const refused = runs.flatMap((r) => r.items.filter((i) => i.refused));
  if (refused.length) progress(`  ${refused.length} items created without cooldown_seconds: ${refused[0]!.refused}`);
  const active = runs.flatMap((r) => r.items.filter((i) => !i.spec.paused).map((i) => i.id));
  progress(`  ${runs.reduce((t, r) => t + r.items.length, 0)} items; waiting until the ${active.length} active ones have their baseline...`);
  const baselineSeconds = await waitForBaselines(stack, active, cfg.baselineTimeoutMs, life);

  const runner = new Runner(cfg, stack, sim, inbox, runs, life);
  const expectedTotal = runs.reduce((t, r) => t + r.expected.length, 0);
  const ticker = setInterval(
    () => progress(`  ${runner.stepsDone}/${runner.stepsTotal} steps done; received ${inbox.total('stream')} on the stream, ${inbox.total('webhook')} by webhook, ${inbox.total('discord')} on Discord (${expectedTotal} expected on the stream, half of them by each webhook kind)`),
    10_000,
  );
  try {
    await runner.run();
  } finally {
    clearInterval(ticker);
  }

  progress('settling: waiting for late messages and for every webhook delivery to be done...');
  await sleep(3 * cfg.intervalMs);
  const pending = async () => Number(((await stack.db('webhook_deliveries').where({ state: 'pending' }).count({ n: '*' }).first()) as { n: string | number }).n);
  for (let i = 0, count = inbox.total(); i < 30; i++) {
    life.check();
    await sleep(2 * cfg.intervalMs);
    if (inbox.total() === count && (await pending()) === 0) break;
    count = inbox.total();
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
    stream: { reconnects: stream.reconnects, closes: stream.closes },
    endpoints: { unverified: endpoints.unverified, unreadable: endpoints.unreadable, pending: await pending() },
    crashes: stack.worker.crashes,
    logCounts: stack.logCounts,
    walls: await stack.meter.wallsAll(),
  });
}

life.finish(main());
