// The change feed's measure of an import being written (src/monitors/change-feed.ts,
// WrittenLastSecond), held to the writes the property generated: from its first reading on, the
// count never misses a write of the last second (a burst is never missed), and counts nothing
// written before the newest reading that is at least a second old (a write long gone does not
// keep a feed yielding).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { WrittenLastSecond } from '../../src/monitors/change-feed.ts';

/** Readings of the log's head, each some ms after the one before, with some writes between. */
const readingsArb = fc.array(fc.record({ afterMs: fc.integer({ min: 0, max: 2_500 }), writes: fc.array(fc.integer({ min: 0, max: 2_500 }), { maxLength: 30 }) }), { minLength: 1, maxLength: 40 });

describe('WrittenLastSecond', () => {
  it('counts every write of the last second, and none from before the newest reading a second old', () => {
    fc.assert(
      fc.property(readingsArb, (steps) => {
        const counter = new WrittenLastSecond();
        /** Every write's time: the ground truth. */
        const writes: number[] = [];
        const readings: { at: number; head: number }[] = [];
        let now = 0;
        for (const step of steps) {
          // Writes land between the previous reading and this one.
          for (const w of step.writes) writes.push(now + Math.min(w, step.afterMs));
          now += step.afterMs;
          const head = writes.length;
          const count = counter.count(head, now);
          // Writes since the first reading (before it, the counter has nothing to count from).
          const lastSecond = readings.length ? writes.slice(readings[0]!.head).filter((t) => t > now - 1_000).length : 0;
          const base = readings.filter((r) => now - r.at >= 1_000).at(-1) ?? readings[0];
          expect(count).toBeGreaterThanOrEqual(lastSecond);
          expect(count).toBe(base ? head - base.head : 0);
          readings.push({ at: now, head });
        }
      }),
      { numRuns: 300 },
    );
  });
});
