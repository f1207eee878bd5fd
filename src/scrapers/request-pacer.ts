// One platform's request budget (SCRAPE_RPS_PER_PLATFORM): hands out send times spaced 1000/rps
// ms apart, so a thousand targets due in the same second reach the platform spread over the
// seconds that follow instead of all at once. It is the generic cell rate algorithm (a token
// bucket that reserves instead of refusing) on the clock the caller passes in, with no timers of
// its own, so a scheduler can plan with it and a test can drive it with made-up times.

export class RequestPacer {
  /** Spacing between send times at the steady rate. */
  readonly intervalMs: number;
  /** Requests an idle pacer lets go at once: max(1, floor(rps / 10)). */
  readonly burst: number;
  /** When the next request would be due at the steady rate ("theoretical arrival time"). */
  private due = Number.NEGATIVE_INFINITY;
  private paused = Number.NEGATIVE_INFINITY;

  constructor(readonly rps: number) {
    if (!Number.isFinite(rps) || rps <= 0) throw new RangeError(`requests per second must be a positive number, not ${rps}`);
    this.intervalMs = 1000 / rps;
    this.burst = Math.max(1, Math.floor(rps / 10));
  }

  /** How far ahead of the steady rate a send may run: the burst beyond the first request. */
  private get toleranceMs(): number {
    return (this.burst - 1) * this.intervalMs;
  }

  /**
   * Takes the next slot: the epoch ms at which this request may be sent, at or after `now` and
   * the end of any pause. A slot once given is kept, so call it when the request will be sent.
   */
  reserve(now: number): number {
    const at = this.nextSendAt(now);
    this.due = Math.max(this.due, at) + this.intervalMs;
    return at;
  }

  /** The time reserve(now) would give, without taking the slot. */
  nextSendAt(now: number): number {
    return Math.max(now, this.due - this.toleranceMs, this.paused);
  }

  /**
   * Holds the whole budget back until `untilMs` (a platform's Retry-After). Afterwards requests
   * resume at the steady rate, without a burst, since the platform has just said it had too many.
   * Slots handed out before the pause are not recalled: check pausedUntil before sending one.
   */
  pause(untilMs: number): void {
    if (Number.isNaN(untilMs) || untilMs <= this.paused) return;
    this.paused = untilMs;
    this.due = Math.max(this.due, untilMs + this.toleranceMs);
  }

  /** The end of the latest pause (-Infinity if never paused). */
  get pausedUntil(): number {
    return this.paused;
  }
}
