// Reading a platform's Retry-After header (RFC 9110 10.2.3): how long it asked us to wait before
// the next request, as delta-seconds or as an HTTP-date. Whatever the header holds, the answer is
// a wait in ms (never negative) or null, because a platform that is already refusing us must not
// also be able to crash the poller or stall it on a value it never meant.

/** RFC 9111 1.2.2's ceiling for delta-seconds too large to hold: about 68 years, still a finite wait. */
const MAX_DELTA_SECONDS = 2 ** 31;

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const MONTH = MONTHS.join('|');
const DAY = 'mon|tue|wed|thu|fri|sat|sun';
const LONG_DAY = 'monday|tuesday|wednesday|thursday|friday|saturday|sunday';

// The three forms of RFC 9110 5.6.7, all in UTC. Date.parse is not used: it accepts nearly
// anything ("1" is the year 2001) and reads asctime's date in the machine's own time zone.
/** IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`. */
const IMF_FIXDATE = new RegExp(`^(?:${DAY}), (\\d{2}) (${MONTH}) (\\d{4}) (\\d{2}):(\\d{2}):(\\d{2}) GMT$`, 'i');
/** Obsolete RFC 850 form: `Sunday, 06-Nov-94 08:49:37 GMT`. */
const RFC850_DATE = new RegExp(`^(?:${LONG_DAY}), (\\d{2})-(${MONTH})-(\\d{2}) (\\d{2}):(\\d{2}):(\\d{2}) GMT$`, 'i');
/** Obsolete asctime form: `Sun Nov  6 08:49:37 1994`. */
const ASCTIME_DATE = new RegExp(`^(?:${DAY}) (${MONTH}) ([ \\d]\\d) (\\d{2}):(\\d{2}):(\\d{2}) (\\d{4})$`, 'i');

/**
 * The wait a Retry-After value asks for, in ms from `nowMs` (when the answer arrived): its
 * delta-seconds, or the time until its HTTP-date (0 once that has passed). Null when the header
 * is absent or is neither form.
 */
export function parseRetryAfter(value: string | null | undefined, nowMs: number): number | null {
  if (typeof value !== 'string') return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Math.min(Number(text), MAX_DELTA_SECONDS) * 1000;
  const at = httpDateMs(text, nowMs);
  if (at === null || !Number.isFinite(nowMs)) return null;
  return Math.max(0, at - nowMs);
}

/** An HTTP-date as epoch ms, or null when it is not one (or names a day that does not exist). */
function httpDateMs(text: string, nowMs: number): number | null {
  let m = IMF_FIXDATE.exec(text);
  if (m) return utc(Number(m[3]), m[2]!, Number(m[1]), m[4]!, m[5]!, m[6]!);
  m = RFC850_DATE.exec(text);
  if (m) return utc(fullYear(Number(m[3]), nowMs), m[2]!, Number(m[1]), m[4]!, m[5]!, m[6]!);
  m = ASCTIME_DATE.exec(text);
  if (m) return utc(Number(m[6]), m[1]!, Number(m[2]!.trim()), m[3]!, m[4]!, m[5]!);
  return null;
}

/**
 * RFC 9110 5.6.7: a two-digit year that would lie more than 50 years ahead is the most recent
 * past year with those digits.
 */
function fullYear(twoDigits: number, nowMs: number): number {
  const thisYear = Number.isFinite(nowMs) ? new Date(nowMs).getUTCFullYear() : 2000;
  const year = Math.floor(thisYear / 100) * 100 + twoDigits;
  return year > thisYear + 50 ? year - 100 : year;
}

function utc(year: number, monthName: string, day: number, hh: string, mm: string, ss: string): number | null {
  const month = MONTHS.indexOf(monthName.toLowerCase());
  const [hour, minute, second] = [Number(hh), Number(mm), Number(ss)];
  // 60 is a leap second, which RFC 9110 allows; read as :59 so 23:59:60 stays on its own day.
  if (hour > 23 || minute > 59 || second > 60) return null;
  const ms = Date.UTC(year, month, day, hour, minute, Math.min(second, 59));
  // Date.UTC rolls 31 Feb over into March, and reads years below 100 as 19xx: garbage, not a wait.
  const date = new Date(ms);
  return date.getUTCDate() === day && date.getUTCFullYear() === year ? ms : null;
}
