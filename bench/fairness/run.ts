// One run of `npm run bench:fairness` (bench/fairness.ts starts one per poll order, each in its
// own process, so each gets its own parts and its own cleanup): the real parts of
// bench:monitors (bench/monitors/stack.ts: a scratch database, a Temporal dev server, the
// simulator in its own process, the worker as a child process, the gateway in this one), the
// worker told MONITOR_POLL_ORDER=BENCH_FAIRNESS_ORDER, then issue 25's two-account scenario
// (test/support/fairness.ts), A's first BENCH_MARKED_TARGETS items created with priority
// BENCH_FAIRNESS_MARKED_PRIORITY. Prints its figures as one JSON line on stdout; progress on stderr.
import { runFairness } from '../../test/support/fairness.ts';
import { benchConfig } from '../monitors/config.ts';
import { Lifecycle } from '../monitors/lifecycle.ts';
import { startStack } from '../monitors/stack.ts';
import { envNumber, progress, setProgressLabel } from '../monitors/support.ts';

const order = process.env.BENCH_FAIRNESS_ORDER === 'due' ? 'due' : 'fair';
/** The priority of A's first BENCH_MARKED_TARGETS items (0: the same as the rest). */
const markedPriority = envNumber('BENCH_FAIRNESS_MARKED_PRIORITY', 0);
setProgressLabel(`bench:fairness ${order}${markedPriority ? ', priorities' : ''}`);
const life = new Lifecycle();
const intervalMs = envNumber('BENCH_INTERVAL_MS', 1_000);
const rps = envNumber('BENCH_RPS', 20);

try {
  const stack = await startStack({ ...benchConfig(), intervalMs, rps }, life, {
    databasePrefix: 'tm_bench_fairness',
    rpsSetting: `pf_06=${rps}`,
    env: { MONITOR_POLL_ORDER: order, MONITOR_INTERVAL_MS: String(intervalMs) },
  });
  const figures = await runFairness(
    { simUrl: stack.sim.url, gatewayUrl: stack.gatewayUrl, db: stack.db },
    {
      bigTargets: envNumber('BENCH_BIG_TARGETS', 400),
      smallTargets: envNumber('BENCH_SMALL_TARGETS', 3),
      slowMs: envNumber('BENCH_SLOW_MS', 2_000),
      warmupMs: envNumber('BENCH_WARMUP_MS', 4_000),
      windowMs: envNumber('BENCH_WINDOW_MS', 20_000),
      markedTargets: envNumber('BENCH_MARKED_TARGETS', 10),
      markedPriority,
      progress,
    },
  );
  process.stdout.write(`${JSON.stringify({ order, intervalMs, rps, shards: stack.shards, figures })}\n`);
} finally {
  await life.cleanup();
}
process.exit(0);
