// The polling workflows' wait rule (workflows/loop-pacing.ts), as plain functions: Math.random is
// the SDK's deterministic one inside a workflow and the real one here.
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { backoffWait, MAX_BACKOFF_FACTOR, PAUSED_CHECK_MS, pausedWait } from '../../workflows/loop-pacing.ts';

afterEach(() => vi.restoreAllMocks());

describe('backoffWait', () => {
  it('doubles with each failure up to the cap, then spreads by the jitter both ways', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.5); // no jitter
    expect([0, 1, 2, 3, 4, 5, 10].map((f) => backoffWait(1_000, f, 0.1))).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 16_000, 16_000]);
    vi.spyOn(Math, 'random').mockReturnValue(1);
    expect(backoffWait(1_000, 5, 0.1)).toBe(17_600);
    vi.spyOn(Math, 'random').mockReturnValue(0);
    expect(backoffWait(1_000, 0, 0.1)).toBe(900);
  });

  it('stays within interval × factor × (1 ± jitter)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3_600_000 }), fc.integer({ min: 0, max: 50 }), fc.double({ min: 0, max: 0.5, noNaN: true }), (interval, failures, jitter) => {
        const factor = Math.min(MAX_BACKOFF_FACTOR, 2 ** failures);
        const wait = backoffWait(interval, failures, jitter);
        expect(wait).toBeGreaterThanOrEqual(Math.floor(interval * factor * (1 - jitter)));
        expect(wait).toBeLessThanOrEqual(Math.ceil(interval * factor * (1 + jitter)));
      }),
    );
  });
});

describe('pausedWait', () => {
  it('is the backstop of a paused tracking (the resumeTracking signal wakes it sooner): max(interval, PAUSED_CHECK_MS) × (1 ± jitter)', () => {
    expect(PAUSED_CHECK_MS).toBe(15 * 60_000);
    fc.assert(
      fc.property(fc.integer({ min: 200, max: 3_600_000 }), (interval) => {
        const wait = pausedWait(interval, 0.1);
        expect(wait).toBeGreaterThanOrEqual(Math.floor(Math.max(interval, PAUSED_CHECK_MS) * 0.9));
        expect(wait).toBeLessThanOrEqual(Math.ceil(Math.max(interval, PAUSED_CHECK_MS) * 1.1));
      }),
    );
  });
});
