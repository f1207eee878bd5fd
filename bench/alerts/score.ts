// The notifications received against those written down: per platform and per scenario, the
// counts expected, received, false (received, not expected), missed (expected, never received)
// and duplicated (an expected one received more than once), the change-to-client delays, and
// each false or missed notification described with the step it belongs to.
import type { PlatformKey } from '../../src/platform/registry.ts';
import type { Arrival, ExpectedRun, KillRecord, ScriptRun } from './runner.ts';

export interface Tally {
  expected: number;
  received: number;
  false: number;
  missed: number;
  duplicated: number;
  /** ms from the control call to the client, for expected notifications sent at their change, away from the kill. */
  delays: number[];
  /** The same for changes made from two intervals before the worker's SIGKILL until its successor's first poll. */
  killDelays: number[];
  /** Of the expected, those sent at a cooldown's end (not in the delays). */
  held: number;
}

export interface Problem {
  kind: 'false' | 'missed' | 'duplicated';
  text: string;
}

export interface ScriptScore {
  run: ScriptRun;
  tally: Tally;
  problems: Problem[];
  /** Steps that started over an interval behind their schedule (the cooldown's outcome is then uncertain). */
  late: string[];
  /** Steps no poll was seen to read. */
  unseen: string[];
  /** Items created without a field the service refused. */
  refused: string[];
}

export interface Score {
  scripts: ScriptScore[];
  platforms: Map<PlatformKey, Tally>;
  /** Notifications of items the bench did not create (should never happen). */
  strays: number;
  /** Arrivals that repeated a log id already received (a resend by the stream). */
  resentIds: number;
}

const emptyTally = (): Tally => ({ expected: 0, received: 0, false: 0, missed: 0, duplicated: 0, delays: [], killDelays: [], held: 0 });

function add(into: Tally, t: Tally): void {
  into.expected += t.expected;
  into.received += t.received;
  into.false += t.false;
  into.missed += t.missed;
  into.duplicated += t.duplicated;
  into.delays.push(...t.delays);
  into.killDelays.push(...t.killDelays);
  into.held += t.held;
}

const price = (v: number | null | undefined) => (v === null || v === undefined ? '-' : String(Number(v)));

function describe(label: string, n: { change_type?: string; section?: string | null; before?: { stock?: number | null; min_price?: number | null }; after?: { stock?: number | null; min_price?: number | null } }): string {
  return `\`${label}\` ${n.change_type} ${n.section}: stock ${n.before?.stock ?? 0} → ${n.after?.stock ?? 0}, lowest ${price(n.before?.min_price)} → ${price(n.after?.min_price)}`;
}

/** The step of `run` that was in force when a notification arrived at `at`. */
function stepAt(run: ScriptRun, at: number): string {
  const rec = [...run.steps].reverse().find((s) => s.putAt !== null && s.putAt <= at);
  return rec ? `during step ${rec.index + 1} "${rec.step.label}"` : 'before the first step';
}

export function score(runs: readonly ScriptRun[], arrivals: readonly Arrival[], intervalMs: number, kill: KillRecord | null): Score {
  const aroundKill = (putAt: number) => kill !== null && putAt >= kill.killedAt - 2 * intervalMs && putAt < (kill.firstPollAt ?? Infinity);
  const byItem = new Map<number, { run: ScriptRun; label: string }>();
  for (const run of runs) for (const item of run.items) byItem.set(item.id, { run, label: item.spec.label });
  const byKey = new Map<string, Arrival[]>();
  const ids = new Set<number>();
  let resentIds = 0;
  let strays = 0;
  for (const a of arrivals) {
    if (ids.has(a.n.id)) resentIds++;
    ids.add(a.n.id);
    if (!byItem.has(a.n.item_id)) strays++;
    const list = byKey.get(a.key) ?? [];
    list.push(a);
    byKey.set(a.key, list);
  }

  const scripts: ScriptScore[] = [];
  for (const run of runs) {
    const tally = emptyTally();
    const problems: Problem[] = [];
    const expectedByKey = new Map<string, ExpectedRun[]>();
    for (const e of run.expected) expectedByKey.set(e.key, [...(expectedByKey.get(e.key) ?? []), e]);
    const itemIds = new Set(run.items.map((i) => i.id));
    tally.expected = run.expected.length;
    tally.held = run.expected.filter((e) => e.held).length;
    tally.received = arrivals.filter((a) => itemIds.has(a.n.item_id)).length;
    for (const [key, expected] of expectedByKey) {
      const got = byKey.get(key) ?? [];
      expected.forEach((e, i) => {
        const step = run.steps[e.step]!;
        const a = got[i];
        if (!a) {
          tally.missed++;
          const n = { change_type: e.change_type, section: e.section, before: e.before, after: e.after };
          problems.push({ kind: 'missed', text: `${describe(e.item, n)}${e.held ? ' (at the cooldown’s end)' : ''}, step ${e.step + 1} "${step.step.label}"` });
        } else if (!e.held && step.putAt !== null) (aroundKill(step.putAt) ? tally.killDelays : tally.delays).push(a.at - step.putAt);
      });
      if (got.length > expected.length) {
        tally.duplicated += got.length - expected.length;
        const e = expected[0]!;
        problems.push({ kind: 'duplicated', text: `${describe(e.item, { change_type: e.change_type, section: e.section, before: e.before, after: e.after })}: received ${got.length} times (log ids ${got.map((a) => a.n.id).join(', ')})` });
      }
    }
    for (const [key, got] of byKey) {
      if (expectedByKey.has(key) || !itemIds.has(got[0]!.n.item_id)) continue;
      tally.false += got.length;
      for (const a of got) problems.push({ kind: 'false', text: `${describe(byItem.get(a.n.item_id)!.label, a.n)}, ${stepAt(run, a.at)} (log id ${a.n.id})` });
    }
    const late = run.steps.filter((s) => s.lateMs !== null && s.lateMs > intervalMs).map((s) => `step ${s.index + 1} "${s.step.label}" started ${(s.lateMs! / 1000).toFixed(1)} s late`);
    const unseen = run.steps.filter((s) => !s.seen).map((s) => `step ${s.index + 1} "${s.step.label}"`);
    const refused = run.items.filter((i) => i.refused).map((i) => `\`${i.spec.label}\`: ${i.refused}`);
    scripts.push({ run, tally, problems, late, unseen, refused });
  }

  const platforms = new Map<PlatformKey, Tally>();
  for (const s of scripts) {
    const p = s.run.script.platform.platform;
    const t = platforms.get(p) ?? emptyTally();
    add(t, s.tally);
    platforms.set(p, t);
  }
  return { scripts, platforms, strays, resentIds };
}

/** A platform passes with something expected and received, and nothing false, missed or duplicated. */
export function passes(t: Tally): boolean {
  return t.expected > 0 && t.received > 0 && t.false === 0 && t.missed === 0 && t.duplicated === 0;
}
