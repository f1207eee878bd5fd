// bench:fairness's verdicts (bench/fairness/verdicts.ts): each passes on figures that meet its
// target and fails on figures that miss it, and figures that count no request fail.
import { describe, expect, it } from 'vitest';
import { markedMet, restMet, smallGapMet, type FairnessRun } from '../../bench/fairness/verdicts.ts';

function run(over: { small?: Partial<FairnessRun['figures']['small']>; big?: Partial<FairnessRun['figures']['big']>; marked?: Partial<FairnessRun['figures']['marked']> } = {}): FairnessRun {
  return {
    intervalMs: 1_000,
    rps: 20,
    figures: {
      windowS: 20,
      small: { targets: 3, maxGapMs: 1_400, gapsMs: [1_400, 1_200, 1_100], requestsPerS: 3, ...over.small },
      big: { targets: 400, requestsPerS: 16, targetsAsked: 320, ...over.big },
      marked: { targets: 10, priority: 100, maxGapMs: 3_100, requestsPerS: 4, ...over.marked },
    },
  };
}

describe("bench:fairness's verdicts", () => {
  it("B's gap: two intervals pass, more fails, no request fails", () => {
    expect(smallGapMet(run({ small: { maxGapMs: 2_000 } }))).toBe(true);
    expect(smallGapMet(run({ small: { maxGapMs: 2_001 } }))).toBe(false);
    expect(smallGapMet(run({ small: { requestsPerS: 0 } }))).toBe(false);
    expect(smallGapMet(run({ small: { targets: 0 } }))).toBe(false);
  });

  it('A gets the rest: 85% of the budget less B passes, less fails, no request fails', () => {
    expect(restMet(run({ big: { requestsPerS: 0.85 * 17 } }))).toBe(true);
    expect(restMet(run({ big: { requestsPerS: 0.85 * 17 - 0.01 } }))).toBe(false);
    expect(restMet(run({ big: { requestsPerS: 0 }, small: { requestsPerS: 20 } }))).toBe(false);
  });

  it("A's prioritised targets: interval + answer time + 1 s passes, more fails, none marked or none asked fails", () => {
    expect(markedMet(run({ marked: { maxGapMs: 4_000 } }), 2_000)).toBe(true);
    expect(markedMet(run({ marked: { maxGapMs: 4_001 } }), 2_000)).toBe(false);
    expect(markedMet(run({ marked: { targets: 0, maxGapMs: 0 } }), 2_000)).toBe(false);
    expect(markedMet(run({ marked: { priority: 0 } }), 2_000)).toBe(false);
    expect(markedMet(run({ marked: { requestsPerS: 0 } }), 2_000)).toBe(false);
  });
});
