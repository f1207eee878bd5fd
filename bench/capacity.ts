// `npm run bench:capacity` (issue 40): one worker driven far past what the simulator serves, to
// find the first part of the service that saturates on this machine. The stack is bench:monitors'
// (bench/monitors/stack.ts: a scratch database, a Temporal dev server, the worker as a child
// process, the gateway and a stream node in this process), with the pollers' pages synthetic
// (SCRAPE_SYNTHETIC_CHANGE_MS, src/scrapers/synthetic-pages.ts: pf_03's page rendered in the
// worker, no request), so a poll costs everything a real one does but the network and the
// platform. BENCH_TARGETS targets, one item each, created through POST /watchlist; then, for each
// interval of BENCH_STEPS_MS (the worker restarted with it), a warm-up and a measured window:
//   - polls/s made against polls/s asked for (targets / interval), notifications/s, lateness;
//   - CPU by part (worker, Temporal, PostgreSQL, this process), in % of one core and per poll;
//   - SQL statements the worker sent per poll (its db_statements_total), PostgreSQL's CPU for the
//     worker's sessions.
// Each target's stock moves once per BENCH_CHANGE_PERIOD_MS at every step (targets / period
// changes a second, whatever the interval), and the first interval runs once more at the end with
// no change: the difference, per notification, is a notification's cost. The stock increases the
// schedule made in each window (what notifies; the ground truth, computed by this bench from the
// schedule, not read from the service) are shown beside the notifications written.
// The report (stdout, markdown) names the first step served below 95% of its demand and what was
// busiest then. Exit 1 when a verdict fails (bench/capacity/verdicts.ts).
import { atMostText } from './monitors/prom.ts';
import { between, machineShare, percent, type Window } from './monitors/meter.ts';
import { benchCommandLine, machineLine, stackOnlyConfig, type BenchConfig } from './monitors/config.ts';
import { Lifecycle } from './monitors/lifecycle.ts';
import { createItems, setUp, waitForBaselines } from './monitors/load.ts';
import { waitWindow } from './monitors/soak.ts';
import { startStack, type Stack } from './monitors/stack.ts';
import { envNumber, progress } from './monitors/support.ts';
import { syntheticChanges } from '../src/scrapers/synthetic-pages.ts';
import { countedSomething, firstServed, firstShort, FRESH_POLLS, notifiedWhatChanged, served, type StepFigures } from './capacity/verdicts.ts';

const life = new Lifecycle();

/** No change at all: the synthetic stock moves once a day. */
const NO_CHANGE_MS = 86_400_000;

interface CapacityConfig {
  targets: number;
  stepsMs: number[];
  changePeriodMs: number;
  warmMs: number;
  windowMs: number;
}

function capacityConfig(): CapacityConfig {
  const stepsMs = (process.env.BENCH_STEPS_MS ?? '5000,2500,1250,625,312')
    .split(',')
    .map((s) => Number(s.trim()))
    .filter((n) => Number.isFinite(n));
  if (stepsMs.length === 0 || stepsMs.some((n) => !Number.isInteger(n) || n < 200)) throw new Error(`BENCH_STEPS_MS is a list of intervals of at least 200 ms, got ${process.env.BENCH_STEPS_MS}`);
  return {
    targets: Math.max(1, Math.round(envNumber('BENCH_TARGETS', 5_000))),
    stepsMs,
    changePeriodMs: Math.max(1_000, Math.round(envNumber('BENCH_CHANGE_PERIOD_MS', 100_000))),
    warmMs: envNumber('BENCH_WARM_MS', 25_000),
    windowMs: envNumber('BENCH_WINDOW_MS', 15_000),
  };
}

/** bench:monitors' stack for this run: one item per pf_03 target, the budget far above any step. */
function stackConfig(c: CapacityConfig): BenchConfig {
  return stackOnlyConfig({
    temporal: process.env.BENCH_TEMPORAL === 'server' ? 'server' : 'dev',
    items: c.targets,
    targets: c.targets,
    accounts: Math.ceil(c.targets / 900),
    concurrency: 16,
    intervalMs: c.stepsMs[0]!,
    walls: false,
    // No pacing of ours may be what saturates: ten times the top step's demand.
    rps: Math.ceil((10 * c.targets * 1000) / Math.min(...c.stepsMs)),
  });
}

interface Step extends StepFigures {
  label: string;
  window: Window;
  latenessP99: { above: number; atMost: number } | null;
  outcomes: Record<string, number>;
  /** Stock moves/s the synthetic schedule made in the window, falls included (`scheduled` counts the increases: what notifies). */
  moves: number;
  /** Notifications/s the worker says it wrote (monitor_notifications_total), beside those counted in the log. */
  notified: number;
}

async function measureStep(stack: Stack, c: CapacityConfig, keys: readonly string[], intervalMs: number, changeMs: number, label: string): Promise<Step> {
  progress(`${label}: the worker restarted with MONITOR_INTERVAL_MS=${intervalMs}, SCRAPE_SYNTHETIC_CHANGE_MS=${changeMs}; warming ${c.warmMs / 1000} s...`);
  await stack.worker.restart({ MONITOR_INTERVAL_MS: String(intervalMs), SCRAPE_SYNTHETIC_CHANGE_MS: String(changeMs) });
  await waitWindow(c.warmMs, life);
  const r0 = await stack.meter.read();
  await waitWindow(c.windowMs, life);
  const w = between(label, r0, await stack.meter.read());
  const m = w.metrics;
  const polls = (m?.sum('monitor_polls_total') ?? 0) / w.seconds;
  const lateness = m?.quantile('monitor_poll_lateness_seconds', 0.99) ?? null;
  const step: Step = {
    label,
    intervalMs,
    demanded: (c.targets * 1000) / intervalMs,
    polls,
    notifications: w.notifications / w.seconds,
    statements: (m?.sum('db_statements_total') ?? 0) / w.seconds,
    cpu: { worker: percent(w, 'worker'), temporal: percent(w, 'temporal'), postgres: percent(w, 'postgres'), bench: percent(w, 'bench') },
    window: w,
    latenessP99: lateness,
    outcomes: m?.by('monitor_polls_total', 'outcome') ?? {},
    notified: (m?.sum('monitor_notifications_total') ?? 0) / w.seconds,
    changePeriodMs: changeMs,
    scheduled: 0,
    moves: 0,
  };
  if (changeMs !== NO_CHANGE_MS) {
    for (const key of keys) {
      const made = syntheticChanges(key, changeMs, r0.wall, r0.wall + 1000 * w.seconds);
      step.scheduled += made.increases / w.seconds;
      step.moves += made.moves / w.seconds;
    }
  }
  progress(
    `  ${step.polls.toFixed(0)} polls/s of ${step.demanded.toFixed(0)} asked, ${step.notifications.toFixed(0)} notifications/s in the log (${step.notified.toFixed(0)}/s by the worker's count; the schedule made ${step.scheduled.toFixed(0)} stock increases/s of ${step.moves.toFixed(0)} moves), ${step.statements.toFixed(0)} statements/s; ` +
      `CPU % of a core: worker ${step.cpu.worker.toFixed(0)}, Temporal ${step.cpu.temporal.toFixed(0)}, PostgreSQL ${step.cpu.postgres.toFixed(0)}, this process ${step.cpu.bench.toFixed(0)}; machine ${machineShare(w).busyPercent.toFixed(0)} %`,
  );
  return step;
}

const ms = (cpuSeconds: number, count: number) => (count > 0 ? ((1000 * cpuSeconds) / count).toFixed(2) : '-');

function report(c: CapacityConfig, steps: Step[], quiet: Step, machine: string, date: Date): string {
  const out: string[] = [];
  out.push(`## bench:capacity, ${date.toISOString()}`, '');
  out.push(`\`${benchCommandLine('bench:capacity', process.env, [])}\``, '');
  out.push(`- machine: ${machine}`);
  out.push(`- ${c.targets} pf_03 targets, one item each; synthetic pages (no request); each step: the worker restarted, ${c.warmMs / 1000} s warm-up, ${c.windowMs / 1000} s measured`);
  out.push(`- changes: each target's stock moves once per ${c.changePeriodMs / 1000} s at every step; the first interval runs again at the end with none, for a notification's cost`, '');
  out.push("| interval | polls/s asked | polls/s made | served | notifications/s (the schedule's stock increases/s) | p99 lateness | statements per poll | worker | Temporal | PostgreSQL | this process | machine busy |");
  out.push('|---:|---:|---:|:--:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const s of [quiet, ...steps]) {
    const share = machineShare(s.window);
    out.push(
      `| ${s.intervalMs} ms${s === quiet ? ' (no change)' : ''} | ${s.demanded.toFixed(0)} | ${s.polls.toFixed(0)} | ${served(s) ? 'yes' : '**no**'} | ${s.notifications.toFixed(0)} (${s.scheduled.toFixed(0)}) | ${s.latenessP99 === null ? '-' : atMostText(s.latenessP99)} | ${(s.statements / Math.max(1e-9, s.polls)).toFixed(2)} | ` +
        `${s.cpu.worker.toFixed(0)} % | ${s.cpu.temporal.toFixed(0)} % | ${s.cpu.postgres.toFixed(0)} % | ${s.cpu.bench.toFixed(0)} % | ${share.busyPercent.toFixed(0)} % of ${share.cores * 100} % |`,
    );
  }
  out.push('', '**CPU ms per poll, by part** (each step\'s CPU over its polls; notifications included at the step\'s rate)', '');
  out.push('| interval | worker | Temporal | PostgreSQL (all) | PostgreSQL: worker sessions | outcomes |');
  out.push('|---:|---:|---:|---:|---:|---|');
  for (const s of [quiet, ...steps]) {
    const n = s.polls * s.window.seconds;
    out.push(
      `| ${s.intervalMs} ms${s === quiet ? ' (no change)' : ''} | ${ms(s.window.cpu.worker, n)} | ${ms(s.window.cpu.temporal, n)} | ${ms(s.window.cpu.postgres, n)} | ${ms(s.window.pg.worker, n)} | ${Object.entries(s.outcomes)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')} |`,
    );
  }
  const first = steps[0]!;
  const notes = first.notifications * first.window.seconds;
  const perPoll = (st: Step, part: 'worker' | 'temporal' | 'postgres') => st.window.cpu[part] / Math.max(1, st.polls * st.window.seconds);
  out.push('', `**A notification's cost** (the first interval with changes against the same without, per notification: ${notes.toFixed(0)} notifications)`, '');
  for (const part of ['worker', 'temporal', 'postgres'] as const) {
    const extra = (perPoll(first, part) - perPoll(quiet, part)) * first.polls * first.window.seconds;
    out.push(`- ${part}: ${notes > 0 ? ((1000 * extra) / notes).toFixed(2) : '-'} ms`);
  }
  const stQuiet = quiet.statements / Math.max(1e-9, quiet.polls);
  const stFirst = first.statements / Math.max(1e-9, first.polls);
  out.push(`- statements: ${notes > 0 ? (((stFirst - stQuiet) * first.polls * first.window.seconds) / notes).toFixed(2) : '-'} per notification (${stQuiet.toFixed(2)} per poll with none)`);
  const short = firstShort(steps) as Step | null;
  out.push('', '### Verdicts', '');
  const verdicts = [
    { name: 'every step counted polls, statements and worker CPU', met: countedSomething([quiet, ...steps]) },
    { name: `the first step (${first.intervalMs} ms) was served (at least 95 % of its polls)`, met: firstServed(steps) },
    {
      name: `every step that polled each target ${FRESH_POLLS} times a change period, served or not, notified within 20 % (and 5/s) of the stock increases the schedule made (the bench's ground truth)`,
      met: notifiedWhatChanged(steps),
    },
  ];
  for (const v of verdicts) out.push(`- ${v.name}: ${v.met ? 'PASS' : '**FAIL**'}`);
  out.push(
    '',
    short
      ? `**First short step: ${short.intervalMs} ms**, ${short.polls.toFixed(0)} of ${short.demanded.toFixed(0)} polls/s; busiest then: ${Object.entries(short.cpu)
          .sort((a, b) => b[1] - a[1])
          .map(([k, v]) => `${k} ${v.toFixed(0)} %`)
          .join(', ')}; the machine ${machineShare(short.window).busyPercent.toFixed(0)} % of ${machineShare(short.window).cores * 100} %.`
      : '**Every step was served**: the top step did not saturate anything; add a shorter interval to BENCH_STEPS_MS.',
  );
  if (!verdicts.every((v) => v.met)) process.exitCode = 1;
  return out.join('\n');
}

async function main(): Promise<string> {
  const c = capacityConfig();
  const machine = machineLine();
  const date = new Date();
  progress(`${c.targets} targets, steps ${c.stepsMs.join(', ')} ms, synthetic pages; ${machine}`);
  const bench = stackConfig(c);
  const stack = await startStack(bench, life, { databasePrefix: 'tm_bench_capacity', env: { SCRAPE_SYNTHETIC_CHANGE_MS: String(c.changePeriodMs) } });
  const { targets, accounts } = await setUp(bench, stack);
  const create = await createItems(bench, stack, targets, accounts, life);
  await waitForBaselines(bench, stack, create, life);
  const keys = targets.map((t) => t.key);
  const steps: Step[] = [];
  for (const [i, intervalMs] of c.stepsMs.entries()) {
    life.check();
    steps.push(await measureStep(stack, c, keys, intervalMs, c.changePeriodMs, `step ${i + 1}: ${intervalMs} ms`));
  }
  const quiet = await measureStep(stack, c, keys, c.stepsMs[0]!, NO_CHANGE_MS, `last step: ${c.stepsMs[0]} ms, no change`);
  return report(c, steps, quiet, machine, date);
}

life.finish(main());
