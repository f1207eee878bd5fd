// Billing period arithmetic: monthly periods anchored on the subscription's start day.

const DAY_MS = 86_400_000;

/** A monthly schedule: boundary k falls on `day` (clamped to short months) of month `month + k`, at `timeOfDayMs`. */
interface Schedule {
  year: number;
  month: number;
  day: number;
  timeOfDayMs: number;
}

function boundary(s: Schedule, k: number): Date {
  const m = s.month + k;
  const lastDay = new Date(Date.UTC(s.year, m + 1, 0)).getUTCDate();
  return new Date(Date.UTC(s.year, m, Math.min(s.day, lastDay)) + s.timeOfDayMs);
}

function scheduleOf(d: Date, day = d.getUTCDate()): Schedule {
  return { year: d.getUTCFullYear(), month: d.getUTCMonth(), day, timeOfDayMs: ((d.getTime() % DAY_MS) + DAY_MS) % DAY_MS };
}

/** The period of a schedule containing `now` (boundary 0 at or before `now`). */
function periodOf(s: Schedule, now: Date): { start: Date; end: Date } {
  const origin = boundary(s, 0);
  // Jump close first so a years-old anchor does not loop month by month.
  let n = Math.max(0, (now.getUTCFullYear() - origin.getUTCFullYear()) * 12 + (now.getUTCMonth() - origin.getUTCMonth()) - 1);
  while (n > 0 && boundary(s, n).getTime() > now.getTime()) n--;
  while (boundary(s, n + 1).getTime() <= now.getTime()) n++;
  return { start: boundary(s, n), end: boundary(s, n + 1) };
}

/** Adds whole calendar months in UTC, clamping to the month's last day (Jan 31 + 1 month = Feb 28/29). */
export function addMonths(d: Date, months: number): Date {
  return boundary(scheduleOf(d), months);
}

/** The period containing `now`, stepping monthly from an anchor period start. */
export function periodContaining(anchor: Date, now: Date): { start: Date; end: Date } {
  return periodOf(scheduleOf(anchor), now);
}

/**
 * Moves a stored period forward to the one containing `now`: the next period starts where the
 * stored one ended, so periods never overlap or leave a gap. A stored start may already be
 * clamped to a short month (a Jan 31 anchor gives [Feb 28, Mar 31)), so the anchor day is
 * recovered from both bounds rather than re-anchored on the start, which would drift to the
 * 28th for good.
 */
export function rollForward(current: { start: Date; end: Date }, now: Date): { start: Date; end: Date } {
  if (now.getTime() < current.end.getTime()) return current;
  const end = current.end;
  const endIsLastDay = new Date(Date.UTC(end.getUTCFullYear(), end.getUTCMonth() + 1, 0)).getUTCDate() === end.getUTCDate();
  const day = endIsLastDay ? Math.max(end.getUTCDate(), current.start.getUTCDate()) : end.getUTCDate();
  return periodOf(scheduleOf(end, day), now);
}
