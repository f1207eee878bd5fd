// bench:stream's verdicts (bench/stream/verdicts.ts): each one passes on figures that meet its
// target and fails on figures that miss it, and a run that connected or delivered nothing fails.
import { describe, expect, it } from 'vitest';
import { connectVerdict, fanOutVerdict } from '../../bench/stream/verdicts.ts';

describe("bench:stream's verdicts", () => {
  it('fan-out: at least 5x ws passes, less fails, nothing delivered fails', () => {
    expect(fanOutVerdict(500_000, 100_000).pass).toBe(true);
    expect(fanOutVerdict(499_999, 100_000)).toMatchObject({ pass: false, line: expect.stringContaining('NOT met') });
    expect(fanOutVerdict(0, 0).pass).toBe(false);
    expect(fanOutVerdict(100, 0).pass).toBe(false);
  });

  it('connects: within 1.5x of ws passes, slower fails, a failed connect fails, nothing timed fails', () => {
    expect(connectVerdict({ ms: 3_000, failed: 0 }, { ms: 2_000, failed: 0 }).pass).toBe(true);
    expect(connectVerdict({ ms: 3_001, failed: 0 }, { ms: 2_000, failed: 0 })).toMatchObject({ pass: false, line: expect.stringContaining('1.50x') });
    expect(connectVerdict({ ms: 2_000, failed: 1 }, { ms: 2_000, failed: 0 })).toMatchObject({ pass: false, line: expect.stringContaining('1 and 0 failed') });
    expect(connectVerdict({ ms: 0, failed: 0 }, { ms: 0, failed: 0 }).pass).toBe(false);
  });
});
