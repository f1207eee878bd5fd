// `npm run rehearsal` (issue 26): docker-compose.yml's production topology run as processes on
// this machine, all on the loopback, under a load that records its own ground truth, through a
// schedule of single faults; one report line per fault and the totals, markdown on stdout, and
// progress lines with the elapsed time on stderr. Knobs: rehearsal/config.ts. Everything started
// is stopped at the end, on failure and on Ctrl-C (bench/monitors/lifecycle.ts, whose janitor
// also covers a SIGKILL of this process).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import { machineLine } from '../bench/monitors/config.ts';
import { Lifecycle } from '../bench/monitors/lifecycle.ts';
import { progress, setProgressLabel, sleep } from '../bench/monitors/support.ts';
import { commandLine, rehearsalConfig } from './config.ts';
import { fmtElapsed, runSchedule } from './faults.ts';
import { Load } from './load.ts';
import { NGINX_BINARY } from './nginx.ts';
import { renderReport } from './report.ts';
import { TOXIPROXY } from './toxiproxy.ts';
import { startTopology, TemporalProductionServer, type Topology } from './topology.ts';
import { checkTruth, timeline } from './truth.ts';
import { verdict } from './verdict.ts';

setProgressLabel('rehearsal');
const life = new Lifecycle();
const cfg = rehearsalConfig();
const runStarted = Date.now();
const machine = machineLine();
// The processes run the files as they are at their start, which may be ahead of the last commit.
const codeAtStart = (() => {
  const git = (args: string[]) => spawnSync('git', args, { encoding: 'utf8' }).stdout?.trimEnd() ?? '';
  const changed = git(['status', '--porcelain', '--', '.', ':!rehearsal']).split('\n').filter(Boolean);
  const head = git(['rev-parse', '--short', 'HEAD']).trim();
  if (!head) return 'Code: not a git checkout';
  return `Code: commit ${head}${changed.length ? ` and ${changed.length} files changed and not committed at the start (the run tested the working tree): ${changed.map((l) => l.slice(3)).join(', ')}` : ''}`;
})();

async function waitChecked(ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    life.check();
    await sleep(Math.min(1_000, until - Date.now()));
  }
}

/** After the load: until no credit reservation is left open (the sweeper's work), at most `maxMs`. */
async function waitForSettledCredits(topo: Topology, maxMs: number): Promise<number> {
  const deadline = Date.now() + maxMs;
  let open = 0;
  while (Date.now() < deadline) {
    life.check();
    const row = (await topo.db('credit_ledger').where({ state: 'reserved' }).count<{ n: string }[]>('* as n'))[0];
    open = Number(row?.n ?? 0);
    if (open === 0) return 0;
    await sleep(2_000);
  }
  return open;
}

function describe(topo: Topology): string[] {
  // nginx -v writes its version to stderr.
  const nginxVersion = spawnSync(NGINX_BINARY, ['-v'], { encoding: 'utf8' }).stderr.trim() || 'nginx';
  const port = (n: { env: NodeJS.ProcessEnv }, v: string) => n.env[v];
  return [
    codeAtStart,
    `nginx (${nginxVersion.replace('nginx version: ', '')}) from deploy/nginx.conf at ${topo.publicUrl}: gateways ${topo.gateways.map((g) => `:${port(g, 'PORT')}`).join(', ')}, stream nodes ${topo.streams.map((s) => `:${port(s, 'STREAM_PORT')}`).join(', ')}`,
    `${topo.gateways.length} gateways (src/main.ts, RUN_WORKER/RUN_STREAM/RUN_SIMULATOR/DEMO_ACCOUNT false), ${topo.streams.length} stream nodes (src/stream/main.ts), workers ${topo.workers.map((w) => `${w.name} (WORKER_ROLE=${w.role})`).join(', ')} (temporal/worker-main.ts)`,
    `PostgreSQL: ${topo.pg.embedded ? 'an embedded cluster of the run (restartable), roles ticket_market_app (owner) and ticket_market_scraper (the scrape worker, db/scraper-grants.ts)' : "a scratch database on DATABASE_URL's server, one role for every process"}; Temporal: ${topo.temporal.description}, ${topo.temporal.address}`,
    `Toxiproxy ${TOXIPROXY.version}: ${[...topo.proxies.values()].reduce((n, p) => n + 1 + (p.temporal ? 1 : 0), 0) + (topo.temporal instanceof TemporalProductionServer ? 1 : 0)} proxies, one per (process, upstream)`,
    'Billing: the local provider (docker-compose bills through Stripe; the run has no Stripe). The simulator and the webhook receivers run in the rehearsal process.',
    ...(cfg.breakWith ? [`**A deliberately broken build** (REHEARSAL_BREAK=${cfg.breakWith}): the workers run with MONITOR_TAKEOVER_GUARD=false; the verdict must fail`] : []),
  ];
}

let exitCode = 0;
try {
  progress(
    `${cfg.faults.length} faults (${cfg.faults.join(', ')}), ${(cfg.settleMs / 1000).toFixed(0)} s of load after each, budget ${cfg.budgetMs / 60_000} min; ${machine}`,
  );
  const topo = await startTopology(cfg, life, progress);
  const load = new Load(topo, cfg, progress);
  life.onCleanup('load (stream clients, webhook receivers)', () => load.close());
  await load.setUp();
  const setupMs = Date.now() - runStarted;
  load.start();
  progress(
    `load running (${cfg.paidPerSecond} paid requests/s, a scrape every ${cfg.scrapeEveryMs / 1000} s, ${cfg.changesPerSecond} changes/s, a watchlist write every ${cfg.churnEveryMs / 1000} s); ` +
      `${(cfg.warmupMs / 1000).toFixed(0)} s without a fault first (set-up took ${fmtElapsed(setupMs)})`,
  );
  await waitChecked(cfg.warmupMs);
  const faults = await runSchedule(topo, cfg, load, life, progress, runStarted);
  progress(`schedule done (elapsed ${fmtElapsed(Date.now() - runStarted)}); stopping the load`);
  await load.stop();
  progress(`final wait: at least ${(cfg.finalMs / 1000).toFixed(0)} s for notifications and deliveries, then until no credit reservation is open (the sweeper releases orphans)`);
  await waitChecked(cfg.finalMs);
  const open = await waitForSettledCredits(topo, 120_000);
  if (open) progress(`  ${open} reservations still open after 120 s`);
  progress(`reading the ground truth against the log, the ledger, the clients and the receivers (elapsed ${fmtElapsed(Date.now() - runStarted)})...`);
  const windows = timeline(load, faults);
  const { perWindow, totals } = await checkTruth(topo, cfg, load, windows);
  if (process.env.REHEARSAL_DUMP) {
    // Everything the load recorded, for a second look at a figure (not read by anything here).
    const dump = {
      windows,
      changes: load.changes,
      items: [...load.items.values()],
      requests: load.requests,
      arrivals: load.accounts.map((a) => ({ account: a.id, arrivals: Object.fromEntries(a.stream.arrivals), disconnects: a.stream.disconnects })),
      simRequests: topo.sim.requests.since(load.startedAt, 'pf_03'),
    };
    await fs.writeFile(process.env.REHEARSAL_DUMP, JSON.stringify(dump));
    progress(`ground truth written to ${process.env.REHEARSAL_DUMP}`);
  }
  const totalMs = Date.now() - runStarted;
  const checks = verdict(perWindow, totals, { withinBudget: totalMs <= cfg.budgetMs, budgetMs: cfg.budgetMs });
  process.stdout.write(
    `${renderReport(
      {
        cfg,
        command: commandLine(),
        machine,
        topology: describe(topo),
        startedAt: runStarted,
        setupMs,
        totalMs,
        load: { requests: load.requests.length, changes: load.changes.length, items: load.items.size, churned: [...load.items.values()].filter((i) => !i.standing).length },
      },
      perWindow,
      totals,
      checks,
    )}\n`,
  );
  progress(`done in ${fmtElapsed(totalMs)}: ${totalMs <= cfg.budgetMs ? 'within' : 'OVER'} the ${cfg.budgetMs / 60_000}-minute budget`);
  const failed = checks.filter((c) => !c.ok);
  progress(failed.length === 0 ? `verdict: PASS (${checks.length} checks)` : `verdict: FAIL, ${failed.length} of ${checks.length} checks not met: ${failed.map((c) => c.name).join('; ')}`);
  if (failed.length) exitCode = 1;
} catch (err) {
  exitCode = 1;
  progress(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
} finally {
  progress('cleaning up...');
  await life.cleanup();
}
process.exit(exitCode);
