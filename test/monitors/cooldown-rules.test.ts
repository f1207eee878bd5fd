// The cooldown rule (issue 24, src/monitors/cooldown.ts) on its own, without a database: hand
// cases for each clause of docs/monitoring.md "Cooldown", and a property that runs random
// histories of one section through applyCooldown (as record-poll does, rows carried from poll to
// poll) against the rule as the document states it, written here step by step.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { detectChanges, sectionChanges, viewOf, type Change, type MonitorConfig, type SectionView } from '../../src/monitors/changes.ts';
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
    const d = applyCooldown(item, changes, rows, snapshot, at, muted(at));
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

  it('holds the changes of a cooling section and sends one at the end, before = last notified, after = now', () => {
    const history = [
      { at: 0, snapshot: state(10) },
      { at: 1_000, snapshot: state(12) }, // notified; cools until 11 s
      { at: 3_000, snapshot: state(14) }, // held
      { at: 5_000, snapshot: state(16) }, // held
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
    expect(rows).toEqual([{ section: S, notified: { stock: 16, min_price: 50, avg_price: 50, currency: 'EUR' }, notifiedAt: 11_500, held: false }]);
  });

  it('sends nothing at the end when the state has come back to the one last notified (a cart hold released)', () => {
    const history = [
      { at: 0, snapshot: state(10) },
      { at: 1_000, snapshot: state(12) },
      { at: 2_000, snapshot: state(9) },
      { at: 4_000, snapshot: state(12) }, // held: 9 -> 12 is an up-tick
      { at: 12_000, snapshot: state(12) }, // the end: 12 against 12
      { at: 13_000, snapshot: state(12) },
    ];
    const { sent, rows } = run(cooled, history);
    expect(brief(sent)).toEqual([[1_000, 'stock_increase', 10, 12]]);
    expect(rows).toEqual([]);
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
    const rows: CooldownState[] = [{ section: S, notified: { stock: 12, min_price: 50, avg_price: 50, currency: 'EUR' }, notifiedAt: 1_000, held: true }];
    const d = applyCooldown(cfg({ cooldown_seconds: 0 }), [], rows, state(16), 2_000, false);
    expect(d.notify.map((n) => [n.change.before.stock, n.change.after.stock, n.release])).toEqual([[12, 16, 1_000]]);
    expect(d).toMatchObject({ write: [], remove: [S], dueAt: null });
  });

  it('says when the earliest hold ends, so the poller comes back for it', () => {
    const rows: CooldownState[] = [{ section: S, notified: { stock: 12, min_price: 50, avg_price: 50, currency: 'EUR' }, notifiedAt: 1_000, held: false }];
    const changes = detectChanges(state(12), state(14), cooled);
    expect(applyCooldown(cooled, changes, rows, state(14), 3_000, false)).toMatchObject({ notify: [], write: [{ held: true }], dueAt: 11_000 });
    expect(applyCooldown(cooled, [], rows, state(12), 3_000, false)).toMatchObject({ notify: [], write: [], dueAt: null });
  });
});

/** The rule as docs/monitoring.md states it, for one section, step by step. */
function byTheRule(item: MonitorConfig, history: Step[]) {
  const ms = (item.cooldown_seconds ?? 0) * 1000;
  const view = (s: TargetSnapshot): SectionView | undefined => viewOf(s, item).get(S);
  let lastNotified: SectionView | undefined;
  let coolsUntil = -Infinity;
  let held = false;
  const sent: [number, string, number, number][] = [];
  for (let i = 1; i < history.length; i++) {
    const { at, snapshot } = history[i]!;
    const now = view(snapshot);
    const seen = sectionChanges(S, view(history[i - 1]!.snapshot), now, item);
    if (at < coolsUntil) {
      if (seen.length) held = true;
      continue;
    }
    const out = held ? sectionChanges(S, lastNotified, now, item) : seen;
    held = false;
    if (out.length) {
      sent.push(...out.map((c): [number, string, number, number] => [at, c.change_type, c.before.stock, c.after.stock]));
      lastNotified = now;
      coolsUntil = at + ms;
    }
  }
  return sent;
}

describe('properties', () => {
  const historyArb = fc
    .array(fc.record({ gap: fc.integer({ min: 200, max: 6_000 }), stock: fc.integer({ min: 0, max: 6 }), price: fc.constantFrom(40, 50, 60) }), { minLength: 2, maxLength: 25 })
    .map((steps) => {
      let at = 0;
      return steps.map((s) => ({ at: (at += s.gap), snapshot: state(s.stock, s.price) }));
    });
  const itemArb = fc.record({
    cooldown_seconds: fc.constantFrom(0, 1, 3, 10),
    change_type: fc.constantFrom(null, 'stock_increase' as const, 'price_decrease' as const),
    stock_threshold_filter: fc.constantFrom(null, 2),
  });

  it('random histories send exactly what the rule says, in order', () => {
    fc.assert(
      fc.property(itemArb, historyArb, (over, history) => {
        const item = cfg(over);
        expect(brief(run(item, history).sent)).toEqual(byTheRule(item, history));
      }),
      { numRuns: 500 },
    );
  });

  it('two notifications of a section are never closer than the cooldown, and 0 is every change', () => {
    fc.assert(
      fc.property(itemArb, historyArb, (over, history) => {
        const item = cfg(over);
        const times = [...new Set(run(item, history).sent.map((s) => s.at))];
        for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(item.cooldown_seconds * 1000);
        if (item.cooldown_seconds === 0) {
          const every = history.slice(1).flatMap((h, i) => detectChanges(history[i]!.snapshot, h.snapshot, item).map((c) => [h.at, c.change_type, c.before.stock, c.after.stock]));
          expect(brief(run(item, history).sent)).toEqual(every);
        }
      }),
      { numRuns: 300 },
    );
  });
});
