// The price histogram of an event's sales (spec 2.2 `price_histogram`), shared by the seed and
// the tracker's roll-up. Computed in integer cents so bin edges are exact decimal strings.
//
// Rule: up to `bins` (10) equal-width bins, in whole cents, from the lowest to the highest per-ticket sale price; a bin
// covers [start, end), the last one [start, end] so the highest sale is counted; tickets_sold
// sums the sales' quantities. Every bin is listed, empty ones with 0. When every sale has one
// price there is a single bin [p, p]. With no sales: min and max are "0" and data is empty.
import { cents } from './stats-formulas.ts';

export const DEFAULT_HISTOGRAM_BINS = 10;

export interface HistogramSale {
  /** Per-ticket price, as PostgreSQL's numeric text ("120.50") or a number. */
  price: string | number;
  quantity: number;
}

export interface HistogramBin {
  start: string;
  end: string;
  tickets_sold: number;
}

export interface PriceHistogram {
  bins: number;
  min: string;
  max: string;
  currency: string;
  data: HistogramBin[];
}

function text(c: number): string {
  const sign = c < 0 ? '-' : '';
  const abs = Math.abs(c);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}

export function priceHistogram(sales: readonly HistogramSale[], currency: string, bins = DEFAULT_HISTOGRAM_BINS): PriceHistogram {
  if (!Number.isInteger(bins) || bins < 1) throw new RangeError(`bins must be a positive integer, got ${bins}`);
  const priced = sales.filter((s) => s.quantity > 0 && Number.isFinite(Number(s.price))).map((s) => ({ c: cents(s.price), q: s.quantity }));
  if (priced.length === 0) return { bins, min: '0', max: '0', currency, data: [] };
  let lo = Infinity;
  let hi = -Infinity;
  for (const s of priced) {
    if (s.c < lo) lo = s.c;
    if (s.c > hi) hi = s.c;
  }
  if (lo === hi) {
    const total = priced.reduce((n, s) => n + s.q, 0);
    return { bins: 1, min: text(lo), max: text(hi), currency, data: [{ start: text(lo), end: text(hi), tickets_sold: total }] };
  }
  // Width rounded up to whole cents so the bins reach the highest price; the last edge is `hi`.
  // A range of fewer cents than bins, or a rounded-up width, can need fewer bins to reach `hi`;
  // `bins` in the answer is the number actually listed.
  const width = Math.ceil((hi - lo) / bins);
  const used = Math.ceil((hi - lo) / width);
  const counts = new Array<number>(used).fill(0);
  for (const s of priced) counts[Math.min(used - 1, Math.floor((s.c - lo) / width))]! += s.q;
  const data = counts.map((n, i) => ({
    start: text(lo + i * width),
    end: text(i === used - 1 ? hi : lo + (i + 1) * width),
    tickets_sold: n,
  }));
  return { bins: used, min: text(lo), max: text(hi), currency, data };
}
