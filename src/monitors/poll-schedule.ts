// When each target of one shard is polled next: the poll loop's bookkeeping, kept apart from
// its I/O so the rules can be tested on a clock the test moves.
//
// - A new target is due at a random moment in the first half interval (targets added together
//   spread out, and a new item gets its baseline within one interval).
// - After a poll the next one is due one interval × (1 ± jitter) after the previous due time,
//   so the rhythm holds however long the scrape took; a poll that ran late, so that the next
//   would go out less than an interval (less its jitter) after it, is rescheduled from now:
//   no target is asked twice in an interval, and a backlog does not bunch.
// - A failure that may strain the platform (a time-out, a 5xx, a refusal) waits
//   interval × 2^failures (at most 16×) from now; one it answered about the event (a page we could
//   not read, not found) waits 2 intervals at most: that request costs the platform what a poll
//   does, and a longer wait only delayed the recovery (pages whose offers never loaded for 30 s
//   were polled again 38 s after they loaded, in the rehearsal of issue 39). A platform that refused
//   (429/403, `blocked`) is not asked again before its Retry-After.
import type { EventRef } from '../platform/event-ref.ts';

export const MAX_BACKOFF_FACTOR = 16;
/** The longest back-off, in intervals, after failures the platform answered (ScheduleFailure 'answered'). */
export const ANSWERED_BACKOFF_FACTOR = 2;

/** What failed: the platform answered about the event (`answered`), or may be strained (`transient`). */
export type ScheduleFailure = 'answered' | 'transient';

export interface ScheduledTarget {
  key: string;
  ref: EventRef;
  dueAt: number;
  inFlight: boolean;
  failures: number;
  /** Not polled before this (a platform's Retry-After); null when not blocked. */
  blockedUntil: number | null;
}

export interface ScheduleSettings {
  intervalMs: number;
  jitterRatio: number;
  /** [0, 1): Math.random in production, a seeded source in tests. */
  random?: () => number;
}

export class ShardSchedule {
  readonly targets = new Map<string, ScheduledTarget>();
  private readonly random: () => number;

  constructor(private readonly settings: ScheduleSettings) {
    this.random = settings.random ?? Math.random;
  }

  private jittered(): number {
    const { intervalMs, jitterRatio } = this.settings;
    return intervalMs * (1 + jitterRatio * (2 * this.random() - 1));
  }

  /**
   * Makes the schedule hold exactly `refs`. Targets it already had keep their times; new ones
   * take `carried[key]` (a due time from the last run or heartbeat) when given, else a spread
   * start. Returns the keys added.
   */
  sync(refs: ReadonlyMap<string, EventRef>, now: number, carried: Record<string, number> | null): string[] {
    for (const key of this.targets.keys()) if (!refs.has(key)) this.targets.delete(key);
    const added: string[] = [];
    for (const [key, ref] of refs) {
      if (this.targets.has(key)) continue;
      const dueAt = carried?.[key] ?? now + this.random() * (this.settings.intervalMs / 2);
      this.targets.set(key, { key, ref, dueAt, inFlight: false, failures: 0, blockedUntil: null });
      added.push(key);
    }
    return added;
  }

  /** Targets due by `now` and not being polled, earliest first. */
  due(now: number): ScheduledTarget[] {
    const out: ScheduledTarget[] = [];
    for (const t of this.targets.values()) if (!t.inFlight && t.dueAt <= now) out.push(t);
    return out.sort((a, b) => a.dueAt - b.dueAt);
  }

  /** The earliest due time of a target not being polled (null: none). */
  nextDueAt(): number | null {
    let next: number | null = null;
    for (const t of this.targets.values()) if (!t.inFlight && (next === null || t.dueAt < next)) next = t.dueAt;
    return next;
  }

  /** The earliest due time after `now` of a target not being polled (null: none). */
  nextDueAfter(now: number): number | null {
    let next: number | null = null;
    for (const t of this.targets.values()) if (!t.inFlight && t.dueAt > now && (next === null || t.dueAt < next)) next = t.dueAt;
    return next;
  }

  /** Stops scheduling a target (retired); a later sync() that lists it again adds it afresh. */
  remove(key: string): void {
    this.targets.delete(key);
  }

  /** A poll whose request went out at `startedAt` (default `now`) and succeeded at `now`. */
  succeeded(t: ScheduledTarget, now: number, startedAt = now): void {
    t.failures = 0;
    t.blockedUntil = null;
    const next = t.dueAt + this.jittered();
    // Never two requests for one target closer than an interval less its jitter: after a pause (a
    // fault, a takeover) a late poll kept "in rhythm" was asked again 0.1 to 0.8 s later, 45 to 50
    // targets per fault in the rehearsal (rehearsal/). Late, it is rescheduled from now.
    t.dueAt = next >= startedAt + this.settings.intervalMs * (1 - this.settings.jitterRatio) ? next : now + this.jittered();
  }

  /** A failed poll; `blockedUntil` when the platform asked us to back off until then. */
  failed(t: ScheduledTarget, now: number, blockedUntil: number | null, kind: ScheduleFailure = 'transient'): void {
    t.failures++;
    const cap = kind === 'answered' ? ANSWERED_BACKOFF_FACTOR : MAX_BACKOFF_FACTOR;
    const backoff = now + Math.min(cap, 2 ** t.failures) * this.jittered();
    t.blockedUntil = blockedUntil;
    t.dueAt = Math.max(backoff, blockedUntil ?? 0);
  }

  /** Every target's next due time (heartbeat details and the next run's input). */
  dueTimes(): Record<string, number> {
    return Object.fromEntries([...this.targets.values()].map((t) => [t.key, Math.round(t.dueAt)]));
  }

  blockedCount(now: number): number {
    let n = 0;
    for (const t of this.targets.values()) if (t.blockedUntil !== null && t.blockedUntil > now) n++;
    return n;
  }
}
