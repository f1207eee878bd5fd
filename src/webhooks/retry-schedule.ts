// When a failed delivery is tried again. Exponential with full-range jitter (each wait drawn in
// [0.8, 1.2] × its step, so endpoints failing together do not retry in lockstep), for a little
// over 24 hours in all; `Retry-After` on a 429 (or Discord's retry_after) replaces the step.
// Which answers are worth retrying at all is decided here too.

/**
 * Waits after attempts 1, 2, ... (ms): 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 2 h, 4 h, 8 h, 8 h,
 * 8 h: twelve attempts over about 31.7 hours (jitter aside).
 */
export const DEFAULT_SCHEDULE_MS: readonly number[] = [5e3, 30e3, 120e3, 600e3, 1_800e3, 3_600e3, 7_200e3, 14_400e3, 28_800e3, 28_800e3, 28_800e3];
export const JITTER = 0.2;
/** A webhook whose attempts have all failed for this long is turned off (disabled_reason says why). */
export const DISABLE_AFTER_FAILING_MS = 5 * 24 * 3600e3;
/** A Retry-After longer than this is capped: the endpoint still gets its full schedule. */
export const MAX_RETRY_AFTER_MS = 3_600e3;

/** The longest a delivery can stay in its schedule: every wait at its jittered longest. */
export function retryScheduleSpanMs(schedule: readonly number[]): number {
  return schedule.reduce((sum, ms) => sum + ms * (1 + JITTER), 0);
}

/**
 * The wait before the next attempt after `attempts` failed ones, or null when the schedule is
 * spent. `random` is in [0, 1).
 */
export function nextDelayMs(attempts: number, schedule: readonly number[], retryAfterMs: number | null, random: number): number | null {
  if (attempts > schedule.length) return null;
  if (retryAfterMs !== null) return Math.min(Math.max(retryAfterMs, 0), MAX_RETRY_AFTER_MS);
  const step = schedule[attempts - 1]!;
  return Math.round(step * (1 - JITTER + 2 * JITTER * random));
}

/** 2xx is delivered; other 4xx are permanent except these, which may clear up. */
const TRANSIENT_4XX = new Set([408, 409, 425, 429]);

export type Verdict = 'delivered' | 'retry' | 'permanent';

export function verdictFor(status: number | null): Verdict {
  if (status === null) return 'retry';
  if (status >= 200 && status < 300) return 'delivered';
  if (status >= 400 && status < 500 && !TRANSIENT_4XX.has(status)) return 'permanent';
  return 'retry';
}

/** Retry-After as milliseconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterMs(header: string | undefined, now = Date.now()): number | null {
  if (!header) return null;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}
