// The watchlist item's view of a target snapshot and the changes it notifies on
// (src/monitors/changes.ts), rule by rule as its header states them, then as properties over
// random snapshots and random item configs.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ITEM_DEFAULTS } from '../../src/apis/watchlist/schema.ts';
import {
  detectChanges,
  MONITOR_CONFIG_FIELDS,
  monitorConfig,
  viewOf,
  type Change,
  type ChangeType,
  type MonitorConfig,
} from '../../src/monitors/changes.ts';
import type { SnapshotOffer, TargetSnapshot } from '../../src/monitors/snapshot.ts';
import { cfg, configArb, DEFAULT_CONFIG, offer, one, section, snap, snapshotArb, snapshotPairArb, TICKET_TYPES } from './fixtures.ts';

/** Matching stock per section name, sections without a match left out. */
function stocks(s: TargetSnapshot, c: MonitorConfig): Record<string, number> {
  return Object.fromEntries([...viewOf(s, c)].map(([name, v]) => [name, v.stock]));
}

/** Matching stock of a one-section snapshot (0 when nothing matches). */
function stockOf(offers: SnapshotOffer[], c: MonitorConfig, starts_at?: string | null): number {
  return viewOf(snap([section('S', offers)], starts_at), c).get('S')?.stock ?? 0;
}

const kinds = (cs: Change[]) => cs.map((c) => `${c.section}:${c.change_type}`);

describe('monitorConfig', () => {
  it('keeps exactly the monitor fields of an item', () => {
    const item = { ...ITEM_DEFAULTS, id: 7, client_id: 3, website: 'pf_01', event: 'E1', region: 'de', section: 'Floor', notes: 'x' };
    const c = monitorConfig(item as unknown as MonitorConfig);
    expect(Object.keys(c).sort()).toEqual([...MONITOR_CONFIG_FIELDS].sort());
    expect(c.section).toBe('Floor');
    expect(c.change_type).toBe('stock_increase');
    expect(c.stock_threshold_filter).toBe(1);
    expect(c).not.toHaveProperty('notes');
    // Read by the shard's poll order (issue 40), not by the rules.
    expect(c.priority).toBe(0);
  });
});

describe('rule 1: matching tickets', () => {
  const sections = snap([
    section('Floor', [offer({ quantity: 1 })]),
    section('Block A Left', [offer({ quantity: 2 })]),
    section('Block B', [offer({ quantity: 4 })]),
    section('Balcony', [offer({ quantity: 8 })]),
  ]);

  it('section: the named section only, case-insensitive, whole name; any when null', () => {
    expect(stocks(sections, cfg({ section: 'FLOOR' }))).toEqual({ Floor: 1 });
    expect(stocks(sections, cfg({ section: 'block b' }))).toEqual({ 'Block B': 4 });
    expect(stocks(sections, cfg({ section: 'Block' }))).toEqual({});
    expect(stocks(sections, cfg({ section: null }))).toEqual({ Floor: 1, 'Block A Left': 2, 'Block B': 4, Balcony: 8 });
  });

  it('keywords: section name contains any keyword, case-insensitive; any when null or empty', () => {
    expect(stocks(sections, cfg({ keywords: ['LEFT', 'balc'] }))).toEqual({ 'Block A Left': 2, Balcony: 8 });
    expect(stocks(sections, cfg({ keywords: ['block'] }))).toEqual({ 'Block A Left': 2, 'Block B': 4 });
    expect(stocks(sections, cfg({ keywords: ['stalls'] }))).toEqual({});
    expect(stocks(sections, cfg({ keywords: [] }))).toEqual({ Floor: 1, 'Block A Left': 2, 'Block B': 4, Balcony: 8 });
    expect(stocks(sections, cfg({ keywords: null }))).toEqual({ Floor: 1, 'Block A Left': 2, 'Block B': 4, Balcony: 8 });
    // Both section and keywords must hold.
    expect(stocks(sections, cfg({ section: 'floor', keywords: ['block'] }))).toEqual({});
  });

  it('date_filter: inclusive from/to on the event date; an unknown date passes', () => {
    const at = '2030-06-15T20:00:00+02:00';
    const o = [offer({ quantity: 3 })];
    expect(stockOf(o, cfg({ date_filter: { from: '2030-06-15', to: '2030-06-15' } }), at)).toBe(3);
    expect(stockOf(o, cfg({ date_filter: { from: '2030-06-01', to: null } }), at)).toBe(3);
    expect(stockOf(o, cfg({ date_filter: { to: '2030-06-30' } }), at)).toBe(3);
    expect(stockOf(o, cfg({ date_filter: {} }), at)).toBe(3);
    expect(stockOf(o, cfg({ date_filter: { from: '2030-06-16' } }), at)).toBe(0);
    expect(stockOf(o, cfg({ date_filter: { from: null, to: '2030-06-14' } }), at)).toBe(0);
    expect(stockOf(o, cfg({ date_filter: { from: '2031-01-01', to: '2031-12-31' } }), null)).toBe(3);
    // The date is the one the platform states (its local day), not the UTC day.
    expect(stockOf(o, cfg({ date_filter: { to: '2030-06-15' } }), '2030-06-15T23:30:00-05:00')).toBe(3);
  });

  it('row_filter: listed rows only, case-insensitive; offers without a row do not count', () => {
    const offers = [
      offer({ row: 'A', quantity: 2 }),
      offer({ row: 'b', quantity: 3 }),
      offer({ row: null, quantity: 4 }),
      offer({ row: 'C', quantity: 5 }),
    ];
    expect(stockOf(offers, cfg({ row_filter: ['a', 'B'] }))).toBe(5);
    expect(stockOf(offers, cfg({ row_filter: ['Z'] }))).toBe(0);
    expect(stockOf([offer({ row: null, quantity: 4 })], cfg({ row_filter: ['A'] }))).toBe(0);
    expect(stockOf(offers, cfg({ row_filter: null }))).toBe(14);
  });

  const TYPE_FLAGS = {
    standard: 'standard_tickets',
    resale: 'resale_tickets',
    platinum: 'platinum_tickets',
    general_admission: 'general_admission_tickets',
  } as const;
  const typed = TICKET_TYPES.map((t, i) => offer({ ticket_type: t, quantity: 10 ** i }));
  const noTypes = cfg({ standard_tickets: false, resale_tickets: false, platinum_tickets: false, general_admission_tickets: false });

  it.each(TICKET_TYPES.map((t, i) => [TYPE_FLAGS[t], t, 10 ** i] as const))('ticket type: %s enables %s tickets only', (flag, _t, q) => {
    expect(stockOf(typed, { ...noTypes, [flag]: true })).toBe(q);
    // Every other type on, this one off: all but this type.
    expect(stockOf(typed, cfg({ [flag]: false }))).toBe(1111 - q);
  });

  it('ticket type: none enabled matches nothing', () => {
    expect(stockOf(typed, noTypes)).toBe(0);
    expect(viewOf(one('S', ...typed), noTypes).size).toBe(0);
  });

  it('no_restricted_view excludes restricted-view tickets', () => {
    const offers = [offer({ quantity: 2 }), offer({ quantity: 5, restricted_view: true })];
    expect(stockOf(offers, cfg({ no_restricted_view: true }))).toBe(2);
    expect(stockOf(offers, cfg({ no_restricted_view: false }))).toBe(7);
  });

  it('no_accessibility excludes accessibility tickets', () => {
    const offers = [offer({ quantity: 2 }), offer({ quantity: 5, accessible: true })];
    expect(stockOf(offers, cfg({ no_accessibility: true }))).toBe(2);
    expect(stockOf(offers, cfg({ no_accessibility: false }))).toBe(7);
  });

  it('no_presale excludes presale tickets', () => {
    const offers = [offer({ quantity: 2 }), offer({ quantity: 5, presale: true })];
    expect(stockOf(offers, cfg({ no_presale: true }))).toBe(2);
    expect(stockOf(offers, cfg({ no_presale: false }))).toBe(7);
  });

  it('the exclusion flags are independent of each other', () => {
    const offers = [offer({ quantity: 1, restricted_view: true }), offer({ quantity: 2, accessible: true }), offer({ quantity: 4, presale: true })];
    expect(stockOf(offers, cfg({ no_restricted_view: true, no_presale: true }))).toBe(2);
    expect(stockOf(offers, cfg({ no_restricted_view: true, no_accessibility: true, no_presale: true }))).toBe(0);
  });

  it('min_price_filter / max_price_filter: inclusive bounds, each optional', () => {
    const offers = [offer({ price: 10, quantity: 1 }), offer({ price: 20, quantity: 2 }), offer({ price: 30, quantity: 4 }), offer({ price: 40, quantity: 8 })];
    expect(stockOf(offers, cfg({ min_price_filter: 20, max_price_filter: 30 }))).toBe(6);
    expect(stockOf(offers, cfg({ min_price_filter: 20.01, max_price_filter: 29.99 }))).toBe(0);
    expect(stockOf(offers, cfg({ min_price_filter: 30 }))).toBe(12);
    expect(stockOf(offers, cfg({ max_price_filter: 20 }))).toBe(3);
    expect(stockOf(offers, cfg({ min_price_filter: 0, max_price_filter: 10 }))).toBe(1);
    expect(stockOf(offers, cfg({ min_price_filter: null, max_price_filter: null }))).toBe(15);
  });

  it('seat_quantity: an offer counts when its block (not its quantity) is at least seat_quantity', () => {
    const offers = [offer({ quantity: 3, block: 1 }), offer({ quantity: 2, block: 2 }), offer({ quantity: 4, block: 4 })];
    expect(stockOf(offers, cfg({ seat_quantity: 1 }))).toBe(9);
    expect(stockOf(offers, cfg({ seat_quantity: 2 }))).toBe(6);
    expect(stockOf(offers, cfg({ seat_quantity: 3 }))).toBe(4);
    expect(stockOf(offers, cfg({ seat_quantity: 4 }))).toBe(4);
    expect(stockOf(offers, cfg({ seat_quantity: 5 }))).toBe(0);
  });
});

describe('rule 2: section view', () => {
  it('stock is the sum of matching tickets, min_price the lowest, avg_price the weighted mean in cents', () => {
    const s = one('Floor', offer({ price: 10, quantity: 1 }), offer({ price: 20, quantity: 2 }), offer({ price: 5, quantity: 9, presale: true }));
    expect(viewOf(s, cfg({ no_presale: true })).get('Floor')).toEqual({ stock: 3, min_price: 10, avg_price: 16.67, currency: 'EUR' });
    expect(viewOf(s, cfg()).get('Floor')).toEqual({ stock: 12, min_price: 5, avg_price: 7.92, currency: 'EUR' });
  });

  it('avg_price is quantity-weighted, not the mean of the offer prices', () => {
    const s = one('Floor', offer({ price: 19.99, quantity: 3 }), offer({ price: 25.5, quantity: 1 }));
    // (3 * 19.99 + 25.5) / 4 = 21.3675; the plain mean would be 22.745.
    expect(viewOf(s, cfg()).get('Floor')).toEqual({ stock: 4, min_price: 19.99, avg_price: 21.37, currency: 'EUR' });
  });

  it('a section without a matching ticket has no view; the currency comes from the section', () => {
    const s = snap([section('Floor', [offer({ ticket_type: 'resale' })]), section('Pit', [offer({ price: 7, quantity: 1 })], 'GBP'), section('Empty', [])]);
    const v = viewOf(s, cfg({ resale_tickets: false }));
    expect([...v.keys()]).toEqual(['Pit']);
    expect(v.get('Pit')).toEqual({ stock: 1, min_price: 7, avg_price: 7, currency: 'GBP' });
  });
});

describe('rule 3: changes', () => {
  const at = (price: number, quantity: number, more: Partial<SnapshotOffer> = {}) => offer({ price, quantity, ...more });

  it('stock_increase: stock went up', () => {
    const changes = detectChanges(one('Floor', at(50, 2)), one('Floor', at(50, 2), at(60, 3)), cfg({ change_type: 'stock_increase' }));
    expect(changes).toEqual([
      {
        section: 'Floor',
        change_type: 'stock_increase',
        currency: 'EUR',
        before: { stock: 2, min_price: 50, avg_price: 50 },
        after: { stock: 5, min_price: 50, avg_price: 56 },
      },
    ]);
  });

  it('stock_increase: a section appearing counts from 0', () => {
    const before = one('Floor', at(50, 2));
    const after = snap([section('Floor', [at(50, 2)]), section('Pit', [at(80, 3)], 'GBP')]);
    const expected: Change[] = [
      { section: 'Pit', change_type: 'stock_increase', currency: 'GBP', before: { stock: 0, min_price: null, avg_price: null }, after: { stock: 3, min_price: 80, avg_price: 80 } },
    ];
    expect(detectChanges(before, after, cfg({ change_type: 'stock_increase' }))).toEqual(expected);
    // No price change for a section that had no stock before, even when all kinds are wanted.
    expect(detectChanges(before, after, cfg({ change_type: null }))).toEqual(expected);
  });

  it('stock_increase: a section whose tickets start matching counts from 0', () => {
    const before = one('Floor', at(50, 2, { presale: true }));
    const after = one('Floor', at(50, 2));
    expect(kinds(detectChanges(before, after, cfg({ no_presale: true })))).toEqual(['Floor:stock_increase']);
    expect(detectChanges(before, after, cfg({ no_presale: false }))).toEqual([]);
  });

  it('stock going down or staying the same notifies nothing under stock_increase', () => {
    const c = cfg({ change_type: 'stock_increase' });
    expect(detectChanges(one('Floor', at(50, 5)), one('Floor', at(50, 4)), c)).toEqual([]);
    expect(detectChanges(one('Floor', at(50, 5)), one('Floor', at(50, 2), at(50, 3)), c)).toEqual([]);
  });

  it('a section selling out notifies nothing under stock_increase (nor any other kind)', () => {
    const before = snap([section('Floor', [at(50, 3)]), section('Pit', [at(20, 1)])]);
    const soldOut = snap([section('Floor', []), section('Pit', [at(20, 1)])]);
    const gone = snap([section('Pit', [at(20, 1)])]);
    for (const change_type of [null, 'stock_increase', 'price_decrease', 'price_increase'] as const) {
      expect(detectChanges(before, soldOut, cfg({ change_type }))).toEqual([]);
      expect(detectChanges(before, gone, cfg({ change_type }))).toEqual([]);
    }
  });

  it('price_decrease: min_price went down with stock on both sides', () => {
    const changes = detectChanges(one('Floor', at(50, 2)), one('Floor', at(40, 2)), cfg({ change_type: 'price_decrease' }));
    expect(changes).toEqual([
      {
        section: 'Floor',
        change_type: 'price_decrease',
        currency: 'EUR',
        before: { stock: 2, min_price: 50, avg_price: 50 },
        after: { stock: 2, min_price: 40, avg_price: 40 },
      },
    ]);
  });

  it('price_increase: min_price went up with stock on both sides', () => {
    const changes = detectChanges(one('Floor', at(50, 1), at(70, 1)), one('Floor', at(60, 1), at(70, 1)), cfg({ change_type: 'price_increase' }));
    expect(changes).toEqual([
      {
        section: 'Floor',
        change_type: 'price_increase',
        currency: 'EUR',
        before: { stock: 2, min_price: 50, avg_price: 60 },
        after: { stock: 2, min_price: 60, avg_price: 65 },
      },
    ]);
  });

  it('price changes need stock on both sides: none from or to an empty section', () => {
    for (const change_type of ['price_decrease', 'price_increase'] as const) {
      const c = cfg({ change_type });
      expect(detectChanges(snap([]), one('Floor', at(10, 1)), c)).toEqual([]);
      expect(detectChanges(one('Floor', at(10, 1)), snap([]), c)).toEqual([]);
      expect(detectChanges(one('Floor'), one('Floor', at(90, 1)), c)).toEqual([]);
      expect(detectChanges(one('Floor', at(90, 1)), one('Floor'), c)).toEqual([]);
    }
  });

  it('only min_price counts: an avg_price move alone is no price change', () => {
    const changes = detectChanges(one('Floor', at(50, 1), at(90, 1)), one('Floor', at(50, 1), at(60, 1)), cfg({ change_type: null }));
    expect(changes).toEqual([]);
  });

  it('change_type null yields all kinds that happened, per section in name order', () => {
    const before = snap([section('Pit', [at(30, 1)]), section('Floor', [at(50, 2)])]);
    const after = snap([section('Pit', [at(35, 1)]), section('Floor', [at(50, 2), at(30, 1)])]);
    expect(kinds(detectChanges(before, after, cfg({ change_type: null })))).toEqual([
      'Floor:stock_increase',
      'Floor:price_decrease',
      'Pit:price_increase',
    ]);
  });

  it('a specific change_type yields only its kind', () => {
    const before = snap([section('Pit', [at(30, 1)]), section('Floor', [at(50, 2)])]);
    const after = snap([section('Pit', [at(35, 1)]), section('Floor', [at(50, 2), at(30, 1)])]);
    expect(kinds(detectChanges(before, after, cfg({ change_type: 'stock_increase' })))).toEqual(['Floor:stock_increase']);
    expect(kinds(detectChanges(before, after, cfg({ change_type: 'price_decrease' })))).toEqual(['Floor:price_decrease']);
    expect(kinds(detectChanges(before, after, cfg({ change_type: 'price_increase' })))).toEqual(['Pit:price_increase']);
  });

  it('changes are judged on the matching tickets only', () => {
    // A cheaper resale listing appears: nothing for a standard-only item.
    const before = one('Floor', at(50, 2));
    const after = one('Floor', at(50, 2), at(10, 4, { ticket_type: 'resale' }));
    expect(detectChanges(before, after, cfg({ resale_tickets: false }))).toEqual([]);
    expect(kinds(detectChanges(before, after, cfg({ resale_tickets: true })))).toEqual(['Floor:stock_increase', 'Floor:price_decrease']);
  });
});

describe('rule 4: thresholds after the change', () => {
  const up = (to: number) => detectChangesTo(to);
  function detectChangesTo(to: number, c: Partial<MonitorConfig> = {}) {
    return detectChanges(one('Floor', offer({ quantity: 1 })), one('Floor', offer({ quantity: to })), cfg({ change_type: 'stock_increase', ...c }));
  }

  it('stock_threshold_filter: stock after at least the bound (inclusive)', () => {
    expect(detectChangesTo(4, { stock_threshold_filter: 5 })).toEqual([]);
    expect(kinds(detectChangesTo(5, { stock_threshold_filter: 5 }))).toEqual(['Floor:stock_increase']);
    expect(kinds(detectChangesTo(6, { stock_threshold_filter: 5 }))).toEqual(['Floor:stock_increase']);
  });

  it('stock_threshold_filter_max: stock after at most the bound (inclusive)', () => {
    expect(detectChangesTo(6, { stock_threshold_filter_max: 5 })).toEqual([]);
    expect(kinds(detectChangesTo(5, { stock_threshold_filter_max: 5 }))).toEqual(['Floor:stock_increase']);
    expect(kinds(detectChangesTo(3, { stock_threshold_filter: 3, stock_threshold_filter_max: 3 }))).toEqual(['Floor:stock_increase']);
  });

  it('stock thresholds look at the stock after the change, not before', () => {
    // Before: 1 (below 5), after: 5. Before: 8 (above max 6) is irrelevant too.
    expect(kinds(detectChangesTo(5, { stock_threshold_filter: 5 }))).toEqual(['Floor:stock_increase']);
    const c = cfg({ change_type: 'price_decrease', stock_threshold_filter_max: 6 });
    expect(kinds(detectChanges(one('Floor', offer({ price: 50, quantity: 8 })), one('Floor', offer({ price: 40, quantity: 6 })), c))).toEqual(['Floor:price_decrease']);
    expect(detectChanges(one('Floor', offer({ price: 50, quantity: 6 })), one('Floor', offer({ price: 40, quantity: 7 })), c)).toEqual([]);
  });

  it('null stock thresholds are open', () => {
    expect(kinds(up(1_000_000))).toEqual(['Floor:stock_increase']);
    expect(kinds(detectChangesTo(2, { stock_threshold_filter: null, stock_threshold_filter_max: null }))).toEqual(['Floor:stock_increase']);
  });

  it('min_avg_price_threshold / max_avg_price_threshold: avg_price after, inclusive', () => {
    const before = one('Floor', offer({ price: 50, quantity: 1 }));
    // After: 1 @ 40 + 1 @ 60 + new 2 @ 50 -> avg 50, min 40.
    const after = one('Floor', offer({ price: 40, quantity: 1 }), offer({ price: 60, quantity: 1 }), offer({ price: 50, quantity: 2 }));
    const run = (c: Partial<MonitorConfig>) => kinds(detectChanges(before, after, cfg({ change_type: null, ...c })));
    expect(run({})).toEqual(['Floor:stock_increase', 'Floor:price_decrease']);
    expect(run({ min_avg_price_threshold: 50 })).toEqual(['Floor:stock_increase', 'Floor:price_decrease']);
    expect(run({ min_avg_price_threshold: 50.01 })).toEqual([]);
    expect(run({ max_avg_price_threshold: 50 })).toEqual(['Floor:stock_increase', 'Floor:price_decrease']);
    expect(run({ max_avg_price_threshold: 49.99 })).toEqual([]);
    expect(run({ min_avg_price_threshold: 50, max_avg_price_threshold: 50 })).toEqual(['Floor:stock_increase', 'Floor:price_decrease']);
    expect(run({ min_avg_price_threshold: null, max_avg_price_threshold: null })).toEqual(['Floor:stock_increase', 'Floor:price_decrease']);
  });

  it('the avg threshold compares the avg_price after, not before', () => {
    // avg before 100, after 40: a max of 50 lets the decrease through, a min of 60 does not.
    const before = one('Floor', offer({ price: 100, quantity: 1 }));
    const after = one('Floor', offer({ price: 40, quantity: 1 }));
    expect(kinds(detectChanges(before, after, cfg({ max_avg_price_threshold: 50 })))).toEqual(['Floor:price_decrease']);
    expect(detectChanges(before, after, cfg({ min_avg_price_threshold: 60 }))).toEqual([]);
  });

  it('the default item (ITEM_DEFAULTS, stock_threshold_filter 1) never notifies a sold-out state', () => {
    expect(DEFAULT_CONFIG.stock_threshold_filter).toBe(1);
    expect(DEFAULT_CONFIG.change_type).toBe('stock_increase');
    const full = one('Floor', offer({ quantity: 4 }));
    expect(detectChanges(full, one('Floor'), DEFAULT_CONFIG)).toEqual([]);
    expect(detectChanges(full, snap([]), DEFAULT_CONFIG)).toEqual([]);
    expect(detectChanges(snap([]), snap([]), DEFAULT_CONFIG)).toEqual([]);
    // Only non-standard tickets left is sold out for the default item.
    expect(detectChanges(full, one('Floor', offer({ quantity: 9, ticket_type: 'resale' })), DEFAULT_CONFIG)).toEqual([]);
    // Even with every kind of change wanted.
    expect(detectChanges(full, one('Floor'), { ...DEFAULT_CONFIG, change_type: null })).toEqual([]);
    // And it does notify a restock from sold out.
    expect(detectChanges(one('Floor'), full, DEFAULT_CONFIG)).toEqual([
      { section: 'Floor', change_type: 'stock_increase', currency: 'EUR', before: { stock: 0, min_price: null, avg_price: null }, after: { stock: 4, min_price: 50, avg_price: 50 } },
    ]);
  });
});

describe('properties', () => {
  const RUNS = { numRuns: 400 };
  const ORDER: ChangeType[] = ['stock_increase', 'price_decrease', 'price_increase'];
  const byKey = (a: Change, b: Change) => (a.section < b.section ? -1 : a.section > b.section ? 1 : ORDER.indexOf(a.change_type) - ORDER.indexOf(b.change_type));

  it('detectChanges never throws and returns well-formed changes', () => {
    fc.assert(
      fc.property(snapshotPairArb, configArb, ([a, b], c) => {
        const changes = detectChanges(a, b, c);
        expect(Array.isArray(changes)).toBe(true);
        for (const ch of changes) {
          expect(ORDER).toContain(ch.change_type);
          expect(ch.after.stock).toBeGreaterThan(0);
          expect(ch.after.min_price).not.toBeNull();
          expect(ch.after.avg_price).not.toBeNull();
        }
      }),
      RUNS,
    );
  });

  it('detectChanges(s, s, cfg) is empty', () => {
    fc.assert(
      fc.property(snapshotArb, configArb, (s, c) => {
        expect(detectChanges(s, s, c)).toEqual([]);
        expect(detectChanges(s, structuredClone(s), c)).toEqual([]);
      }),
      RUNS,
    );
  });

  it('change_type null yields the union of the three single-type results', () => {
    fc.assert(
      fc.property(snapshotPairArb, configArb, ([a, b], c) => {
        const all = detectChanges(a, b, { ...c, change_type: null });
        const union = ORDER.flatMap((change_type) => {
          const one = detectChanges(a, b, { ...c, change_type });
          for (const ch of one) expect(ch.change_type).toBe(change_type);
          return one;
        });
        expect(all).toEqual([...union].sort(byKey));
      }),
      RUNS,
    );
  });

  it('every reported change is within the stock and avg-price thresholds after it', () => {
    const inside = (v: number | null, lo: number | null, hi: number | null) => v !== null && (lo === null || v >= lo) && (hi === null || v <= hi);
    fc.assert(
      fc.property(snapshotPairArb, configArb, ([a, b], c) => {
        for (const ch of detectChanges(a, b, c)) {
          expect(inside(ch.after.stock, c.stock_threshold_filter, c.stock_threshold_filter_max)).toBe(true);
          expect(inside(ch.after.avg_price, c.min_avg_price_threshold, c.max_avg_price_threshold)).toBe(true);
        }
      }),
      RUNS,
    );
  });

  it('each change is what its kind says, with before/after equal to the item views', () => {
    fc.assert(
      fc.property(snapshotPairArb, configArb, ([a, b], c) => {
        const va = viewOf(a, c);
        const vb = viewOf(b, c);
        for (const ch of detectChanges(a, b, c)) {
          const prev = va.get(ch.section);
          const next = vb.get(ch.section)!;
          expect(ch.after).toEqual({ stock: next.stock, min_price: next.min_price, avg_price: next.avg_price });
          expect(ch.before).toEqual(prev ? { stock: prev.stock, min_price: prev.min_price, avg_price: prev.avg_price } : { stock: 0, min_price: null, avg_price: null });
          if (ch.change_type === 'stock_increase') expect(ch.after.stock).toBeGreaterThan(ch.before.stock);
          if (ch.change_type === 'price_decrease') expect(ch.after.min_price!).toBeLessThan(ch.before.min_price!);
          if (ch.change_type === 'price_increase') expect(ch.after.min_price!).toBeGreaterThan(ch.before.min_price!);
        }
      }),
      RUNS,
    );
  });

  it('the default item never notifies a section it sees no stock in', () => {
    fc.assert(
      fc.property(snapshotPairArb, fc.constantFrom<ChangeType | null>(null, ...ORDER), ([a, b], change_type) => {
        for (const ch of detectChanges(a, b, { ...DEFAULT_CONFIG, change_type })) expect(ch.after.stock).toBeGreaterThanOrEqual(1);
      }),
      RUNS,
    );
  });

  it('viewOf agrees with a direct reading of rule 1 and 2', () => {
    // An independent oracle, written from the header comment.
    function oracle(s: TargetSnapshot, c: MonitorConfig): Map<string, { stock: number; min_price: number; avg_price: number }> {
      const out = new Map<string, { stock: number; min_price: number; avg_price: number }>();
      const day = s.starts_at?.slice(0, 10);
      if (day && c.date_filter?.from && day < c.date_filter.from) return out;
      if (day && c.date_filter?.to && day > c.date_filter.to) return out;
      const enabled: Record<string, boolean> = {
        standard: c.standard_tickets,
        resale: c.resale_tickets,
        platinum: c.platinum_tickets,
        general_admission: c.general_admission_tickets,
      };
      for (const sec of s.sections) {
        const name = sec.name.toLowerCase();
        if (c.section !== null && c.section.toLowerCase() !== name) continue;
        if (c.keywords && c.keywords.length > 0 && !c.keywords.some((k) => name.includes(k.toLowerCase()))) continue;
        const matching = sec.offers.filter(
          (o) =>
            enabled[o.ticket_type] &&
            !(c.no_restricted_view && o.restricted_view) &&
            !(c.no_accessibility && o.accessible) &&
            !(c.no_presale && o.presale) &&
            (c.min_price_filter === null || o.price >= c.min_price_filter) &&
            (c.max_price_filter === null || o.price <= c.max_price_filter) &&
            o.block >= c.seat_quantity &&
            (!c.row_filter || c.row_filter.length === 0 || (o.row !== null && c.row_filter.some((r) => r.toLowerCase() === o.row!.toLowerCase()))),
        );
        const stock = matching.reduce((n, o) => n + o.quantity, 0);
        if (stock === 0) continue;
        const total = matching.reduce((n, o) => n + o.price * o.quantity, 0);
        out.set(sec.name, { stock, min_price: Math.min(...matching.map((o) => o.price)), avg_price: Math.round((total / stock) * 100) / 100 });
      }
      return out;
    }
    fc.assert(
      fc.property(snapshotArb, configArb, (s, c) => {
        const got = new Map([...viewOf(s, c)].map(([k, v]) => [k, { stock: v.stock, min_price: v.min_price, avg_price: v.avg_price }]));
        expect(got).toEqual(oracle(s, c));
      }),
      RUNS,
    );
  });
});
