// The tracking gate's rule (src/market-data/tracking-lifecycle.ts), as a pure function: when a
// tracking is scraped, paused or ended, for any facts the database could report.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { awaitingClaim, decideTracking, trackingEndsAt, type TrackingFacts } from '../../src/market-data/tracking-lifecycle.ts';

const DAY = 86_400_000;
const limits = { endAfterEventMs: DAY, undatedMaxMs: 30 * DAY, unattributedMaxMs: 30 * DAY };
const T0 = Date.parse('2026-11-27T12:00:00Z');
const facts = (over: Partial<TrackingFacts> = {}): TrackingFacts => ({
  status: 'active',
  held: true,
  served: true,
  unattributedSince: null,
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
  unattributedSince: fc.option(fc.integer({ min: 0, max: 60 }).map((d) => new Date(T0 - d * DAY)), { nil: null }),
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

  it('an unattributed tracking counts as held and served while it waits to be claimed, then ends like one nobody holds (untracked)', () => {
    // As migration 027 leaves it: no link. Migration 034 started its wait; an event a year away.
    const unattributed = facts({ held: false, served: false, unattributedSince: new Date(T0 - 10 * DAY), eventDate: new Date(T0 + 365 * DAY) });
    expect(decideTracking(unattributed, limits)).toEqual({ action: 'scrape' });
    expect(decideTracking({ ...unattributed, now: new Date(T0 + 20 * DAY - 1) }, limits)).toEqual({ action: 'scrape' });
    expect(decideTracking({ ...unattributed, now: new Date(T0 + 20 * DAY) }, limits)).toEqual({ action: 'end', reason: 'untracked', record: true });
    // The date rules still end it first when they come first.
    expect(decideTracking({ ...unattributed, eventDate: new Date(T0 - 2 * DAY) }, limits)).toEqual({ action: 'end', reason: 'event_passed', record: true });
    // Claimed (added again by an account): an ordinary tracking of that account, whatever the wait.
    expect(decideTracking({ ...unattributed, held: true, served: true, unattributedSince: null, now: new Date(T0 + 100 * DAY) }, limits)).toEqual({ action: 'scrape' });
  });

  it('for any facts: scrapes only a live tracking held and served (or awaiting its claim) before its end; an end stays an end as time passes', () => {
    fc.assert(
      fc.property(anyFacts, fc.nat(10 * DAY), (f, later) => {
        const d = decideTracking(f, limits);
        const live = f.status !== 'ended' && f.status !== 'failed';
        const beforeEnd = f.now.getTime() < trackingEndsAt(f, limits).getTime();
        // Independent of awaitingClaim: waiting to be claimed means unattributed, and less than the setting since.
        const claimable = f.unattributedSince !== null && f.now.getTime() - f.unattributedSince.getTime() < limits.unattributedMaxMs;
        expect(awaitingClaim(f, limits)).toBe(claimable);
        expect(d.action === 'scrape').toBe(live && ((f.held && f.served) || claimable) && beforeEnd);
        expect(d.action === 'pause').toBe(live && f.held && !f.served && !claimable && beforeEnd);
        if (live && !f.held && !claimable) {
          // Untracked, unless its date's end came before its wait for a claim ran out (then that end's reason).
          const dateFirst = f.unattributedSince !== null && trackingEndsAt(f, limits).getTime() <= f.unattributedSince.getTime() + limits.unattributedMaxMs;
          if (dateFirst) expect(d).toMatchObject({ action: 'end', reason: expect.stringMatching(/^(undated|event_passed)$/), record: true });
          else expect(d).toEqual({ action: 'end', reason: 'untracked', record: true });
        }
        if (d.action === 'end') {
          expect(d.record).toBe(live);
          expect(decideTracking({ ...f, now: new Date(f.now.getTime() + later) }, limits)).toEqual(d);
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('an unattributed tracking whose date ended while it still waited keeps that reason when its wait runs out later (the counterexample of a full run)', () => {
    const f: TrackingFacts = {
      status: 'pending',
      held: false,
      served: false,
      unattributedSince: new Date('2026-10-29T12:00:00Z'),
      eventDate: null,
      scrapedThisChain: false,
      startedAt: new Date('2026-10-28T12:00:00Z'),
      now: new Date('2026-11-27T12:00:00Z'),
    };
    expect(decideTracking(f, limits)).toEqual({ action: 'end', reason: 'undated', record: true });
    expect(decideTracking({ ...f, now: new Date('2026-11-28T12:00:00Z') }, limits)).toEqual({ action: 'end', reason: 'undated', record: true });
  });
});
