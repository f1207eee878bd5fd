// Synthetic pages (src/scrapers/synthetic-pages.ts), bench:capacity's stand-in for the platform:
// the real pf_03 adapter reads each page it answers, the first section's stock is the one the
// schedule gives for that moment and moves once per period, and anything but a pf_03 event page
// is refused as unsupported.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseEventRef } from '../../src/platform/event-ref.ts';
import { parsePf03 } from '../../src/scrapers/platforms/pf_03.ts';
import { createSyntheticPages, syntheticChanges, syntheticStock } from '../../src/scrapers/synthetic-pages.ts';

const BASE = 'http://127.0.0.1:1/pf_03';

describe('synthetic pages', () => {
  it("are read by pf_03's adapter with the stock the schedule gives, moving once per period", async () => {
    await fc.assert(
      fc.asyncProperty(fc.stringMatching(/^[a-z0-9-]{1,20}$/), fc.integer({ min: 1_000, max: 60_000 }), fc.nat({ max: 1e9 }), async (key, period, t) => {
        let now = t;
        const pages = createSyntheticPages(period, () => now);
        const ref = parseEventRef('pf_03', `https://pf03.example/e/${key}`, 'us');
        if (!ref.ok) return;
        const url = `${BASE}/e/${key}?region=us`;
        const read = async () => {
          const page = await pages.html(url);
          const data = parsePf03(ref.ref, page.$, url);
          const floor = Object.values(data.sections).find((s) => (s as { name?: string }).name === 'Floor') ?? data.sections.Floor;
          return JSON.stringify(floor);
        };
        const before = await read();
        expect(before).toContain(`"quantity":${syntheticStock(key, period, t)}`);
        now = t + period;
        const after = await read();
        // One period later it moved, by one step of five.
        expect(after).not.toBe(before);
        expect(after).toContain(`"quantity":${syntheticStock(key, period, t + period)}`);
      }),
      { numRuns: 50 },
    );
  });

  it('count the moves and the increases of a key exactly as its stock makes them', () => {
    // The model: the stock read at every millisecond of the window, each step compared with the last.
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z0-9-]{1,20}$/), fc.integer({ min: 1_000, max: 5_000 }), fc.nat({ max: 1e12 }), fc.nat({ max: 30_000 }), (key, period, from, span) => {
        let moves = 0;
        let increases = 0;
        let last = syntheticStock(key, period, from);
        for (let t = from + 1; t <= from + span; t++) {
          const now = syntheticStock(key, period, t);
          if (now !== last) moves++;
          if (now > last) increases++;
          last = now;
        }
        expect(syntheticChanges(key, period, from, from + span)).toEqual({ moves, increases });
      }),
      { numRuns: 60 },
    );
  });

  it('spread their moves and their increases evenly: any window holds about targets × window / period moves, four in five of them increases', () => {
    // bench:capacity's keys differ only in their last digits; a plain string hash bunched their
    // phases, and a 15 s window of 5,000 targets with a 100 s period held 0 changes, or 290. With
    // one cycle for every key, one period in five was all falls: a window then held 750 moves and
    // no increase, so nothing to notify, and the bench took that for missed notifications.
    const keys = Array.from({ length: 5_000 }, (_, i) => `bench-mon-${i}`);
    fc.assert(
      fc.property(fc.nat({ max: 1e12 }), (from) => {
        let moves = 0;
        let increases = 0;
        for (const key of keys) {
          const made = syntheticChanges(key, 100_000, from, from + 15_000);
          moves += made.moves;
          increases += made.increases;
        }
        expect(moves).toBeGreaterThanOrEqual(0.8 * 750);
        expect(moves).toBeLessThanOrEqual(1.2 * 750);
        expect(increases).toBeGreaterThanOrEqual(0.8 * 600);
        expect(increases).toBeLessThanOrEqual(1.2 * 600);
      }),
      { numRuns: 50 },
    );
  });

  it('refuse anything but a pf_03 event page', async () => {
    const pages = createSyntheticPages(1_000);
    await expect(pages.html(`${BASE}/other/x`)).rejects.toMatchObject({ kind: 'unsupported' });
    await expect(pages.json(`${BASE}/e/x`)).rejects.toMatchObject({ kind: 'unsupported' });
  });
});
