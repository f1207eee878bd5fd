// The shard poll loop's schedule on a clock the test moves: spread starts, rhythm kept across
// slow scrapes, no bunching after a stall, back-off on failure and Retry-After honoured.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ANSWERED_BACKOFF_FACTOR, MAX_BACKOFF_FACTOR, ShardSchedule } from '../../src/monitors/poll-schedule.ts';
import type { EventRef } from '../../src/platform/event-ref.ts';

const ref = (key: string): EventRef => ({ platform: 'pf_03', eventId: key, key, region: 'fr', host: null });
const refs = (...keys: string[]) => new Map(keys.map((k) => [k, ref(k)]));
const I = 5_000;

describe('ShardSchedule', () => {
  it('new targets start within the first half interval, carried ones keep their time', () => {
    const s = new ShardSchedule({ intervalMs: I, jitterRatio: 0.2 });
    const added = s.sync(refs('a', 'b', 'c'), 1_000, { c: 9_999 });
    expect(added.sort()).toEqual(['a', 'b', 'c']);
    for (const k of ['a', 'b']) {
      const t = s.targets.get(k)!;
      expect(t.dueAt).toBeGreaterThanOrEqual(1_000);
      expect(t.dueAt).toBeLessThanOrEqual(1_000 + I / 2);
    }
    expect(s.targets.get('c')!.dueAt).toBe(9_999);
    // A second sync keeps times and drops what left.
    const before = s.targets.get('a')!.dueAt;
    expect(s.sync(refs('a', 'd'), 2_000, null)).toEqual(['d']);
    expect(s.targets.get('a')!.dueAt).toBe(before);
    expect([...s.targets.keys()].sort()).toEqual(['a', 'd']);
  });

  it('keeps the rhythm from the due time, not from when the scrape ended', () => {
    const s = new ShardSchedule({ intervalMs: I, jitterRatio: 0, random: () => 0.5 });
    s.sync(refs('a'), 0, { a: 10_000 });
    const t = s.targets.get('a')!;
    s.succeeded(t, 10_800, 10_000);
    expect(t.dueAt).toBe(15_000);
  });

  it('a poll more than an interval late is rescheduled from now, not bunched', () => {
    const s = new ShardSchedule({ intervalMs: I, jitterRatio: 0.2, random: () => 0.5 });
    s.sync(refs('a'), 0, { a: 10_000 });
    const t = s.targets.get('a')!;
    s.succeeded(t, 40_000);
    expect(t.dueAt).toBeGreaterThanOrEqual(40_000 + I * 0.8);
    expect(t.dueAt).toBeLessThanOrEqual(40_000 + I * 1.2);
  });

  it('property: a poll however late is never followed by another within an interval less its jitter', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4 * I }), fc.integer({ min: 0, max: I }), fc.double({ min: 0, max: 0.9, noNaN: true }), (late, took, jitter) => {
        const s = new ShardSchedule({ intervalMs: I, jitterRatio: jitter });
        s.sync(refs('a'), 0, { a: 10_000 });
        const t = s.targets.get('a')!;
        const startedAt = 10_000 + late;
        s.succeeded(t, startedAt + took, startedAt);
        expect(t.dueAt - startedAt).toBeGreaterThanOrEqual(I * (1 - jitter) - 1e-6);
        expect(t.dueAt).toBeLessThanOrEqual(startedAt + took + I * (1 + jitter) + 1e-6);
      }),
    );
  });

  it('failures back off exponentially; a Retry-After wins when it is later', () => {
    const s = new ShardSchedule({ intervalMs: I, jitterRatio: 0, random: () => 0.5 });
    s.sync(refs('a'), 0, { a: 0 });
    const t = s.targets.get('a')!;
    s.failed(t, 1_000, null);
    expect(t.dueAt).toBe(1_000 + 2 * I);
    s.failed(t, 2_000, null);
    expect(t.dueAt).toBe(2_000 + 4 * I);
    s.failed(t, 3_000, 3_000 + 3_600_000);
    expect(t.dueAt).toBe(3_000 + 3_600_000);
    expect(s.blockedCount(4_000)).toBe(1);
    s.succeeded(t, 3_700_000);
    expect(t.failures).toBe(0);
    expect(s.blockedCount(3_700_000)).toBe(0);
  });

  it('a failure the platform answered (a page we could not read) waits 2 intervals at most, however many come in a row', () => {
    const s = new ShardSchedule({ intervalMs: I, jitterRatio: 0, random: () => 0.5 });
    s.sync(refs('a', 'b'), 0, { a: 0, b: 0 });
    const [a, b] = [s.targets.get('a')!, s.targets.get('b')!];
    for (let i = 1; i <= 8; i++) {
      s.failed(a, i * 100_000, null, 'answered');
      s.failed(b, i * 100_000, null, 'transient');
      expect(a.dueAt).toBe(i * 100_000 + Math.min(ANSWERED_BACKOFF_FACTOR, 2 ** i) * I);
      expect(b.dueAt).toBe(i * 100_000 + Math.min(MAX_BACKOFF_FACTOR, 2 ** i) * I);
    }
    // The check can fail: a time-out's back-off went on doubling past it.
    expect(b.dueAt - 800_000).toBeGreaterThan(ANSWERED_BACKOFF_FACTOR * I);
  });

  it('property: every target is due again within its bound after any outcome, and due() is ordered', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ advance: fc.integer({ min: 0, max: 4 * I }), outcome: fc.constantFrom('ok', 'fail', 'blocked'), retryMs: fc.integer({ min: 0, max: 600_000 }) }), { maxLength: 60 }),
        fc.double({ min: 0, max: 0.9, noNaN: true }),
        (steps, jitter) => {
          const s = new ShardSchedule({ intervalMs: I, jitterRatio: jitter });
          let now = 0;
          s.sync(refs('a', 'b', 'c'), now, null);
          for (const step of steps) {
            now += step.advance;
            const due = s.due(now);
            expect(due.map((t) => t.dueAt)).toEqual([...due.map((t) => t.dueAt)].sort((x, y) => x - y));
            for (const t of due) {
              if (step.outcome === 'ok') {
                s.succeeded(t, now);
                expect(t.dueAt).toBeGreaterThanOrEqual(now);
                expect(t.dueAt).toBeLessThanOrEqual(now + I * (1 + jitter) + 1);
              } else {
                const until = step.outcome === 'blocked' ? now + step.retryMs : null;
                s.failed(t, now, until);
                expect(t.dueAt).toBeGreaterThanOrEqual(Math.max(now, until ?? 0));
                expect(t.dueAt).toBeLessThanOrEqual(Math.max(now + MAX_BACKOFF_FACTOR * I * (1 + jitter) + 1, until ?? 0));
              }
            }
          }
          expect(Object.keys(s.dueTimes()).sort()).toEqual(['a', 'b', 'c']);
        },
      ),
    );
  });
});
