// A failed part is unknown, not zero (issue 24), on pf_01's real scrape path: the simulator's
// two data arms (pure functions of an inventory) read by the adapter's own rules (domFromArms,
// parsePf01), reduced to snapshots and compared as the poller does (carryUnknown, then
// detectChanges). The inventory on the platform is the ground truth each test sets; with it
// unchanged, an arm failing and recovering must notify nothing, and a real change must be
// notified once, against what was last read.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { detectChanges } from '../../src/monitors/changes.ts';
import { carryUnknown, toSnapshot, type TargetSnapshot } from '../../src/monitors/snapshot.ts';
import { parseEventRef } from '../../src/platform/event-ref.ts';
import { domFromArms, parsePf01 } from '../../src/scrapers/platforms/pf_01.ts';
import { availabilityArm, seatsArm } from '../../src/simulator/platforms/pf_01.ts';
import { simEventInputSchema, type SimEvent } from '../../src/simulator/state.ts';
import { inventory } from '../scrapers/inventory-arbitrary.ts';
import { cfg } from './fixtures.ts';

const KEY = 'UnknownParts0001';
const parsed = parseEventRef('pf_01', KEY, 'uk');
if (!parsed.ok) throw new Error(parsed.message);
const REF = parsed.ref;

type Arms = 'ok' | 'v1 down' | 'v2 down';

function event(input: object): SimEvent {
  return { ...simEventInputSchema.parse({ region: 'uk', ...input }), platform: 'pf_01', key: KEY, hits: 0, reads: 0, updated_at: '' };
}

/** What the poller would build from one poll of this inventory with these arms answering. */
function scrape(ev: SimEvent, arms: Arms): TargetSnapshot {
  // JSON round trip: the adapter reads what came over the wire, not the simulator's objects.
  const wire = (v: object) => JSON.parse(JSON.stringify(v)) as Record<string, unknown>;
  const data = parsePf01(REF, domFromArms(arms === 'v2 down' ? null : wire(seatsArm(ev)), arms === 'v1 down' ? null : wire(availabilityArm(ev))));
  return toSnapshot(data);
}

/** The poller's loop over a sequence of polls: each snapshot completed from the last, changes between them. */
function poll(sequence: [SimEvent, Arms][], item = cfg()) {
  let last: TargetSnapshot | null = null;
  const changes = [];
  for (const [ev, arms] of sequence) {
    const next = carryUnknown(last, scrape(ev, arms));
    if (last) changes.push(...detectChanges(last, next, item));
    last = next;
  }
  return { changes, last: last! };
}

const VENUE = {
  sections: [
    { name: 'Floor', price: 120, stock: 12 },
    { name: 'Floor', price: 300, stock: 2, ticket_type: 'platinum', accessible: true },
    { name: 'Floor', price: 150, stock: 4, ticket_type: 'resale' },
    { name: 'Balcony', price: 60, stock: 3, restricted_view: true },
    { name: 'Resale Block', price: 99.5, stock: 6, ticket_type: 'resale' },
    { name: 'Standing', price: 45, stock: 80, ticket_type: 'general_admission' },
  ],
};

describe('a failed part is unknown, not zero', () => {
  it('the seat arm failing and recovering, nothing changed on the platform: no notification (today: price and stock changes)', () => {
    const ev = event(VENUE);
    expect(poll([[ev, 'ok'], [ev, 'v2 down'], [ev, 'ok']]).changes).toEqual([]);
  });

  it('the resale/standing arm failing and recovering, nothing changed: no notification (today: a false stock_increase)', () => {
    const ev = event(VENUE);
    expect(poll([[ev, 'ok'], [ev, 'v1 down'], [ev, 'ok']]).changes).toEqual([]);
    expect(poll([[ev, 'ok'], [ev, 'v2 down'], [ev, 'v1 down'], [ev, 'ok']]).changes).toEqual([]);
  });

  it('a partial snapshot never moves the baseline of what it did not read: a change made meanwhile is notified once, against the last read', () => {
    const before = event(VENUE);
    const after = event({ sections: VENUE.sections.map((s) => (s.name === 'Resale Block' ? { ...s, stock: 10 } : s)) });
    const { changes } = poll([[before, 'ok'], [after, 'v1 down'], [after, 'v1 down'], [after, 'ok']]);
    expect(changes).toEqual([
      { section: 'Resale Block', change_type: 'stock_increase', currency: 'EUR', before: { stock: 6, min_price: 99.5, avg_price: 99.5 }, after: { stock: 10, min_price: 99.5, avg_price: 99.5 } },
    ]);
  });

  it('what the partial snapshot did read is still compared: more seats while the resale arm is down are notified at once', () => {
    const before = event(VENUE);
    const after = event({ sections: VENUE.sections.map((s) => (s.name === 'Balcony' ? { ...s, stock: 7 } : s)) });
    const { changes } = poll([[before, 'ok'], [after, 'v1 down'], [after, 'ok']]);
    expect(changes.map((c) => [c.section, c.change_type, c.before.stock, c.after.stock])).toEqual([['Balcony', 'stock_increase', 3, 7]]);
  });

  it('a first snapshot that is partial says so, and its unknown kinds are learnt at the next full read without a notification', () => {
    const ev = event(VENUE);
    const first = scrape(ev, 'v1 down');
    expect(first.unknown).toEqual(['general_admission', 'resale']);
    expect(first.sections.flatMap((s) => s.offers).some((o) => o.ticket_type === 'resale')).toBe(false);
    expect(poll([[ev, 'v1 down'], [ev, 'ok']]).changes).toEqual([]);
    expect(poll([[ev, 'v1 down'], [ev, 'ok']]).last.unknown).toBeUndefined();
  });

  it('a full snapshot has no unknown field, so its hash is what it was before this change', () => {
    expect('unknown' in scrape(event(VENUE), 'ok')).toBe(false);
  });

  it('property: with the inventory unchanged, no sequence of arm failures and recoveries notifies anything', () => {
    fc.assert(
      fc.property(inventory, fc.array(fc.constantFrom<Arms>('ok', 'v1 down', 'v2 down'), { minLength: 2, maxLength: 8 }), (inv, arms) => {
        const ev = event({ sections: inv.sections, currency: inv.currency });
        // At least one full read among the polls, so the check is not over snapshots that know nothing.
        const sequence: [SimEvent, Arms][] = [[ev, 'ok'], ...arms.map((a): [SimEvent, Arms] => [ev, a])];
        expect(poll(sequence).changes).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  it('property: whatever the arms do in between, the state after a full read is the platform state (nothing lost, nothing carried wrongly)', () => {
    fc.assert(
      fc.property(inventory, inventory, fc.array(fc.constantFrom<Arms>('ok', 'v1 down', 'v2 down'), { maxLength: 6 }), (a, b, arms) => {
        const before = event({ sections: a.sections, currency: a.currency });
        const after = event({ sections: b.sections, currency: b.currency });
        const sequence: [SimEvent, Arms][] = [[before, 'ok'], ...arms.map((x): [SimEvent, Arms] => [after, x]), [after, 'ok']];
        expect(poll(sequence).last).toEqual(scrape(after, 'ok'));
      }),
      { numRuns: 300 },
    );
  });
});

describe('every ticket kind on pf_01 reaches the monitor with its flags (issue 24)', () => {
  const mixed = (resale: number, seats = 20, extra: object = {}) =>
    event({
      sections: [
        { name: 'Floor', price: 120, stock: seats },
        { name: 'Floor', price: 95, stock: resale, ticket_type: 'resale', ...extra },
        { name: 'Floor', price: 40, stock: 30, ticket_type: 'general_admission', presale: true },
      ],
    });
  const resaleOnly = cfg({ standard_tickets: false, platinum_tickets: false, general_admission_tickets: false, resale_tickets: true });
  const summary = (changes: ReturnType<typeof detectChanges>) => changes.map((c) => [c.section, c.change_type, c.before.stock, c.after.stock]);

  it('resale tickets raised in a section that still has seats are notified to a resale-only item (today: nothing)', () => {
    expect(summary(poll([[mixed(4), 'ok'], [mixed(12), 'ok']], resaleOnly).changes)).toEqual([['Floor', 'stock_increase', 4, 12]]);
  });

  it('the last seat selling does not make the resale tickets "appear" (today: a stock_increase for a resale-only item)', () => {
    expect(poll([[mixed(4), 'ok'], [mixed(4, 0), 'ok']], resaleOnly).changes).toEqual([]);
  });

  it('the flags of resale lots and standing counts apply as on every platform', () => {
    const noRestricted = cfg({ ...resaleOnly, no_restricted_view: true });
    expect(poll([[mixed(4, 20, { restricted_view: true }), 'ok'], [mixed(12, 20, { restricted_view: true }), 'ok']], noRestricted).changes).toEqual([]);
    expect(summary(poll([[mixed(4), 'ok'], [mixed(12), 'ok']], noRestricted).changes)).toEqual([['Floor', 'stock_increase', 4, 12]]);
    const standing = (n: number) => event({ sections: [{ name: 'Floor', price: 120, stock: 20 }, { name: 'Floor', price: 40, stock: n, ticket_type: 'general_admission', presale: true }] });
    const gaOnly = cfg({ standard_tickets: false, platinum_tickets: false, resale_tickets: false, general_admission_tickets: true });
    expect(summary(poll([[standing(30), 'ok'], [standing(50), 'ok']], gaOnly).changes)).toEqual([['Floor', 'stock_increase', 30, 50]]);
    expect(poll([[standing(30), 'ok'], [standing(50), 'ok']], cfg({ ...gaOnly, no_presale: true })).changes).toEqual([]);
  });

  it('the seat arm down, resale and standing are still read whole: a resale raise is notified at once', () => {
    expect(scrape(mixed(4), 'v2 down').unknown).toEqual(['platinum', 'standard']);
    const { changes } = poll([[mixed(4), 'ok'], [mixed(12), 'v2 down'], [mixed(12), 'ok']], resaleOnly);
    expect(summary(changes)).toEqual([['Floor', 'stock_increase', 4, 12]]);
  });

  it('prices of resale lots are their own, not the section lowest: a resale price drop is a price_decrease', () => {
    const priced = (p: number) => event({ sections: [{ name: 'Floor', price: 120, stock: 20 }, { name: 'Floor', price: p, stock: 4, ticket_type: 'resale' }] });
    const { changes } = poll([[priced(150), 'ok'], [priced(130), 'ok']], resaleOnly);
    expect(changes.map((c) => [c.change_type, c.before.min_price, c.after.min_price])).toEqual([['price_decrease', 150, 130]]);
  });
});
