// An item's cooldown (`cooldown_seconds`, issue 24): after a notification for a section, later
// changes of that section are held until the cooldown ends; then one notification is sent if the
// section's state differs, by the item's rules, from the state last notified (before = last
// notified, after = now), and a new cooldown starts from it. Flapping inventory (cart holds
// released, a reseller relisting) then announces itself once per cooldown, not on every up-tick.
//
// Pure: given one member's changes at a poll, its cooldown rows and the time, it says what to
// notify and which rows to write or delete. The rows live in monitor_cooldowns and are written
// in record-poll's transaction, so a held change survives a worker's death and is released once.
import { sectionChanges, viewOf, type Change, type MonitorConfig, type SectionView } from './changes.ts';
import type { TargetSnapshot } from './snapshot.ts';

/** One section of one item in (or just past) its cooldown. */
export interface CooldownState {
  section: string;
  /** The section's state as last notified: what a held change is compared with at the end. */
  notified: SectionView;
  /** When that notification's change was seen (ms): the cooldown runs from here. */
  notifiedAt: number;
  /** A change came during the cooldown and waits for its end. */
  held: boolean;
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

/**
 * One member's poll through its cooldowns. `changes` are the item's changes from its baseline to
 * `current` (rules 1-4; none when muted), `states` its cooldown rows for this target, `now` the
 * time the poll's change was seen; `muted` drops what a release would send, as muting drops changes.
 */
export function applyCooldown(cfg: MonitorConfig, changes: Change[], states: readonly CooldownState[], current: TargetSnapshot, now: number, muted: boolean): CooldownDecision {
  const ms = cooldownMs(cfg);
  const decision: CooldownDecision = { notify: [], write: [], remove: [], dueAt: null };
  if (states.length === 0 && ms === 0) {
    // No cooldown: every change notifies (the path of nearly every poll, kept free of work).
    decision.notify = changes.map((change) => ({ change, release: null }));
    return decision;
  }
  // A cooldown set to 0 (or shortened) ends the rows' cooldowns now: a held change is released.
  const starts = (section: string, notified: SectionView) => {
    if (ms > 0) decision.write.push({ section, notified, notifiedAt: now, held: false });
    else decision.remove.push(section);
  };
  const bySection = new Map<string, Change[]>();
  for (const c of changes) bySection.set(c.section, [...(bySection.get(c.section) ?? []), c]);
  const rows = new Map(states.map((s) => [s.section, s]));
  let view: Map<string, SectionView> | null = null;
  const names = [...new Set([...bySection.keys(), ...rows.keys()])].sort();
  for (const name of names) {
    const seen = bySection.get(name) ?? [];
    const row = rows.get(name);
    if (row && now < row.notifiedAt + ms) {
      // Cooling: the change waits for the end, compared then with what was last notified.
      if (seen.length > 0 && !row.held) decision.write.push({ ...row, held: true });
      if (seen.length > 0 || row.held) decision.dueAt = Math.min(decision.dueAt ?? Infinity, row.notifiedAt + ms);
      continue;
    }
    if (row?.held) {
      // The end of a cooldown with a change held: the state now against the state last notified.
      view ??= viewOf(current, cfg, new Set(current.unknown ?? []));
      const after = view.get(name);
      const released = muted ? [] : sectionChanges(name, row.notified, after, cfg);
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
      if (ms > 0) decision.write.push({ section: name, notified: { ...seen[0]!.after, currency: seen[0]!.currency }, notifiedAt: now, held: false });
      else if (row) decision.remove.push(name);
    } else if (row) {
      decision.remove.push(name);
    }
  }
  return decision;
}
