// `npm run bench:fairness`: issue 25's fair polling, measured at the platform. Account A watches
// BENCH_BIG_TARGETS (400) slow pf_06 targets (each answers after BENCH_SLOW_MS, 2 s), account B
// BENCH_SMALL_TARGETS (3) fast ones on the same platform, SCRAPE_RPS_PER_PLATFORM=pf_06=BENCH_RPS
// (20) over the default 4 shards, a BENCH_INTERVAL_MS (1 s) interval. After BENCH_WARMUP_MS, the
// simulator's own request log over BENCH_WINDOW_MS (20 s) gives B's longest gap between two
// requests for one of its targets, B's and A's requests a second.
//
// Three runs side by side, each on its own fresh parts (bench/fairness/run.ts, the parts of
// bench:monitors): first come, first served (MONITOR_POLL_ORDER=due, the order before issue 25),
// the fair share (MONITOR_POLL_ORDER=fair, the default), then the fair share with A's first
// BENCH_MARKED_TARGETS (10) items at priority 100 and its others at 0 (issue 40). Every run
// figures those 10 targets apart. Report (markdown) on stdout, with PASS/FAIL against the
// targets: B's targets asked for at least every 2 s, A getting at least 85% of what B leaves of
// the budget (both in the fair runs), and with priorities A's marked targets asked for at least
// every interval + BENCH_SLOW_MS + 1 s while B's figures hold. Exits 1 when one fails. About 3
// minutes.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { FairnessFigures } from '../test/support/fairness.ts';
import { benchCommandLine, machineLine } from './monitors/config.ts';
import { progress, setProgressLabel } from './monitors/support.ts';
import { markedBoundMs, markedMet, restMet, smallGapMet } from './fairness/verdicts.ts';

setProgressLabel('bench:fairness');
const RUN = fileURLToPath(new URL('./fairness/run.ts', import.meta.url));

interface RunResult {
  order: 'due' | 'fair';
  markedPriority: number;
  intervalMs: number;
  rps: number;
  shards: number;
  figures: FairnessFigures;
}

function runOne(order: 'due' | 'fair', markedPriority = 0): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, BENCH_FAIRNESS_ORDER: order, BENCH_FAIRNESS_MARKED_PRIORITY: String(markedPriority) };
    const child = spawn(process.execPath, ['--import', 'tsx', RUN], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !line.startsWith('{')) reject(new Error(`the ${order} run exited ${code}: ${out.slice(-2_000)}`));
      else resolve({ ...(JSON.parse(line) as Omit<RunResult, 'markedPriority'>), markedPriority });
    });
  });
}

const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const r = (v: number) => v.toFixed(1);

const machine = machineLine();
const date = new Date();
progress(`three runs: first come first served, fair, fair with priorities; ${machine}`);
const due = await runOne('due');
const fair = await runOne('fair');
const prio = await runOne('fair', 100);
const slowMs = Number(process.env.BENCH_SLOW_MS ?? 2_000);
const markedBound = markedBoundMs(prio, slowMs);
const gapMet = smallGapMet(fair) && smallGapMet(prio);
const restGot = restMet(fair) && restMet(prio);
const markedKept = markedMet(prio, slowMs);
const f = fair.figures;
const d = due.figures;
const p = prio.figures;
const lines = [
  `## bench:fairness, ${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`,
  '',
  `\`${benchCommandLine('bench:fairness', process.env, ['MONITOR_SHARDS_PER_PLATFORM'])}\``,
  '',
  `${machine}. Account A: ${f.big.targets} pf_06 targets answering after ${process.env.BENCH_SLOW_MS ?? 2_000} ms; account B: ${f.small.targets} fast ones; ` +
    `SCRAPE_RPS_PER_PLATFORM=pf_06=${fair.rps} over ${fair.shards} shards, a ${fair.intervalMs} ms interval; a ${r(f.windowS)} s window read from the simulator's request log.`,
  '',
  `| figure | first come, first served (\`MONITOR_POLL_ORDER=due\`) | fair (\`fair\`, the default) | fair, ${p.marked.targets} of A's items at priority ${p.marked.priority} | ratio fair / due |`,
  '|---|---:|---:|---:|---:|',
  `| **B's longest gap** between two requests for one of its targets (target: at most ${s(2 * fair.intervalMs)}) | ${s(d.small.maxGapMs)} | **${s(f.small.maxGapMs)}** | **${s(p.small.maxGapMs)}** | ${(d.small.maxGapMs / f.small.maxGapMs).toFixed(1)}x |`,
  `| B's requests/s (its demand: ${r((f.small.targets * 1000) / fair.intervalMs)}) | ${r(d.small.requestsPerS)} | ${r(f.small.requestsPerS)} | ${r(p.small.requestsPerS)} | |`,
  `| **A's requests/s** (target: at least 85% of the ${fair.rps} less B's) | ${r(d.big.requestsPerS)} | **${r(f.big.requestsPerS)}** | **${r(p.big.requestsPerS)}** | |`,
  `| A's targets asked for in the window (of ${f.big.targets}) | ${d.big.targetsAsked} | ${f.big.targetsAsked} | ${p.big.targetsAsked} | |`,
  `| **longest gap of A's first ${p.marked.targets} targets** (target with priorities: at most ${s(markedBound)}, the interval + their ${s(slowMs)} answer + 1 s) | ${s(d.marked.maxGapMs)} | ${s(f.marked.maxGapMs)} | **${s(p.marked.maxGapMs)}** | |`,
  `| requests/s of A's first ${p.marked.targets} targets | ${r(d.marked.requestsPerS)} | ${r(f.marked.requestsPerS)} | ${r(p.marked.requestsPerS)} | |`,
  '',
  `Targets: B's gap ${gapMet ? 'PASS' : 'FAIL'}; A gets the rest ${restGot ? 'PASS' : 'FAIL'} (both fair runs); A's prioritised targets keep their pace ${markedKept ? 'PASS' : 'FAIL'}.`,
  `B's gaps per target (fair): ${f.small.gapsMs.map(s).join(', ')}; (with priorities): ${p.small.gapsMs.map(s).join(', ')}; (first come, first served): ${d.small.gapsMs.map(s).join(', ')}.`,
];
process.stdout.write(`${lines.join('\n')}\n`);
process.exit(gapMet && restGot && markedKept ? 0 : 1);
