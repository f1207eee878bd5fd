// The worker's Prometheus text (/metrics) as numbers the bench can subtract: counters and
// histogram buckets add up across worker incarnations (a SIGKILLed worker's last scrape is kept
// and the new one's counts are added to it), gauges are the newest reading's.

type Kind = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

interface Series {
  name: string;
  labels: Record<string, string>;
  value: number;
  kind: Kind;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

function keyOf(name: string, labels: Record<string, string>): string {
  return `${name}{${Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join(',')}}`;
}

export class PromSnapshot {
  constructor(readonly series: ReadonlyMap<string, Series> = new Map()) {}

  static parse(text: string): PromSnapshot {
    const kinds = new Map<string, Kind>();
    const series = new Map<string, Series>();
    for (const raw of text.split('\n')) {
      const line = raw.trim();
      if (!line) continue;
      if (line.startsWith('#')) {
        const m = /^# TYPE (\S+) (\S+)/.exec(line);
        if (m) kinds.set(m[1]!, m[2] as Kind);
        continue;
      }
      const m = LINE.exec(line);
      if (!m) continue;
      const name = m[1]!;
      const labels: Record<string, string> = {};
      for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1]!] = l[2]!;
      const value = Number(m[3]);
      const kind = kinds.get(name) ?? kinds.get(name.replace(/_(bucket|sum|count)$/, '')) ?? 'untyped';
      series.set(keyOf(name, labels), { name, labels, value, kind });
    }
    return new PromSnapshot(series);
  }

  private static additive(s: Series): boolean {
    return s.kind === 'counter' || s.kind === 'histogram';
  }

  /** Counters and histograms summed (an earlier incarnation's and this one's); gauges are `next`'s. */
  plus(next: PromSnapshot): PromSnapshot {
    const out = new Map<string, Series>();
    for (const [k, s] of this.series) if (PromSnapshot.additive(s)) out.set(k, { ...s });
    for (const [k, s] of next.series) {
      const prev = out.get(k);
      out.set(k, prev && PromSnapshot.additive(s) ? { ...s, value: prev.value + s.value } : { ...s });
    }
    return new PromSnapshot(out);
  }

  /** What the counters and histograms gained since `before`; gauges as they are now. */
  minus(before: PromSnapshot): PromSnapshot {
    const out = new Map<string, Series>();
    for (const [k, s] of this.series) {
      const prev = before.series.get(k);
      out.set(k, PromSnapshot.additive(s) ? { ...s, value: s.value - (prev?.value ?? 0) } : { ...s });
    }
    return new PromSnapshot(out);
  }

  private matching(name: string, filter: Record<string, string>): Series[] {
    return [...this.series.values()].filter((s) => s.name === name && Object.entries(filter).every(([k, v]) => s.labels[k] === v));
  }

  /** The sum of every series of `name` whose labels include `filter`. */
  sum(name: string, filter: Record<string, string> = {}): number {
    return this.matching(name, filter).reduce((t, s) => t + s.value, 0);
  }

  /** A label's values with their sums, e.g. polls by outcome. */
  by(name: string, label: string, filter: Record<string, string> = {}): Record<string, number> {
    const out: Record<string, number> = {};
    for (const s of this.matching(name, filter)) {
      const v = s.labels[label] ?? '';
      out[v] = (out[v] ?? 0) + s.value;
    }
    return out;
  }

  /** A histogram's cumulative buckets (upper bound, count), lowest first. */
  buckets(histogram: string, filter: Record<string, string> = {}): [number, number][] {
    const byLe = new Map<number, number>();
    for (const s of this.matching(`${histogram}_bucket`, filter)) {
      const le = s.labels.le === '+Inf' ? Infinity : Number(s.labels.le);
      byLe.set(le, (byLe.get(le) ?? 0) + s.value);
    }
    return [...byLe.entries()].sort((a, b) => a[0] - b[0]);
  }

  /**
   * The q-quantile at bucket resolution: the upper bound of the first bucket holding q of the
   * observations (Infinity when it is the +Inf bucket), with the bucket below it, so a report
   * can say "between 0.25 and 0.5 s". null without observations.
   */
  quantile(histogram: string, q: number, filter: Record<string, string> = {}): { above: number; atMost: number; count: number } | null {
    const b = this.buckets(histogram, filter);
    const count = b.at(-1)?.[1] ?? 0;
    if (count <= 0) return null;
    let below = 0;
    for (const [le, n] of b) {
      if (n >= q * count) return { above: below, atMost: le, count };
      below = le;
    }
    return { above: below, atMost: Infinity, count };
  }

  /** The share of observations at or under `le` (a bucket bound). */
  shareAtMost(histogram: string, le: number, filter: Record<string, string> = {}): number | null {
    const b = this.buckets(histogram, filter);
    const count = b.at(-1)?.[1] ?? 0;
    if (count <= 0) return null;
    const at = b.filter(([bound]) => bound <= le).at(-1)?.[1] ?? 0;
    return at / count;
  }

  gauge(name: string, filter: Record<string, string> = {}): number | null {
    const m = this.matching(name, filter);
    return m.length ? m.reduce((t, s) => t + s.value, 0) : null;
  }
}

/** A quantile (Metrics.quantile) as its bucket's bound: `≤ 0.5 s`, or `> 10 s` past the top bucket. */
export function atMostText(q: { above: number; atMost: number }): string {
  return q.atMost === Infinity ? `> ${q.above} s` : `≤ ${q.atMost} s`;
}
