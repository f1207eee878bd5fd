// Who a platform's refusal (a 403, a 429, its challenge page, or a proxy that failed) is charged
// to (issue 36): the target, an event the platform refuses for reasons of its own (restricted to
// a country, a removed page that answers 403), or the exit it went through (an address the
// platform has banned, a dead proxy). Charging every refusal to the exit let one refused event
// use up every exit of a platform in turn, for every customer; so a refusal is charged to the
// target until the exit is shown to be at fault:
//
//   - The target backs off on its own: Retry-After first, else TARGET_BACKOFF_MS (the pool's
//     setting), doubling while it is refused in a row, up to TARGET_BACKOFF_MAX_MS. Whoever asks
//     for it meanwhile (a poll, an on-demand scrape) is answered from the back-off, with no request;
//     when a step ends, the first to ask is its one request (a probe), and the others wait for it.
//   - The exit is at fault once EXIT_FAULT_TARGETS distinct targets were refused through it since it
//     last got an answer (within EVIDENCE_WINDOW_MS), each of them one that had passed before and
//     had not been refused since: refusals of targets that pass elsewhere are what a banned address looks
//     like. The back-offs those refusals charged are then lifted (`cleared`), and the exit cools.
//   - Only the monitors' polls (and the tracker's scrapes) are evidence. An on-demand scrape is
//     charged to its target alone: anyone with a key chooses what it asks for, and must not be
//     able to cool an exit every customer's monitors use.
//
// No answer was found that names the address and that an event cannot also give: the simulator,
// like real sites, answers a single event with a 429, a 403 or a challenge page as readily as it
// bans an address (docs/scraping.md, "Who a refusal is charged to", has the figures). Pure
// bookkeeping on the caller's clock; ExitPool (exit-pool.ts) holds one per platform.

/** The first back-off of a refused target without a Retry-After, unless SCRAPE_TARGET_BACKOFF_MS says. */
export const DEFAULT_TARGET_BACKOFF_MS = 10_000;
/** Distinct passing targets refused through one exit that show the exit is at fault. */
export const EXIT_FAULT_TARGETS = 3;
/** A refusal older than this is no longer evidence against its exit. */
export const EVIDENCE_WINDOW_MS = 5 * 60_000;
/** The longest a target backs off without a Retry-After, however long its refusals go on. */
export const TARGET_BACKOFF_MAX_MS = 30 * 60_000;
/** Targets remembered as having passed (and back-offs kept) at most: the oldest are forgotten. */
export const REMEMBERED_TARGETS = 100_000;

/** Who asked: a monitor's poll or the tracker (evidence against an exit), or an on-demand scrape (never). */
export type RefusalSource = 'poll' | 'on-demand';

export interface RefusalSettings {
  /** The first back-off of a refused target without a Retry-After (SCRAPE_TARGET_BACKOFF_MS). */
  targetBackoffMs: number;
}

export interface Refusal {
  /** The exit's index in its pool. */
  exit: number;
  target: string;
  retryAfterMs: number | null;
  source: RefusalSource;
  now: number;
}

export interface Charge {
  /** This refusal completed the evidence: the exit is at fault and the caller cools it. */
  exitAtFault: boolean;
  /** When the target may be asked again; null when the exit took the blame. */
  targetUntil: number | null;
  /** Targets whose back-off this exit's fault lifted: they may be asked again at once. */
  cleared: string[];
}

/** How long a probe of a target backing off may be out before another may ask (a lost answer). */
export const PROBE_MAX_MS = 60_000;
/**
 * While a probe is out, the others ask again this soon: it is answered in about a round trip. Told
 * to wait for PROBE_MAX_MS instead, a poll that asked while an on-demand scrape's probe was out
 * slept for a minute, and the event went unasked for steps on end (a fresh-clone run of
 * test/monitors/refused-event-direct.test.ts: asked at 0 and 1.05 s, then not for 19 s).
 */
export const PROBE_WAIT_MS = 1_000;

interface Backoff {
  /** Refusals in a row. */
  streak: number;
  until: number;
  /** A request asking whether the refusal is over is out until then (0: none). */
  probeUntil: number;
}

/** Whether a target may be asked now (ask()). */
export interface Asking {
  /** Not before then: answer from the back-off (0 when it may be asked now). */
  waitUntil: number;
  /** This ask is the one request of a back-off step that ended: one exit only, no second try. */
  probe: boolean;
}

/**
 * Makes `key` the newest entry of `memory` (set to `value` in a map), the oldest dropped past
 * REMEMBERED_TARGETS: every per-target memory of the egress is bounded the same way.
 */
export function remember(memory: Set<string>, key: string): void;
export function remember<V>(memory: Map<string, V>, key: string, value: V): void;
export function remember<V>(memory: Map<string, V> | Set<string>, key: string, value?: V): void {
  memory.delete(key);
  if (memory instanceof Map) memory.set(key, value as V);
  else memory.add(key);
  if (memory.size > REMEMBERED_TARGETS) memory.delete(memory.keys().next().value!);
}

export class Refusals {
  private readonly backoffs = new Map<string, Backoff>();
  /** Targets that got an answer (any but a refusal), with when. */
  private readonly passed = new Map<string, number>();
  /** Per exit: passing targets refused through it since its last answer, with when. */
  private readonly evidence = new Map<number, Map<string, number>>();

  constructor(private readonly settings: RefusalSettings) {}

  /** When the target may be asked again (its back-off, or soon after a probe out); 0 when it may be now. */
  blockedUntil(target: string, now: number): number {
    const b = this.backoffs.get(target);
    if (!b) return 0;
    if (b.until > now) return b.until;
    return b.probeUntil > now ? Math.min(b.probeUntil, now + PROBE_WAIT_MS) : 0;
  }

  /**
   * Someone is about to ask for `target`: whether they may, and whether theirs is the probe of a
   * back-off step that ended (taken here, so a second asker waits for its answer).
   */
  ask(target: string, now: number): Asking {
    const waitUntil = this.blockedUntil(target, now);
    if (waitUntil > 0) return { waitUntil, probe: false };
    const b = this.backoffs.get(target);
    if (!b) return { waitUntil: 0, probe: false };
    b.probeUntil = now + PROBE_MAX_MS;
    return { waitUntil: 0, probe: true };
  }

  /** The ask of `target` ended without a verdict (a time-out, a 5xx): another may ask now. */
  released(target: string): void {
    const b = this.backoffs.get(target);
    if (b) b.probeUntil = 0;
  }

  /**
   * A blackout of the platform ended (blackout.ts): the back-offs of `targets` end now. Their
   * streaks stay, so an event refused for its own reason goes on doubling at its next refusal.
   */
  lift(targets: readonly string[]): void {
    for (const key of targets) {
      const b = this.backoffs.get(key);
      if (!b) continue;
      b.until = 0;
      b.probeUntil = 0;
    }
  }

  /** Whether `target` was refused and has not been answered since. */
  refusedBefore(target: string): boolean {
    return this.backoffs.has(target);
  }

  /** Targets backing off at `now`. */
  backingOff(now: number): number {
    let n = 0;
    for (const b of this.backoffs.values()) if (b.until > now) n++;
    return n;
  }

  /** The platform answered `target` through `exit` with anything but a refusal. */
  answered(exit: number, target: string, now: number): void {
    this.evidence.delete(exit);
    this.backoffs.delete(target);
    remember(this.passed, target, now);
  }

  /**
   * A poll's target was refused through `exit` and then answered through another: evidence
   * against `exit`, and nothing charged to the target. Returns the targets cleared when that
   * shows the exit at fault (the exit is then to cool), else none.
   */
  passedElsewhere(exit: number, target: string, now: number): string[] {
    remember(this.passed, target, now);
    this.backoffs.delete(target);
    return this.addEvidence(exit, target, now);
  }

  /** Adds `target` to the evidence against `exit`; the targets cleared when that shows it at fault, else none. */
  private addEvidence(exit: number, target: string, now: number): string[] {
    let seen = this.evidence.get(exit);
    if (!seen) this.evidence.set(exit, (seen = new Map()));
    for (const [key, at] of seen) if (now - at > EVIDENCE_WINDOW_MS) seen.delete(key);
    seen.set(target, now);
    if (seen.size < EXIT_FAULT_TARGETS) return [];
    this.evidence.delete(exit);
    const cleared = [...seen.keys()];
    for (const key of cleared) this.backoffs.delete(key);
    return cleared;
  }

  /** A refusal: charged to its target, unless it completes the evidence against its exit. */
  charge(r: Refusal): Charge {
    const { exit, target, now } = r;
    if (r.source === 'poll' && this.passed.has(target) && !this.backoffs.has(target)) {
      const cleared = this.addEvidence(exit, target, now);
      if (cleared.length > 0) return { exitAtFault: true, targetUntil: null, cleared };
    }
    const streak = (this.backoffs.get(target)?.streak ?? 0) + 1;
    const doubling = Math.min(TARGET_BACKOFF_MAX_MS, this.settings.targetBackoffMs * 2 ** Math.min(20, streak - 1));
    // The platform's own wait first; refused again right after it, the back-off doubles on.
    const wait = r.retryAfterMs !== null && streak === 1 ? r.retryAfterMs : Math.max(r.retryAfterMs ?? 0, doubling);
    const until = now + wait;
    remember(this.backoffs, target, { streak, until, probeUntil: 0 });
    return { exitAtFault: false, targetUntil: until, cleared: [] };
  }
}
