// The benches' verdict on the bot walls (bench/monitors/report.ts, wallRow; issue 37): it passes
// only when the wall refused nothing and let something through, so a run whose polls never
// reached the wall, or met it and were refused, fails; walls off gives no verdict.
import { describe, expect, it } from 'vitest';
import type { WallFigures } from '../../bench/monitors/meter.ts';
import { wallRow } from '../../bench/monitors/report.ts';

const none = { plaintext: 0, tls: 0, http2: 0, headers: 0, cookie_missing: 0, cookie_unknown: 0, cookie_stale: 0, cookie_agent: 0 };
const figures = (passed: number, refused: Partial<typeof none> = {}): WallFigures => ({
  on: true,
  passed,
  refused: { ...none, ...refused },
  lastRefusal: Object.values(refused).some((n) => n > 0) ? { reason: 'cookie_stale', detail: 'an old cookie', at: '2026-11-29T00:00:00Z' } : null,
});

describe('the walls verdict of the benches', () => {
  it('passes with requests let through and none refused', () => {
    expect(wallRow(figures(12_000)).pass).toBe(true);
  });

  it('fails on one refusal, naming its reason', () => {
    const row = wallRow(figures(12_000, { cookie_stale: 1 }));
    expect(row.pass).toBe(false);
    expect(row.measured).toMatch(/1 refused \(cookie_stale 1\) of 12,001 judged; last: cookie_stale/);
  });

  it('fails when the wall judged nothing: counting nothing proves nothing', () => {
    expect(wallRow(figures(0)).pass).toBe(false);
  });

  it('gives no verdict with walls off or on a simulator without them', () => {
    expect(wallRow({ ...figures(5), on: false }).pass).toBeNull();
    expect(wallRow(null).pass).toBeNull();
  });
});
