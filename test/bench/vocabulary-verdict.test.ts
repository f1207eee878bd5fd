// bench:vocabulary's verdicts (bench/vocabulary/verdict.ts): each one fails on the figures that
// should fail it, and a run that measured or compared nothing does not pass.
import { describe, expect, it } from 'vitest';
import { HOLD_TARGET_MS, vocabularyVerdicts, type VocabularyFigures } from '../../bench/vocabulary/verdict.ts';

const good: VocabularyFigures = { holdsMs: [9.8, 12.1, 18.0], probes: 2_000, differ: 0, reached: 1_986 };
const passes = (f: VocabularyFigures) => vocabularyVerdicts(f).map((v) => v.pass);

describe('bench:vocabulary verdicts', () => {
  it('pass on a run within the target whose trees agree', () => {
    expect(passes(good)).toEqual([true, true]);
  });

  it('fail the hold when one reload held the event loop for the target or longer, or none was measured', () => {
    expect(passes({ ...good, holdsMs: [9.8, HOLD_TARGET_MS, 12] })).toEqual([false, true]);
    expect(passes({ ...good, holdsMs: [9.8, Number.NaN] })).toEqual([false, true]);
    expect(passes({ ...good, holdsMs: [] })).toEqual([false, true]);
  });

  it('fail the comparison when one probe differs, or when the probes reached no word or were none', () => {
    expect(passes({ ...good, differ: 1 })).toEqual([true, false]);
    expect(passes({ ...good, reached: 0 })).toEqual([true, false]);
    expect(passes({ ...good, probes: 0, reached: 0 })).toEqual([true, false]);
  });
});
