// The cooldown rule (issues 24 and 38, src/monitors/cooldown.ts) on its own, without a database:
// hand cases for each clause of docs/watchlist.md "Cooldowns", and a property that runs random
// histories of one section (two ticket kinds, either arm of a pf_01-like read failing now and
// then) through applyCooldown (as record-poll does, rows carried from poll to poll) against the
// rule as the document states it, written here step by step on the histories' own terms: the
// oracle never calls the code's views or comparisons (viewOf, sectionChanges, detectChanges).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { detectChanges, type Change, type MonitorConfig } from '../../src/monitors/changes.ts';
import { applyCooldown, type CooldownState } from '../../src/monitors/cooldown.ts';
import type { TargetSnapshot } from '../../src/monitors/snapshot.ts';
import { cfg, offer, section, snap } from './fixtures.ts';

const S = 'Floor';
/** A snapshot with `stock` tickets of one offer at `price` in Floor (none: the section is sold out). */
const state = (stock: number, price = 50): TargetSnapshot => snap([section(S, stock > 0 ? [offer({ price, quantity: stock, block: stock })] : [])]);

interface Step {
  at: number;
  snapshot: TargetSnapshot;
}

/** Polls one item through a history as record-poll does: changes from the last poll, rows carried. */
function run(item: MonitorConfig, history: Step[], muted: (at: number) => boolean = () => false) {
  let rows: CooldownState[] = [];
  const sent: { at: number; change: Change; release: number | null }[] = [];
  for (let i = 1; i < history.length; i++) {
    const { at, snapshot } = history[i]!;
    const changes = muted(at) ? [] : detectChanges(history[i - 1]!.snapshot, snapshot, item);
    const d = applyCooldown(item, changes, rows, history[i - 1]!.snapshot, snapshot, at, muted(at));
    sent.push(...d.notify.map((n) => ({ at, ...n })));
    const bySection = new Map(rows.map((r) => [r.section, r]));
    for (const w of d.write) bySection.set(w.section, w);
    for (const r of d.remove) bySection.delete(r);
    rows = [...bySection.values()];
  }
  return { sent, rows };
}

const brief = (sent: { at: number; change: Change }[]) => sent.map((s) => [s.at, s.change.change_type, s.change.before.stock, s.change.after.stock]);

describe('cooldown_seconds', () => {
  const cooled = cfg({ cooldown_seconds: 10 });

  it('0 (the default) notifies every change, as before', () => {
    const history = [0, 1, 2, 3].map((at, i) => ({ at: at * 1000, snapshot: state(10 + i) }));
    expect(brief(run(cfg({ cooldown_seconds: 0 }), history).sent)).toEqual([
      [1000, 'stock_increase', 10, 11],
      [2000, 'stock_increase', 11, 12],
      [3000, 'stock_increase', 12, 13],
    ]);
    expect(run(cfg({ cooldown_seconds: 0 }), history).rows).toEqual([]);
  });

  it('holds the changes of a cooling section and sends one at the end, before = the state the held change came from, after = now', () => {
    const history = [
      { at: 0, snapshot: state(10) },
      { at: 1_000, snapshot: state(12) }, // notified; cools until 11 s
      { at: 3_000, snapshot: state(14) }, // held, detected from 12
      { at: 5_000, snapshot: state(16) }, // held already
      { at: 9_000, snapshot: state(16) },
      { at: 11_500, snapshot: state(16) }, // the end: 12 -> 16, and a new cooldown until 21.5 s
      { at: 13_000, snapshot: state(16) },
    ];
    const { sent, rows } = run(cooled, history);
    expect(brief(sent)).toEqual([
      [1_000, 'stock_increase', 10, 12],
      [11_500, 'stock_increase', 12, 16],
    ]);
    expect(sent[1]!.release).toBe(1_000);
    expect(rows).toEqual([{ section: S, notified: { stock: 16, min_price: 50, avg_price: 50, currency: 'EUR' }, notifiedAt: 11_500, held: false, heldFrom: null }]);
  });

  it('sends nothing at the end when the held change has reverted (a cart hold released)', () => {
    const history = [
      { at: 0, snapshot: state(10) },
      { at: 1_000, snapshot: state(12) },
      { at: 2_000, snapshot: state(9) },
      { at: 4_000, snapshot: state(12) }, // held: 9 -> 12 is an up-tick
      { at: 6_000, snapshot: state(9) }, // and it goes again
      { at: 12_000, snapshot: state(9) }, // the end: 9 against 9
      { at: 13_000, snapshot: state(9) },
    ];
    const { sent, rows } = run(cooled, history);
    expect(brief(sent)).toEqual([[1_000, 'stock_increase', 10, 12]]);
    expect(rows).toEqual([]);
  });

  it('sends a held rise that still holds at the end even below the state last notified (issue 38: notified at 10, down to 2, up to 5)', () => {
    const rises = cfg({ cooldown_seconds: 20, change_type: 'stock_increase' });
    const history = [
      { at: 0, snapshot: state(4) },
      { at: 1_000, snapshot: state(10) }, // notified; cools until 21 s
      { at: 3_000, snapshot: state(2) }, // a drop: nothing to notify
      { at: 5_000, snapshot: state(5) }, // a rise, held (detected from 2)
      { at: 21_000, snapshot: state(5) }, // the end: 5 against 2, sent once
      { at: 26_000, snapshot: state(5) },
      { at: 45_000, snapshot: state(5) },
    ];
    const { sent } = run(rises, history);
    expect(brief(sent)).toEqual([
      [1_000, 'stock_increase', 4, 10],
      [21_000, 'stock_increase', 2, 5],
    ]);
    expect(sent[1]!.release).toBe(1_000);
  });

  it('leaves out at the end a kind the held change could not see (an item baselined while an arm was down)', () => {
    const S2 = (standard: number, resale: number | null): TargetSnapshot => ({
      ...snap([section(S, [offer({ quantity: standard, block: standard }), ...(resale ? [offer({ ticket_type: 'resale', price: 40, quantity: resale, block: resale })] : [])])]),
      ...(resale === null ? { unknown: ['general_admission', 'resale'] as const } : {}),
    }) as TargetSnapshot;
    const history = [
      { at: 0, snapshot: S2(10, null) }, // resale unknown (its arm is down)
      { at: 1_000, snapshot: S2(12, null) }, // notified: 10 -> 12
      { at: 2_000, snapshot: S2(14, null) }, // held, detected from 12 with resale unknown
      { at: 4_000, snapshot: S2(12, 5) }, // the arm is back: 5 resale tickets, known for the first time; the rise reverted
      { at: 11_500, snapshot: S2(12, 5) }, // the end: 12 against 12 (resale left out on both sides), nothing
    ];
    expect(brief(run(cooled, history).sent)).toEqual([[1_000, 'stock_increase', 10, 12]]);
    // The same, but the rise still holds at the end: sent, counted without the kind the baseline did not know.
    const holds = [...history.slice(0, 3), { at: 4_000, snapshot: S2(14, 5) }, { at: 11_500, snapshot: S2(14, 5) }];
    expect(brief(run(cooled, holds).sent)).toEqual([
      [1_000, 'stock_increase', 10, 12],
      [11_500, 'stock_increase', 12, 14],
    ]);
  });

  it("compares at the end by the item's rules: a price drop held is sent as price_decrease; change_type still picks", () => {
    const history = [
      { at: 0, snapshot: state(2, 80) },
      { at: 1_000, snapshot: state(2, 70) }, // price_decrease, notified
      { at: 2_000, snapshot: state(2, 60) }, // held
      { at: 12_000, snapshot: state(2, 60) },
    ];
    expect(run(cooled, history).sent.map((s) => [s.at, s.change.change_type, s.change.before.min_price, s.change.after.min_price])).toEqual([
      [1_000, 'price_decrease', 80, 70],
      [12_000, 'price_decrease', 70, 60],
    ]);
    expect(run(cfg({ cooldown_seconds: 10, change_type: 'stock_increase' }), history).sent).toEqual([]);
  });

  it('a change after a cooldown that held nothing notifies as usual, from the baseline', () => {
    const history = [
      { at: 0, snapshot: state(10) },
      { at: 1_000, snapshot: state(12) },
      { at: 2_000, snapshot: state(5) }, // a drop: nothing to hold
      { at: 20_000, snapshot: state(8) }, // past the end: 5 -> 8
    ];
    expect(brief(run(cooled, history).sent)).toEqual([
      [1_000, 'stock_increase', 10, 12],
      [20_000, 'stock_increase', 5, 8],
    ]);
  });

  it('sections cool apart: a notification for one holds nothing of another', () => {
    const two = (a: number, b: number) => snap([section('A', [offer({ quantity: a, block: a })]), section('B', [offer({ quantity: b, block: b })])]);
    const history = [
      { at: 0, snapshot: two(1, 1) },
      { at: 1_000, snapshot: two(2, 1) },
      { at: 2_000, snapshot: two(2, 2) },
      { at: 3_000, snapshot: two(3, 2) }, // A held
    ];
    expect(run(cooled, history).sent.map((s) => [s.at, s.change.section])).toEqual([
      [1_000, 'A'],
      [2_000, 'B'],
    ]);
  });

  it('muted at the end: the hold ends without a notification, as a muted change does', () => {
    const history = [
      { at: 0, snapshot: state(10) },
      { at: 1_000, snapshot: state(12) },
      { at: 2_000, snapshot: state(14) },
      { at: 12_000, snapshot: state(14) },
    ];
    const { sent, rows } = run(cooled, history, (at) => at >= 12_000);
    expect(brief(sent)).toEqual([[1_000, 'stock_increase', 10, 12]]);
    expect(rows).toEqual([]);
  });

  it('a cooldown set to 0 while a change is held releases it at the next poll', () => {
    const rows: CooldownState[] = [{ section: S, notified: { stock: 14, min_price: 50, avg_price: 50, currency: 'EUR' }, notifiedAt: 1_000, held: true, heldFrom: state(12) }];
    const d = applyCooldown(cfg({ cooldown_seconds: 0 }), [], rows, state(16), state(16), 2_000, false);
    expect(d.notify.map((n) => [n.change.before.stock, n.change.after.stock, n.release])).toEqual([[12, 16, 1_000]]);
    expect(d).toMatchObject({ write: [], remove: [S], dueAt: null });
  });

  it('says when the earliest hold ends, so the poller comes back for it', () => {
    const rows: CooldownState[] = [{ section: S, notified: { stock: 12, min_price: 50, avg_price: 50, currency: 'EUR' }, notifiedAt: 1_000, held: false, heldFrom: null }];
    const changes = detectChanges(state(12), state(14), cooled);
    expect(applyCooldown(cooled, changes, rows, state(12), state(14), 3_000, false)).toMatchObject({ notify: [], write: [{ held: true, heldFrom: state(12) }], dueAt: 11_000 });
    expect(applyCooldown(cooled, [], rows, state(12), state(12), 3_000, false)).toMatchObject({ notify: [], write: [], dueAt: null });
  });

  it('a hold made before issue 38 (no held_from) is released against the state last notified, as it was made', () => {
    const rows: CooldownState[] = [{ section: S, notified: { stock: 12, min_price: 50, avg_price: 50, currency: 'EUR' }, notifiedAt: 1_000, held: true, heldFrom: null }];
    expect(applyCooldown(cooled, [], rows, state(16), state(16), 20_000, false).notify.map((n) => [n.change.before.stock, n.change.after.stock])).toEqual([[12, 16]]);
  });
});

/**
 * One poll of the property's section, on the history's own terms: standard tickets and resale
 * tickets, each a count at one price, and which arm of a pf_01-like read failed (`seats`: no
 * standard or platinum known; `lots`: no resale or standing known).
 */
interface Poll {
  at: number;
  standard: { quantity: number; price: number };
  resale: { quantity: number; price: number };
  failed: 'seats' | 'lots' | null;
}

const snapshotOf = (p: Poll): TargetSnapshot => {
  const offers = [
    ...(p.failed !== 'seats' && p.standard.quantity > 0 ? [offer({ price: p.standard.price, quantity: p.standard.quantity, block: p.standard.quantity })] : []),
    ...(p.failed !== 'lots' && p.resale.quantity > 0 ? [offer({ ticket_type: 'resale', price: p.resale.price, quantity: p.resale.quantity, block: p.resale.quantity })] : []),
  ];
  const s = snap([section(S, offers)]);
  if (p.failed === 'seats') s.unknown = ['platinum', 'standard'];
  if (p.failed === 'lots') s.unknown = ['general_admission', 'resale'];
  return s;
};

interface OracleItem {
  cooldown_seconds: number;
  change_type: null | 'stock_increase' | 'price_decrease' | 'price_increase';
  stock_threshold_filter: null | number;
  resale_tickets: boolean;
}

/**
 * The rule as docs/watchlist.md "Cooldowns" states it, for one section, written from the text:
 * what a poll counts (the kinds the item takes that both compared polls read), what a change is,
 * when it is held, and what is sent when a hold ends.
 */
function byTheRule(item: OracleItem, polls: Poll[]): [number, string, number, number][] {
  const counted = (p: Poll, other: Poll) => {
    const kinds: ('standard' | 'resale')[] = [];
    const unread = (q: Poll, kind: 'standard' | 'resale') => (kind === 'standard' ? q.failed === 'seats' : q.failed === 'lots');
    if (!unread(p, 'standard') && !unread(other, 'standard')) kinds.push('standard');
    if (item.resale_tickets && !unread(p, 'resale') && !unread(other, 'resale')) kinds.push('resale');
    const lots = kinds.map((k) => p[k]).filter((l) => l.quantity > 0);
    return { stock: lots.reduce((n, l) => n + l.quantity, 0), min: lots.length ? Math.min(...lots.map((l) => l.price)) : null };
  };
  const compare = (from: Poll, to: Poll): [string, number, number][] => {
    const a = counted(from, to);
    const b = counted(to, from);
    const kinds: string[] = [];
    if (b.stock > a.stock) kinds.push('stock_increase');
    if (a.min !== null && b.min !== null && b.min < a.min) kinds.push('price_decrease');
    if (a.min !== null && b.min !== null && b.min > a.min) kinds.push('price_increase');
    const passes = item.stock_threshold_filter === null || b.stock >= item.stock_threshold_filter;
    return kinds.filter((k) => (item.change_type === null || item.change_type === k) && passes).map((k) => [k, a.stock, b.stock]);
  };
  const sent: [number, string, number, number][] = [];
  let coolsUntil = -Infinity;
  let heldFrom: Poll | null = null;
  for (let i = 1; i < polls.length; i++) {
    const now = polls[i]!;
    const seen = compare(polls[i - 1]!, now);
    if (now.at < coolsUntil) {
      if (seen.length && heldFrom === null) heldFrom = polls[i - 1]!;
      continue;
    }
    const out = heldFrom ? compare(heldFrom, now) : seen;
    heldFrom = null;
    if (out.length) {
      sent.push(...out.map(([k, b, a]): [number, string, number, number] => [now.at, k, b, a]));
      coolsUntil = now.at + item.cooldown_seconds * 1000;
    }
  }
  return sent;
}

describe('properties', () => {
  const lot = fc.record({ quantity: fc.integer({ min: 0, max: 5 }), price: fc.constantFrom(40, 50, 60) });
  const pollsArb = fc
    .array(fc.record({ gap: fc.integer({ min: 200, max: 6_000 }), standard: lot, resale: lot, failed: fc.constantFrom(null, null, null, 'seats' as const, 'lots' as const) }), {
      minLength: 2,
      maxLength: 25,
    })
    .map((steps) => {
      let at = 0;
      return steps.map(({ gap, ...p }): Poll => ({ at: (at += gap), ...p }));
    });
  const history = (polls: Poll[]): Step[] => polls.map((p) => ({ at: p.at, snapshot: snapshotOf(p) }));
  const itemArb = fc.record({
    cooldown_seconds: fc.constantFrom(0, 1, 3, 10),
    change_type: fc.constantFrom(null, 'stock_increase' as const, 'price_decrease' as const, 'price_increase' as const),
    stock_threshold_filter: fc.constantFrom(null, 2),
    resale_tickets: fc.boolean(),
  });

  it('random histories, arms failing now and then, send exactly what the rule says, in order', () => {
    fc.assert(
      fc.property(itemArb, pollsArb, (over, polls) => {
        expect(brief(run(cfg(over), history(polls)).sent)).toEqual(byTheRule(over, polls));
      }),
      { numRuns: 1_000 },
    );
  });

  it('the oracle is not empty-handed: over the runs it sends releases, holds that reverted, and notifications', () => {
    // A property that could pass by sending nothing on both sides proves nothing: count what it saw.
    let releases = 0;
    let reverted = 0;
    fc.assert(
      fc.property(itemArb, pollsArb, (over, polls) => {
        const { sent } = run(cfg(over), history(polls));
        releases += sent.filter((x) => x.release !== null).length;
        const ms = over.cooldown_seconds * 1000;
        if (ms > 0 && sent.length > 0) {
          const last = sent[sent.length - 1]!.at;
          const changedInside = polls.some((p, i) => i > 0 && p.at > last && p.at < last + ms && byTheRule({ ...over, cooldown_seconds: 0 }, [polls[i - 1]!, p]).length > 0);
          const after = polls.filter((p) => p.at >= last + ms);
          if (changedInside && after.length > 0 && !sent.some((x) => x.at >= last + ms)) reverted++;
        }
      }),
      { numRuns: 1_000, seed: 38 },
    );
    expect(releases).toBeGreaterThan(50);
    expect(reverted).toBeGreaterThan(10);
  });

  it('two notifications of a section are never closer than the cooldown, and 0 is every change', () => {
    fc.assert(
      fc.property(itemArb, pollsArb, (over, polls) => {
        const item = cfg(over);
        const steps = history(polls);
        const times = [...new Set(run(item, steps).sent.map((s) => s.at))];
        for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(item.cooldown_seconds * 1000);
        if (item.cooldown_seconds === 0) {
          const every = steps.slice(1).flatMap((h, i) => detectChanges(steps[i]!.snapshot, h.snapshot, item).map((c) => [h.at, c.change_type, c.before.stock, c.after.stock]));
          expect(brief(run(item, steps).sent)).toEqual(every);
        }
      }),
      { numRuns: 300 },
    );
  });
});
