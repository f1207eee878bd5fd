// The arithmetic behind Market Data's derived statistics, in one place so that the seed and the
// tracker's roll-up give every figure the same meaning (migration 006 and docs/market-data.md, "Figures").

/** A money or count value as it comes from PostgreSQL (numeric arrives as a string) or code. */
export type Amount = number | string | null | undefined;

function toNumber(v: Amount): number | null {
  if (v === null || v === undefined || v === '') return null;
  const n = typeof v === 'number' ? v : Number(v);
  return Number.isFinite(n) ? n : null;
}

/**
 * Change from `before` to `now` in percent of `before`, as a decimal string with 2 places
 * ("12.50", "-3.00"); null when either is unknown or `before` is 0 (no meaningful ratio).
 */
export function percentChange(now: Amount, before: Amount): string | null {
  const a = toNumber(now);
  const b = toNumber(before);
  if (a === null || b === null || b === 0) return null;
  return roundHalfAwayFromZero(((a - b) / b) * 100).toFixed(2);
}

/** A price (numeric text from PostgreSQL, or a number) in whole cents, for exact sums and bins. */
export function cents(price: number | string): number {
  return Math.round(Number(price) * 100);
}

/** Money rounded to cents as a decimal string ("120.50"); null stays null. */
export function money(v: Amount): string | null {
  const n = toNumber(v);
  return n === null ? null : roundHalfAwayFromZero(n).toFixed(2);
}

// toFixed rounds the binary value (1.005 -> "1.00"); nudging by a relative epsilon first makes
// values that were meant to be exact halves round as a person would.
function roundHalfAwayFromZero(n: number): number {
  const scaled = Math.abs(n) * 100 * (1 + Number.EPSILON * 4);
  return (Math.sign(n) * Math.round(scaled)) / 100;
}
