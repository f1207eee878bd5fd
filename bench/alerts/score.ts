// The messages received against those written down, channel by channel (the stream, the standard
// webhooks, Discord): per platform and per scenario, the counts expected, received, false
// (received, not expected), missed (expected, never received) and duplicated (an expected one
// received as more than one message), the change-to-client delays, and each false, missed or
// duplicated message described with the step it belongs to. The stream hears every item; each
// webhook kind the twins that name it (items.ts). A message sent again under the same id (the
// stream's log id, the `webhook-id`, the Discord footer's notification id: at-least-once
// delivery) is one message, counted apart as a resend.
import type { PlatformKey } from '../../src/platform/registry.ts';
import { CHANNELS, type Arrival, type Channel, type Side } from './channels.ts';
import type { Hook } from './items.ts';
import { expectations, type CooldownDecision } from './model.ts';
import type { ExpectedRun, KillRecord, ScriptRun, StepRecord } from './runner.ts';
import { allSteps } from './scenarios.ts';

export interface Tally {
  expected: number;
  received: number;
  false: number;
  missed: number;
  duplicated: number;
  /** ms from the control call to the client, for expected changes sent at their change, away from the kill. */
  delays: number[];
  /** The same for changes made from two intervals before the worker's SIGKILL until its successor's first poll. */
  killDelays: number[];
  /** Of the expected, those sent at a cooldown's end (not in the delays). */
  held: number;
}

export type Tallies = Record<Channel, Tally>;

export interface Problem {
  channel: Channel;
  kind: 'false' | 'missed' | 'duplicated';
  text: string;
}

export interface ScriptScore {
  run: ScriptRun;
  tallies: Tallies;
  problems: Problem[];
  /** Steps that started over an interval behind their schedule, or could not observe what they were written for. */
  late: string[];
  /** Steps no poll was seen to read. */
  unseen: string[];
  /** Items created without a field the service refused. */
  refused: string[];
}

export interface Score {
  scripts: ScriptScore[];
  platforms: Map<PlatformKey, Tallies>;
  /** Messages about items the bench did not create (should never happen), per channel. */
  strays: Record<Channel, number>;
  /** Arrivals that repeated an id already received (a resend), per channel. */
  resent: Record<Channel, number>;
}

export const emptyTally = (): Tally => ({ expected: 0, received: 0, false: 0, missed: 0, duplicated: 0, delays: [], killDelays: [], held: 0 });
const emptyTallies = (): Tallies => ({ stream: emptyTally(), webhook: emptyTally(), discord: emptyTally() });
const perChannel = (): Record<Channel, number> => ({ stream: 0, webhook: 0, discord: 0 });

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

interface Described {
  type: string;
  change_type?: string;
  section?: string | null;
  state?: string;
  before?: Side;
  after?: Side;
}

function describe(label: string, n: Described): string {
  if (n.type === 'platform_incident') return `\`${label}\` platform_incident ${n.state}`;
  if (n.type === 'target_retired') return `\`${label}\` target_retired`;
  return `\`${label}\` ${n.change_type} ${n.section}: stock ${n.before?.stock ?? 0} → ${n.after?.stock ?? 0}, lowest ${price(n.before?.min_price)} → ${price(n.after?.min_price)}`;
}

function describeExpected(e: ExpectedRun): string {
  return e.type === 'notification' ? describe(e.item, { type: e.type, change_type: e.change_type, section: e.section, before: e.before, after: e.after }) : describe(e.item, { type: e.type, state: e.state });
}

/** The step of `run` that was in force when a message arrived at `at`. */
function stepAt(run: ScriptRun, at: number): string {
  const rec = [...run.steps].reverse().find((s) => s.putAt !== null && s.putAt <= at);
  return rec ? `during step ${rec.index + 1} "${rec.step.label}"` : 'before the first step';
}

/** Which items a channel hears: the stream every one, a webhook kind the twins naming it. */
function hears(channel: Channel, hook: Hook): boolean {
  return channel === 'stream' || (channel === 'webhook' ? hook === 'standard' : hook === 'discord');
}

export function score(runs: readonly ScriptRun[], arrivals: readonly Arrival[], intervalMs: number, kill: KillRecord | null): Score {
  const aroundKill = (putAt: number) => kill !== null && putAt >= kill.killedAt - 2 * intervalMs && putAt < (kill.firstPollAt ?? Infinity);
  const byItem = new Map<number, { run: ScriptRun; label: string; hook: Hook }>();
  for (const run of runs) for (const item of run.items) byItem.set(item.id, { run, label: item.spec.label, hook: item.hook });
  const strays = perChannel();
  const resent = perChannel();
  // Per channel: each message once (by its channel id), grouped by key.
  const byKey = new Map<Channel, Map<string, Arrival[]>>(CHANNELS.map((c) => [c, new Map()]));
  const seenIds = new Set<string>();
  for (const a of arrivals) {
    const id = `${a.channel} ${a.id}`;
    if (a.id !== '' && seenIds.has(id)) {
      resent[a.channel]++;
      continue;
    }
    seenIds.add(id);
    const item = byItem.get(a.m.item_id);
    if (!item || !hears(a.channel, item.hook)) strays[a.channel]++;
    const keyed = byKey.get(a.channel)!;
    keyed.set(a.key, [...(keyed.get(a.key) ?? []), a]);
  }

  const scripts: ScriptScore[] = [];
  for (const run of runs) {
    const tallies = emptyTallies();
    const problems: Problem[] = [];
    for (const channel of CHANNELS) {
      const tally = tallies[channel];
      const expected = run.expected.filter((e) => hears(channel, e.hook));
      const expectedByKey = new Map<string, ExpectedRun[]>();
      for (const e of expected) expectedByKey.set(e.key, [...(expectedByKey.get(e.key) ?? []), e]);
      const itemIds = new Set(run.items.filter((i) => hears(channel, i.hook)).map((i) => i.id));
      const keyed = byKey.get(channel)!;
      tally.expected = expected.length;
      tally.held = expected.filter((e) => e.held).length;
      for (const got of keyed.values()) tally.received += got.filter((a) => itemIds.has(a.m.item_id)).length;
      for (const [key, wanted] of expectedByKey) {
        const got = keyed.get(key) ?? [];
        wanted.forEach((e, i) => {
          const step = e.step === null ? null : run.steps[e.step]!;
          const a = got[i];
          if (!a) {
            tally.missed++;
            const where = step ? `, step ${step.index + 1} "${step.step.label}"` : ' (the platform’s incident)';
            problems.push({ channel, kind: 'missed', text: `${describeExpected(e)}${e.held ? ' (at the cooldown’s end)' : ''}${where}` });
          } else if (e.type === 'notification' && !e.held && step?.putAt != null) (aroundKill(step.putAt) ? tally.killDelays : tally.delays).push(a.at - step.putAt);
        });
        if (got.length > wanted.length) {
          tally.duplicated += got.length - wanted.length;
          problems.push({ channel, kind: 'duplicated', text: `${describeExpected(wanted[0]!)}: received ${got.length} times (ids ${got.map((a) => a.id).join(', ')})` });
        }
      }
      for (const [key, got] of keyed) {
        if (expectedByKey.has(key) || !itemIds.has(got[0]!.m.item_id)) continue;
        tally.false += got.length;
        for (const a of got) problems.push({ channel, kind: 'false', text: `${describe(byItem.get(a.m.item_id)!.label, a.m)}, ${stepAt(run, a.at)} (id ${a.id})` });
      }
    }
    const timed = run.script.items.some((i) => (i.cooldown_s ?? 0) > 0);
    const late = [
      // A cooldown scenario is judged on the timings its outcome rests on, as the steps really ran;
      // any other timed step (the incident's) on its lateness.
      ...(timed
        ? unvouchedTimings(run)
        : run.steps.filter((s) => s.lateMs !== null && s.lateMs > intervalMs).map((s) => `step ${s.index + 1} "${s.step.label}" started ${(s.lateMs! / 1000).toFixed(1)} s late`)),
      ...run.steps.filter((s) => s.problem !== null).map((s) => `step ${s.index + 1} "${s.step.label}": ${s.problem}`),
    ];
    const unseen = run.steps.filter((s) => !s.seen).map((s) => `step ${s.index + 1} "${s.step.label}"`);
    const refused = [...new Set(run.items.filter((i) => i.refused).map((i) => `\`${i.spec.label}\`: ${i.refused}`))];
    scripts.push({ run, tallies, problems, late, unseen, refused });
  }

  const platforms = new Map<PlatformKey, Tallies>();
  for (const s of scripts) {
    const p = s.run.script.platform.platform;
    const t = platforms.get(p) ?? emptyTallies();
    for (const c of CHANNELS) add(t[c], s.tallies[c]);
    platforms.set(p, t);
  }
  return { scripts, platforms, strays, resent };
}

/** A channel passes with something expected and received, and nothing false, missed or duplicated. */
export function passes(t: Tally): boolean {
  return t.expected > 0 && t.received > 0 && t.false === 0 && t.missed === 0 && t.duplicated === 0;
}

/** Every channel passes. */
export function allPass(t: Tallies): boolean {
  return CHANNELS.every((c) => passes(t[c]));
}

/**
 * The cooldown timings a script's expected outcome rests on (model.ts CooldownDecision) that the
 * run cannot vouch for, described; empty when every one held as the steps really ran. The service
 * started a cooldown when it read the change that notified, somewhere between that step's control
 * call and the moment its polls were seen (`putAt`..`seenAt`), and read a later step's change in
 * the same span of that step. A change expected inside the cooldown must have been seen before the
 * earliest end; one expected after it must have been made after the latest end. A step running
 * late only fails the scenario when it moved one of these across.
 */
export function unvouchedTimings(run: Pick<ScriptRun, 'script' | 'steps'>): string[] {
  const s = run.script;
  const decisions: CooldownDecision[] = [];
  expectations(s.initial, allSteps(s), s.items, s.platform.kinds, s.initialPages, decisions);
  const out: string[] = [];
  const label = (r: StepRecord) => `step ${r.index + 1} "${r.step.label}"`;
  for (const d of decisions) {
    const from = run.steps[d.from]!;
    const step = run.steps[d.step]!;
    const ms = d.cooldownS * 1000;
    if (from.putAt === null || from.seenAt === null || step.putAt === null || step.seenAt === null) {
      out.push(`${label(step)}: ${d.item}'s ${d.section} cooldown from ${label(from)} cannot be judged (a step was not run or not seen)`);
      continue;
    }
    const earliestEnd = from.putAt + ms;
    const latestEnd = from.seenAt + ms;
    // A wait step changes nothing: what a release at its time must come before is the script's next change.
    const next = step.step.waitOnly ? run.steps.slice(d.step + 1).find((r) => !r.step.waitOnly) : step;
    const changedAt = next ? next.putAt : Infinity;
    if (d.inside && step.seenAt >= earliestEnd) {
      out.push(`${label(step)}: expected inside ${d.item}'s ${d.section} cooldown from ${label(from)}, but seen ${((step.seenAt - earliestEnd) / 1000).toFixed(1)} s after its earliest end`);
    } else if (!d.inside && (changedAt === null || changedAt < latestEnd)) {
      const what = next === step ? 'made' : `the next change (${label(next!)}) made`;
      out.push(`${label(step)}: expected after ${d.item}'s ${d.section} cooldown from ${label(from)}, but ${what} ${((latestEnd - (changedAt ?? 0)) / 1000).toFixed(1)} s before its latest end`);
    }
  }
  return [...new Set(out)];
}
