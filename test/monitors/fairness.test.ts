// Issue 25's fair polling on the real path (real worker, Temporal, PostgreSQL, the simulator):
// account A watches 400 slow pf_06 targets, account B 3 fast ones on the same platform, with a
// 1 s interval and SCRAPE_RPS_PER_PLATFORM=20 over the default 4 shards. Read from the
// simulator's own request log: each of B's targets is still asked for at least every 2 s, and
// A gets the rest of the budget. On the code before (38577da: first come, first served, slots
// reserved ahead, polls sharing SCRAPE_CONCURRENCY's 20 requests) B's targets were not asked for
// once in the 20 s window, and A got 11.3 requests/s.
import { describe, expect, it } from 'vitest';
import { runFairness } from '../support/fairness.ts';
import { useMonitorStack } from '../support/monitor-stack.ts';

const RPS = 20;
const stack = useMonitorStack({ intervalMs: 1_000, env: { SCRAPE_RPS_PER_PLATFORM: `pf_06=${RPS}` } });

describe('fair polling', { timeout: 120_000 }, () => {
  it("a small account's targets keep their interval while another account's 400 slow targets are backlogged; that account's priorities order its own", async () => {
    // Issue 40: 10 of A's 400 items have priority 100. Without it each of A's targets waits its
    // turn with the other 399, about 25 s (bench:fairness measures both side by side).
    const figures = await runFairness(
      { simUrl: stack.sim.url, gatewayUrl: stack.gateway.url, db: stack.db },
      { bigTargets: 400, smallTargets: 3, slowMs: 2_000, windowMs: 20_000, markedTargets: 10, markedPriority: 100 },
    );
    // A's prioritised targets are asked for again as soon as their slow answer (2 s) is in and a
    // slot of A's comes: the 1 s interval, stretched only by their own answer time.
    expect(figures.marked.maxGapMs, JSON.stringify(figures)).toBeLessThanOrEqual(2_000 + 1_000 + 1_000);
    // Every 2 s at most, window edges included (1 s ± 10% jitter, plus the wait for a slot).
    expect(figures.small.gapsMs.every((g) => g <= 2_000), JSON.stringify(figures)).toBe(true);
    // A gets the rest: the platform's budget less B's share, within what pacing and slow answers lose.
    expect(figures.small.requestsPerS).toBeGreaterThan(2.5);
    expect(figures.big.requestsPerS, JSON.stringify(figures)).toBeGreaterThanOrEqual((RPS - figures.small.requestsPerS) * 0.85);
    expect(figures.big.requestsPerS + figures.small.requestsPerS).toBeLessThanOrEqual(RPS * 1.05);
  });
});
