// A platform that refuses every event we ask it for, through every exit (a wave of 429s for
// everyone, a bot wall raised for all visitors): its refusals say nothing about the events or the
// addresses, so they are charged to the platform as a whole (issue 39). Charged to each target
// (refusals.ts), each kept its own doubling back-off, and after a 30 s refusal the last target was
// asked again 96 s after the platform answered again (the rehearsal, docs/performance.md).
//
//   - A blackout begins when BLACKOUT_TARGETS distinct targets were refused to the monitors'
//     polls, and nothing was answered for BLACKOUT_SILENCE_MS: an event refused for a reason of
//     its own does not stop the others from being answered. It begins at once when a poll's
//     refusal would cool the last healthy exit (one address, or every other one cooling): with no
//     exit left, the exit rule's doubling cool-down would stand for the platform's (60 s, then
//     120 s...). On-demand scrapes are never evidence: anyone with a key chooses what it asks for,
//     and must not be able to pause every monitor.
//   - During it, one request at a time asks whether it is over (the probe), once a step: the
//     platform's Retry-After, else the targets' first back-off, never doubled: a request every few
//     seconds is less than one visitor sends, and doubling is what made the recovery late.
//     Everyone else is answered from the blackout, with no request.
//   - The first answer ends it: every target held or refused during it is due again at once
//     (ExitPool's cleared listeners), and the back-offs charged to targets before the blackout was
//     recognised are lifted (their streaks kept, so an event that is refused for its own reason
//     goes on doubling).
// Pure bookkeeping on the caller's clock; ExitPool (exit-pool.ts) holds one per platform.

import { PROBE_WAIT_MS, remember } from './refusals.ts';

/** Distinct targets refused to polls, with nothing answered, that show the platform refuses everyone. */
export const BLACKOUT_TARGETS = 5;
/** ... and for at least this long since the last answer. */
export const BLACKOUT_SILENCE_MS = 2_000;
/** How the blackout's probe stands, for whoever asks (ExitPool.ask). */
export interface BlackoutAsking {
  /** Not before then: answered from the blackout (0 when this ask is the probe). */
  waitUntil: number;
  probe: boolean;
}

export class Blackout {
  /** The last answer of any target through any exit (null: none yet). */
  private lastAnswerAt: number | null = null;
  /** When the silence began: the last answer, or the first refusal when there was none. */
  silentSince = 0;
  /** Distinct targets refused to polls since the last answer. */
  private readonly refused = new Set<string>();
  /** Targets answered from the blackout (no request), to be released when it ends. */
  private readonly held = new Set<string>();
  private on = false;
  /** The current step ends then: the next ask after it is the probe. */
  private until = 0;
  private probeTarget: string | null = null;
  private probeUntil = 0;
  /** Blackouts so far, and when the current one began (ops figures). */
  count = 0;
  startedAt = 0;

  constructor(private readonly settings: { stepMs: number; probeMaxMs: number }) {}

  /** Whether the platform is in a blackout. */
  active(): boolean {
    return this.on;
  }

  /**
   * Someone is about to ask for `target`: null when there is no blackout (the target's own
   * back-off decides), else whether this ask is the probe or waits.
   */
  ask(target: string, now: number): BlackoutAsking | null {
    if (!this.on) return null;
    if (now < this.until) {
      remember(this.held, target);
      return { waitUntil: this.until, probe: false };
    }
    if (this.probeUntil > now) {
      remember(this.held, target);
      return { waitUntil: Math.min(this.probeUntil, now + PROBE_WAIT_MS), probe: false };
    }
    this.probeTarget = target;
    this.probeUntil = now + this.settings.probeMaxMs;
    return { waitUntil: 0, probe: true };
  }

  /** The ask of `target` ended without a verdict (a time-out, a 5xx): if it was the probe, another may ask. */
  released(target: string): void {
    if (this.probeTarget === target) {
      this.probeTarget = null;
      this.probeUntil = 0;
    }
  }

  /**
   * A refusal of `target`: when the platform is in a blackout (or this refusal shows it is), the
   * refusal is the platform's and this returns when its next step ends; else null (charged as
   * refusals.ts says).
   */
  refusal(target: string, retryAfterMs: number | null, source: 'poll' | 'on-demand', now: number): number | null {
    if (source === 'poll') {
      if (this.refused.size === 0) this.silentSince = this.lastAnswerAt ?? now;
      remember(this.refused, target);
      if (!this.on && this.refused.size >= BLACKOUT_TARGETS && now - this.silentSince >= BLACKOUT_SILENCE_MS) this.begin(now);
    }
    if (!this.on) return null;
    if (source === 'poll' || this.probeTarget === target) {
      this.until = Math.max(this.until, now + (retryAfterMs ?? this.settings.stepMs));
      this.released(target);
    }
    return Math.max(this.until, now);
  }

  /**
   * Begins a blackout now, whatever the evidence so far: the refusal would cool the platform's last
   * healthy exit (ExitPool.refused), and with no exit left to answer, a refusal through it is all
   * anyone will hear of the platform: a blackout's probe, not a doubling cool-down, finds its end.
   */
  begin(now: number): void {
    if (this.on) return;
    this.on = true;
    this.count++;
    this.startedAt = now;
  }

  /**
   * The platform answered `target` (anything but a refusal). Returns the targets to release
   * when this ends a blackout (held or refused during it), else none.
   */
  answered(now: number): string[] {
    this.lastAnswerAt = now;
    if (!this.on) {
      this.refused.clear();
      return [];
    }
    const released = [...new Set([...this.held, ...this.refused])];
    this.on = false;
    this.until = 0;
    this.probeTarget = null;
    this.probeUntil = 0;
    this.held.clear();
    this.refused.clear();
    return released;
  }
}
