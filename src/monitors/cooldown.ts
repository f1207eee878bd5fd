// An item's cooldown (`cooldown_seconds`, issue 24): after a notification for a section, later
// changes of that section are held until the cooldown ends. At the end, a held change is sent
// once if it still holds: the section now is compared, by the item's rules, with the state the
// first held change was detected from (its baseline's section, with the ticket kinds that read
// did not know), leaving out on both sides every kind either side did not know. A change that
// has reverted by then is not sent; one that still holds is (issue 38: comparing with the state
// last notified dropped a rise that followed a fall, and read a kind baselined while an arm was
// down as new). A release starts a new cooldown. Flapping inventory (cart holds released, a
// reseller relisting) then announces itself at most once per cooldown. docs/watchlist.md
// "Cooldowns" states the rule with examples.
//
// Pure: given one member's changes at a poll, the snapshot they were detected from, its cooldown
// rows and the time, it says what to notify and which rows to write or delete. The rows live in
// monitor_cooldowns and are written in record-poll's transaction, so a held change survives a
// worker's death and is released once.
import { sectionChanges, unknownOnEitherSide, viewOf, type Change, type MonitorConfig, type SectionView } from './changes.ts';
import { sameFormat, type TargetSnapshot } from './snapshot.ts';

/** One section of one item in (or just past) its cooldown. */
export interface CooldownState {
  section: string;
  /** The section's state as last notified (a record for operators; releases compare with `heldFrom`). */
  notified: SectionView;
  /** When that notification's change was seen (ms): the cooldown runs from here. */
  notifiedAt: number;
  /** A change came during the cooldown and waits for its end. */
  held: boolean;
  /**
   * What the first held change was detected from: its baseline snapshot cut to this section
   * (none when the section had no offers), with that snapshot's start time, format and unknown
   * kinds. Null when nothing is held, and on holds written before issue 38 (compared with
   * `notified`, as they were then).
   */
  heldFrom: TargetSnapshot | null;
}

/** A notification to write; `release` marks one sent at a cooldown's end (its hold's start). */
export interface CooldownNotification {
  change: Change;
  release: number | null;
}

export interface CooldownDecision {
  notify: CooldownNotification[];
  write: CooldownState[];
  remove: string[];
  /** When the earliest hold left ends (ms), for the poller to come back; null when none is held. */
  dueAt: number | null;
}

/** The item's cooldown in ms: 0 for items from before the field (their config lacks it). */
export function cooldownMs(cfg: MonitorConfig): number {
  return (cfg.cooldown_seconds ?? 0) * 1000;
}

/** `snapshot` cut to one section: all a release needs of the state a held change came from. */
export function sectionOf(snapshot: TargetSnapshot, name: string): TargetSnapshot {
  const { sections, ...rest } = snapshot;
  return { ...rest, sections: sections.filter((s) => s.name === name) };
}

/** The changes a hold still stands for at its end: the section now against the state it was detected from. */
function stillHolding(name: string, row: CooldownState, current: TargetSnapshot, cfg: MonitorConfig): Change[] {
  if (row.heldFrom === null) return sectionChanges(name, row.notified, viewOf(current, cfg, new Set(current.unknown ?? [])).get(name), cfg);
  // A baseline read by another snapshot format is not compared with (as record-poll does).
  if (!sameFormat(row.heldFrom, current)) return [];
  const hidden = unknownOnEitherSide(row.heldFrom, current);
  return sectionChanges(name, viewOf(row.heldFrom, cfg, hidden).get(name), viewOf(current, cfg, hidden).get(name), cfg);
}

/**
 * One member's poll through its cooldowns. `changes` are the item's changes from `baseline` to
 * `current` (rules 1-4; none when muted), `states` its cooldown rows for this target, `now` the
 * time the poll's change was seen; `muted` drops what a release would send, as muting drops changes.
 */
export function applyCooldown(
  cfg: MonitorConfig,
  changes: Change[],
  states: readonly CooldownState[],
  baseline: TargetSnapshot | null,
  current: TargetSnapshot,
  now: number,
  muted: boolean,
): CooldownDecision {
  const ms = cooldownMs(cfg);
  const decision: CooldownDecision = { notify: [], write: [], remove: [], dueAt: null };
  if (states.length === 0 && ms === 0) {
    // No cooldown: every change notifies (the path of nearly every poll, kept free of work).
    decision.notify = changes.map((change) => ({ change, release: null }));
    return decision;
  }
  // A cooldown set to 0 (or shortened) ends the rows' cooldowns now: a held change is released.
  const starts = (section: string, notified: SectionView) => {
    if (ms > 0) decision.write.push({ section, notified, notifiedAt: now, held: false, heldFrom: null });
    else decision.remove.push(section);
  };
  const bySection = new Map<string, Change[]>();
  for (const c of changes) bySection.set(c.section, [...(bySection.get(c.section) ?? []), c]);
  const rows = new Map(states.map((s) => [s.section, s]));
  const names = [...new Set([...bySection.keys(), ...rows.keys()])].sort();
  for (const name of names) {
    const seen = bySection.get(name) ?? [];
    const row = rows.get(name);
    if (row && now < row.notifiedAt + ms) {
      // Cooling: the first change held is kept with the state it was detected from.
      if (seen.length > 0 && !row.held) decision.write.push({ ...row, held: true, heldFrom: baseline ? sectionOf(baseline, name) : null });
      if (seen.length > 0 || row.held) decision.dueAt = Math.min(decision.dueAt ?? Infinity, row.notifiedAt + ms);
      continue;
    }
    if (row?.held) {
      const released = muted ? [] : stillHolding(name, row, current, cfg);
      if (released.length > 0) {
        decision.notify.push(...released.map((change) => ({ change, release: row.notifiedAt })));
        starts(name, { ...released[0]!.after, currency: released[0]!.currency });
      } else {
        decision.remove.push(name);
      }
      continue;
    }
    if (seen.length > 0) {
      decision.notify.push(...seen.map((change) => ({ change, release: null })));
      if (ms > 0 || row) starts(name, { ...seen[0]!.after, currency: seen[0]!.currency });
    } else if (row) {
      decision.remove.push(name);
    }
  }
  return decision;
}
