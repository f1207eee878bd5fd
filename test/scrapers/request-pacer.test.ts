// One platform's request budget: evenly spaced send times at the configured rate, a small burst
// for an idle pacer, pauses that hold every later request back, and (as a property) no second
// ever holding more than the rate plus the burst.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RequestPacer } from '../../src/scrapers/request-pacer.ts';

const T0 = 1_700_000_000_000;

describe('RequestPacer', () => {
  it('spaces requests 1000/rps ms apart once its burst is spent', () => {
    const pacer = new RequestPacer(4);
    expect(pacer.burst).toBe(1);
    expect([0, 1, 2, 3, 4].map(() => pacer.reserve(T0))).toEqual([T0, T0 + 250, T0 + 500, T0 + 750, T0 + 1000]);
  });

  it('lets an idle pacer send a burst of max(1, floor(rps/10)) at once, then paces', () => {
    const pacer = new RequestPacer(50);
    expect(pacer.burst).toBe(5);
    const times = Array.from({ length: 7 }, () => pacer.reserve(T0));
    expect(times).toEqual([T0, T0, T0, T0, T0, T0 + 20, T0 + 40]);
  });

  it('does not save up more than its burst while idle', () => {
    const pacer = new RequestPacer(20);
    pacer.reserve(T0);
    const later = T0 + 60_000;
    expect([0, 1, 2].map(() => pacer.reserve(later))).toEqual([later, later, later + 50]);
  });

  it('sends at once when the caller comes no faster than the rate', () => {
    const pacer = new RequestPacer(10);
    for (let i = 0; i < 20; i++) expect(pacer.reserve(T0 + i * 100)).toBe(T0 + i * 100);
  });

  it('takes rates below one per second', () => {
    const pacer = new RequestPacer(0.5);
    expect(pacer).toMatchObject({ burst: 1, intervalMs: 2_000 });
    expect([pacer.reserve(T0), pacer.reserve(T0), pacer.reserve(T0 + 100)]).toEqual([T0, T0 + 2_000, T0 + 4_000]);
  });

  it('holds every request back until a pause ends, then resumes at the steady rate without a burst', () => {
    const pacer = new RequestPacer(100);
    expect(pacer.reserve(T0)).toBe(T0);
    pacer.pause(T0 + 30_000);
    expect(pacer.pausedUntil).toBe(T0 + 30_000);
    expect(pacer.nextSendAt(T0 + 1)).toBe(T0 + 30_000);
    expect([0, 1, 2].map(() => pacer.reserve(T0 + 1))).toEqual([T0 + 30_000, T0 + 30_010, T0 + 30_020]);
    // A shorter pause after a longer one changes nothing.
    pacer.pause(T0 + 5_000);
    expect(pacer.pausedUntil).toBe(T0 + 30_000);
  });

  it('nextSendAt looks without taking the slot', () => {
    const pacer = new RequestPacer(1);
    expect(pacer.nextSendAt(T0)).toBe(T0);
    expect(pacer.nextSendAt(T0)).toBe(T0);
    pacer.reserve(T0);
    expect(pacer.nextSendAt(T0)).toBe(T0 + 1_000);
  });

  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY])('refuses a rate of %s', (rps) => {
    expect(() => new RequestPacer(rps)).toThrow(RangeError);
  });

  it('property: no 1-second window holds more than ceil(rps) + burst sends; each is at or after its call and any pause before it', () => {
    const step = fc.oneof(
      { weight: 5, arbitrary: fc.record({ wait: fc.integer({ min: 0, max: 400 }), pause: fc.constant(null) }) },
      { weight: 1, arbitrary: fc.record({ wait: fc.integer({ min: 0, max: 400 }), pause: fc.integer({ min: 0, max: 5_000 }) }) },
    );
    const rate = fc.oneof(fc.integer({ min: 1, max: 500 }), fc.double({ min: 0.05, max: 300, noNaN: true }));
    fc.assert(
      fc.property(rate, fc.array(step, { minLength: 1, maxLength: 300 }), (rps, steps) => {
        const pacer = new RequestPacer(rps);
        let now = T0;
        let pausedUntil = Number.NEGATIVE_INFINITY;
        const sends: number[] = [];
        for (const { wait, pause } of steps) {
          now += wait;
          if (pause !== null) {
            pacer.pause(now + pause);
            pausedUntil = Math.max(pausedUntil, now + pause);
          }
          const at = pacer.reserve(now);
          expect(at).toBeGreaterThanOrEqual(now);
          expect(at).toBeGreaterThanOrEqual(pausedUntil);
          sends.push(at);
        }
        const limit = Math.ceil(rps) + pacer.burst;
        sends.sort((a, b) => a - b);
        // The fullest closed window [s, s + 1000] starts at a send.
        for (let i = 0, j = 0; i < sends.length; i++) {
          while (j < sends.length && sends[j]! <= sends[i]! + 1000) j++;
          expect(j - i, `sends in the second from ${sends[i]! - T0} ms at ${rps}/s`).toBeLessThanOrEqual(limit);
        }
      }),
      { numRuns: 300 },
    );
  });
});
