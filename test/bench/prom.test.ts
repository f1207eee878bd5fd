// The benches' reading of Prometheus histograms (bench/monitors/prom.ts): a quantile at bucket
// resolution, and how reports print it, past the top bucket included (bench:capacity printed a
// saturated step's lateness as "≤ Infinity s").
import { describe, expect, it } from 'vitest';
import { atMostText, PromSnapshot } from '../../bench/monitors/prom.ts';

const histogram = (counts: Record<string, number>) =>
  PromSnapshot.parse(Object.entries(counts).map(([le, n]) => `monitor_poll_lateness_seconds_bucket{le="${le}"} ${n}`).join('\n'));

describe('histogram quantiles in reports', () => {
  it('names the bucket a quantile falls in, and says "over" the top bound past it', () => {
    const within = histogram({ '0.5': 90, '1': 99, '10': 100, '+Inf': 100 }).quantile('monitor_poll_lateness_seconds', 0.99)!;
    expect(within).toEqual({ above: 0.5, atMost: 1, count: 100 });
    expect(atMostText(within)).toBe('≤ 1 s');
    const past = histogram({ '0.5': 10, '1': 20, '10': 50, '+Inf': 100 }).quantile('monitor_poll_lateness_seconds', 0.99)!;
    expect(past.atMost).toBe(Infinity);
    expect(atMostText(past)).toBe('> 10 s');
  });
});
