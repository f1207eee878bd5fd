// Strict reading of the Market Data read endpoints' query strings: a parameter the endpoint does
// not define, or one given twice, is a 400 INVALID_REQUEST rather than silently ignored (a
// misspelt `sales_limt=100` would otherwise quietly return and bill the default), and integers
// are plain decimal digits, as the gateway reads sales_limit (src/gateway/catalog.ts).
import type { RouteContext } from '../../gateway/route.ts';
import { MarketDataError } from './errors.ts';

/** A client value quoted in an error message: JSON-escaped and cut short. */
export function quoted(value: string, max = 40): string {
  return JSON.stringify(value.length > max ? `${value.slice(0, max)}…` : value);
}

/**
 * The endpoint's query parameters, each as one string or undefined; rejects parameters not in
 * `allowed` and repeated ones.
 */
export function readQuery<K extends string>(ctx: RouteContext, allowed: readonly K[]): Record<K, string | undefined> {
  const out = {} as Record<K, string | undefined>;
  for (const [name, value] of Object.entries(ctx.query)) {
    if (!(allowed as readonly string[]).includes(name)) {
      const accepted = allowed.length ? `accepted: ${allowed.join(', ')}` : 'this endpoint takes none';
      throw new MarketDataError('INVALID_REQUEST', `unknown query parameter ${quoted(name)}; ${accepted}`);
    }
    if (Array.isArray(value)) throw new MarketDataError('INVALID_REQUEST', `${name} must be given once`);
    out[name as K] = value;
  }
  return out;
}

/** An integer parameter within [min, max], `fallback` when absent. Leading zeros are allowed ("020" is 20). */
export function integerParam(name: string, raw: string | undefined, bounds: { min: number; max: number; fallback: number }): number {
  if (raw === undefined) return bounds.fallback;
  const n = /^[0-9]+$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= bounds.min && n <= bounds.max)) {
    throw new MarketDataError('INVALID_REQUEST', `${name} must be an integer from ${bounds.min} to ${bounds.max}, got ${quoted(raw)}`);
  }
  return n;
}
