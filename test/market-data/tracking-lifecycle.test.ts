// The tracking gate's rule (src/market-data/tracking-lifecycle.ts), as a pure function: when a
// tracking is scraped, paused or ended, for any facts the database could report.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decideTracking, trackingEndsAt, type TrackingFacts } from '../../src/market-data/tracking-lifecycle.ts';

const DAY = 86_400_000;
const limits = { endAfterEventMs: DAY, undatedMaxMs: 30 * DAY };
const T0 = Date.parse('2026-11-27T12:00:00Z');
const facts = (over: Partial<TrackingFacts> = {}): TrackingFacts => ({
  status: 'active',
  held: true,
  served: true,
  eventDate: new Date(T0 + 10 * DAY),
  scrapedThisChain: true,
  startedAt: new Date(T0 - DAY),
  now: new Date(T0),
  ...over,
});

const anyFacts = fc.record({
  status: fc.constantFrom('pending', 'active', 'failing', 'failed', 'ended'),
  held: fc.boolean(),
  served: fc.boolean(),
  eventDate: fc.option(fc.integer({ min: -60, max: 60 }).map((d) => new Date(T0 + d * DAY)), { nil: null }),
  scrapedThisChain: fc.boolean(),
  startedAt: fc.integer({ min: 0, max: 60 }).map((d) => new Date(T0 - d * DAY)),
  now: fc.integer({ min: -5 * DAY, max: 5 * DAY }).map((ms) => new Date(T0 + ms)),
}) as fc.Arbitrary<TrackingFacts>;

describe('decideTracking', () => {
  it('scrapes a held, served tracking until its event’s date plus the setting, then ends it (event_passed)', () => {
    expect(decideTracking(facts(), limits)).toEqual({ action: 'scrape' });
    expect(decideTracking(facts({ now: new Date(T0 + 11 * DAY - 1) }), limits)).toEqual({ action: 'scrape' });
    expect(decideTracking(facts({ now: new Date(T0 + 11 * DAY) }), limits)).toEqual({ action: 'end', reason: 'event_passed', record: true });
  });

  it('counts from the start when the date is unknown or not yet read by this tracking (undated)', () => {
    const past = new Date(T0 - 5 * DAY);
    // A date from an earlier tracking is not trusted until this one has scraped: it may have moved.
    expect(decideTracking(facts({ eventDate: past, scrapedThisChain: false }), limits)).toEqual({ action: 'scrape' });
    expect(decideTracking(facts({ eventDate: null, now: new Date(T0 + 29 * DAY - 1) }), limits)).toEqual({ action: 'scrape' });
    expect(decideTracking(facts({ eventDate: null, now: new Date(T0 + 29 * DAY) }), limits)).toEqual({ action: 'end', reason: 'undated', record: true });
  });

  it('pauses while no account tracking it is served; ends one no account holds; leaves an ended one ended', () => {
    expect(decideTracking(facts({ served: false }), limits)).toEqual({ action: 'pause' });
    expect(decideTracking(facts({ held: false, served: false }), limits)).toEqual({ action: 'end', reason: 'untracked', record: true });
    expect(decideTracking(null, limits)).toMatchObject({ action: 'end', record: false });
    expect(decideTracking(facts({ status: 'ended' }), limits)).toMatchObject({ action: 'end', record: false });
    expect(decideTracking(facts({ status: 'failed' }), limits)).toMatchObject({ action: 'end', record: false });
  });

  it('for any facts: scrapes only a live, held, served tracking before its end; an end stays an end as time passes', () => {
    fc.assert(
      fc.property(anyFacts, fc.nat(10 * DAY), (f, later) => {
        const d = decideTracking(f, limits);
        const live = f.status !== 'ended' && f.status !== 'failed';
        const beforeEnd = f.now.getTime() < trackingEndsAt(f, limits).getTime();
        expect(d.action === 'scrape').toBe(live && f.held && f.served && beforeEnd);
        expect(d.action === 'pause').toBe(live && f.held && !f.served && beforeEnd);
        if (d.action === 'end') {
          expect(d.record).toBe(live);
          expect(decideTracking({ ...f, now: new Date(f.now.getTime() + later) }, limits)).toEqual(d);
        }
      }),
    );
  });
});
