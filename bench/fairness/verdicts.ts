// bench:fairness's verdicts (issues 25 and 40), apart from the run so a test can show each one
// failing: B's targets asked for at least every 2 intervals, A getting at least 85% of what B
// leaves of the budget, and A's prioritised targets asked for at least every interval plus their
// own answer time plus 1 s. A run whose figures count no request fails: counting nothing proves
// nothing.
import type { FairnessFigures } from '../../test/support/fairness.ts';

export interface FairnessRun {
  intervalMs: number;
  rps: number;
  figures: FairnessFigures;
}

/** B's longest gap between two requests for one of its targets: at most two intervals. */
export function smallGapMet(run: FairnessRun): boolean {
  const { small } = run.figures;
  return small.targets > 0 && small.requestsPerS > 0 && small.maxGapMs <= 2 * run.intervalMs;
}

/** A's requests/s: at least 85% of the platform's budget less B's. */
export function restMet(run: FairnessRun): boolean {
  const { small, big } = run.figures;
  return big.requestsPerS > 0 && big.requestsPerS >= 0.85 * (run.rps - small.requestsPerS);
}

/** The longest gap A's prioritised targets may have: the interval, their answer time, 1 s of slots. */
export function markedBoundMs(run: FairnessRun, slowMs: number): number {
  return run.intervalMs + slowMs + 1_000;
}

/** A's prioritised targets keep their pace: asked for at least every markedBoundMs. */
export function markedMet(run: FairnessRun, slowMs: number): boolean {
  const { marked } = run.figures;
  return marked.targets > 0 && marked.priority > 0 && marked.requestsPerS > 0 && marked.maxGapMs <= markedBoundMs(run, slowMs);
}
