// Billing period arithmetic: monthly periods anchored on the subscription's start day.

/** Adds whole calendar months in UTC, clamping to the month's last day (Jan 31 + 1 month = Feb 28/29). */
export function addMonths(d: Date, months: number): Date {
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth() + months;
  const lastDay = new Date(Date.UTC(y, m + 1, 0)).getUTCDate();
  return new Date(
    Date.UTC(y, m, Math.min(d.getUTCDate(), lastDay), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds()),
  );
}

/** The period containing `now`, stepping monthly from an anchor period start. */
export function periodContaining(anchor: Date, now: Date): { start: Date; end: Date } {
  let n = 0;
  // Jump close first so a years-old anchor does not loop month by month.
  const approx = (now.getUTCFullYear() - anchor.getUTCFullYear()) * 12 + (now.getUTCMonth() - anchor.getUTCMonth()) - 1;
  if (approx > 0) n = approx;
  while (addMonths(anchor, n + 1).getTime() <= now.getTime()) n++;
  return { start: addMonths(anchor, n), end: addMonths(anchor, n + 1) };
}
