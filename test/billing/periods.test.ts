// Billing period arithmetic: calendar months in UTC anchored on the subscription's start day,
// clamped to short months without losing the anchor day, contiguous when rolled forward.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addMonths, periodContaining, rollForward } from '../../src/billing/periods.ts';

const d = (iso: string) => new Date(iso);
const iso = (x: Date) => x.toISOString();

describe('addMonths', () => {
  it.each([
    ['2025-01-31T10:20:30.456Z', 1, '2025-02-28T10:20:30.456Z'],
    ['2024-01-31T00:00:00.000Z', 1, '2024-02-29T00:00:00.000Z'],
    ['2025-01-31T10:00:00.000Z', 2, '2025-03-31T10:00:00.000Z'],
    ['2025-03-31T10:00:00.000Z', 1, '2025-04-30T10:00:00.000Z'],
    ['2025-01-30T10:00:00.000Z', 1, '2025-02-28T10:00:00.000Z'],
    ['2025-01-29T10:00:00.000Z', 1, '2025-02-28T10:00:00.000Z'],
    ['2025-01-28T10:00:00.000Z', 1, '2025-02-28T10:00:00.000Z'],
    ['2025-12-15T23:59:59.999Z', 1, '2026-01-15T23:59:59.999Z'],
    ['2024-02-29T12:00:00.000Z', 12, '2025-02-28T12:00:00.000Z'],
    ['2024-02-29T12:00:00.000Z', 48, '2028-02-29T12:00:00.000Z'],
    ['2025-03-31T00:00:00.000Z', -1, '2025-02-28T00:00:00.000Z'],
    ['2025-01-15T00:00:00.000Z', -13, '2023-12-15T00:00:00.000Z'],
    ['2025-05-20T08:00:00.000Z', 0, '2025-05-20T08:00:00.000Z'],
  ])('%s + %i months = %s', (from, n, to) => {
    expect(iso(addMonths(d(from), n))).toBe(to);
  });

  it('does not mutate its argument', () => {
    const x = d('2025-01-31T00:00:00.000Z');
    addMonths(x, 1);
    expect(iso(x)).toBe('2025-01-31T00:00:00.000Z');
  });

  it('property: the day is the anchor day clamped to the month, the time of day is kept, months advance by n', () => {
    fc.assert(
      fc.property(fc.date({ min: d('1990-01-01'), max: d('2090-12-31'), noInvalidDate: true }), fc.integer({ min: -240, max: 240 }), (from, n) => {
        const to = addMonths(from, n);
        const months = (to.getUTCFullYear() - from.getUTCFullYear()) * 12 + to.getUTCMonth() - from.getUTCMonth();
        expect(months).toBe(n);
        const lastDay = new Date(Date.UTC(to.getUTCFullYear(), to.getUTCMonth() + 1, 0)).getUTCDate();
        expect(to.getUTCDate()).toBe(Math.min(from.getUTCDate(), lastDay));
        expect(to.getTime() % 86_400_000).toBe(from.getTime() % 86_400_000); // dates after 1970: remainders are positive
      }),
    );
  });
});

describe('periodContaining', () => {
  const anchor = d('2025-01-31T10:00:00.000Z');

  it.each([
    ['2025-01-31T10:00:00.000Z', '2025-01-31T10:00:00.000Z', '2025-02-28T10:00:00.000Z'],
    ['2025-02-28T09:59:59.999Z', '2025-01-31T10:00:00.000Z', '2025-02-28T10:00:00.000Z'],
    ['2025-02-28T10:00:00.000Z', '2025-02-28T10:00:00.000Z', '2025-03-31T10:00:00.000Z'],
    ['2025-04-15T00:00:00.000Z', '2025-03-31T10:00:00.000Z', '2025-04-30T10:00:00.000Z'],
    ['2027-03-01T00:00:00.000Z', '2027-02-28T10:00:00.000Z', '2027-03-31T10:00:00.000Z'],
  ])('at %s the period is [%s, %s)', (now, start, end) => {
    const p = periodContaining(anchor, d(now));
    expect([iso(p.start), iso(p.end)]).toEqual([start, end]);
  });

  it('property: start <= now < end, both are anchor + k months', () => {
    fc.assert(
      fc.property(
        fc.date({ min: d('2000-01-01'), max: d('2060-01-01'), noInvalidDate: true }),
        fc.integer({ min: 0, max: 30 * 365 * 86_400_000 }),
        (a, offset) => {
          const now = new Date(a.getTime() + offset);
          const p = periodContaining(a, now);
          expect(p.start.getTime()).toBeLessThanOrEqual(now.getTime());
          expect(p.end.getTime()).toBeGreaterThan(now.getTime());
          const k = (p.start.getUTCFullYear() - a.getUTCFullYear()) * 12 + p.start.getUTCMonth() - a.getUTCMonth();
          expect(iso(p.start)).toBe(iso(addMonths(a, k)));
          expect(iso(p.end)).toBe(iso(addMonths(a, k + 1)));
        },
      ),
    );
  });
});

describe('rollForward: moving a stored period to the one containing now', () => {
  it('keeps the period while it has not ended', () => {
    const p = { start: d('2025-02-28T10:00:00.000Z'), end: d('2025-03-31T10:00:00.000Z') };
    expect(rollForward(p, d('2025-03-31T09:59:59.999Z'))).toEqual(p);
  });

  it('Jan 31 anchor: Feb 28 -> Mar 31 -> Apr 30 -> May 31, never drifting to the 28th', () => {
    let p = { start: d('2025-01-31T10:00:00.000Z'), end: d('2025-02-28T10:00:00.000Z') };
    const starts = [];
    for (let i = 0; i < 5; i++) {
      p = rollForward(p, p.end); // each roll exactly when the period ends
      starts.push(iso(p.start));
    }
    expect(starts).toEqual([
      '2025-02-28T10:00:00.000Z',
      '2025-03-31T10:00:00.000Z',
      '2025-04-30T10:00:00.000Z',
      '2025-05-31T10:00:00.000Z',
      '2025-06-30T10:00:00.000Z',
    ]);
    expect(iso(p.end)).toBe('2025-07-31T10:00:00.000Z');
  });

  it('a period rolled after a long pause skips the missed months and keeps the anchor day', () => {
    const p = rollForward({ start: d('2025-02-28T10:00:00.000Z'), end: d('2025-03-31T10:00:00.000Z') }, d('2026-11-22T00:00:00.000Z'));
    expect([iso(p.start), iso(p.end)]).toEqual(['2026-10-31T10:00:00.000Z', '2026-11-30T10:00:00.000Z']);
  });

  it('property: rolling month after month equals counting months from the original anchor, periods contiguous and never overlapping', () => {
    fc.assert(
      fc.property(
        fc.date({ min: d('2000-01-01'), max: d('2060-01-01'), noInvalidDate: true }),
        fc.array(fc.integer({ min: 0, max: 200 * 86_400_000 }), { minLength: 1, maxLength: 30 }),
        (anchor, gaps) => {
          let p = { start: anchor, end: addMonths(anchor, 1) };
          let now = anchor.getTime();
          for (const gap of gaps) {
            now += gap;
            const next = rollForward(p, new Date(now));
            expect(next.start.getTime()).toBeLessThanOrEqual(now);
            expect(next.end.getTime()).toBeGreaterThan(now);
            if (next.start.getTime() !== p.start.getTime()) expect(next.start.getTime()).toBeGreaterThanOrEqual(p.end.getTime());
            // Same answer as counting from the anchor itself.
            const truth = periodContaining(anchor, new Date(now));
            expect([iso(next.start), iso(next.end)]).toEqual([iso(truth.start), iso(truth.end)]);
            p = next;
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('an irregular stored period (set by an operator) is continued without a gap or an overlap', () => {
    const p = rollForward({ start: d('2025-01-25T00:00:00.000Z'), end: d('2025-02-10T00:00:00.000Z') }, d('2025-02-10T00:00:00.000Z'));
    expect([iso(p.start), iso(p.end)]).toEqual(['2025-02-10T00:00:00.000Z', '2025-03-10T00:00:00.000Z']);
  });
});
