// bench:search's verdicts (bench/search/verdict.ts): met only when every typical scenario's p95 is
// under 20 ms and every worst case's under 100 ms, and, through the gateway, every scenario sent
// there under 20 ms; each bound, and a run that measured nothing, fails them.
import { describe, expect, it } from 'vitest';
import { searchHttpVerdict, searchVerdict, type ScenarioFigures } from '../../bench/search/verdict.ts';

const row = (name: string, kind: ScenarioFigures['kind'], p95: number, n = 100): ScenarioFigures => ({ name, kind, ours: { n, p50: p95 / 2, p95, max: p95 } });

describe("bench:search's verdict", () => {
  it('passes when both bounds hold', () => {
    expect(searchVerdict([row('city', 'typical', 19.9), row('one letter', 'broad', 99.9)], 1_000_000).pass).toBe(true);
  });

  it('fails on one slow typical scenario, naming it', () => {
    const v = searchVerdict([row('artist', 'typical', 3), row('filters only', 'typical', 20), row('one letter', 'broad', 50)], 1_000_000);
    expect(v.pass).toBe(false);
    expect(v.line).toContain('NOT met (highest filters only, 20.0 ms)');
  });

  it('fails on one slow worst case', () => {
    expect(searchVerdict([row('city', 'typical', 5), row('common word', 'broad', 100)], 1_000_000).pass).toBe(false);
  });

  it('fails when nothing was measured', () => {
    expect(searchVerdict([], 100_000).pass).toBe(false);
    expect(searchVerdict([row('city', 'typical', NaN, 0)], 100_000).pass).toBe(false);
  });

  it('through the gateway: passes under 20 ms, fails on one scenario at 20 naming it, and on nothing measured', () => {
    const http = (name: string, p95: number, n = 100) => ({ name, http: { n, p50: p95 / 2, p95, max: p95 } });
    expect(searchHttpVerdict([http('city', 19.9), http('one typo', 12)], 1_000_000).pass).toBe(true);
    const v = searchHttpVerdict([http('city', 17.9), http('text: artist name', 25.1)], 1_000_000);
    expect(v.pass).toBe(false);
    expect(v.line).toContain('NOT met (highest text: artist name, 25.1 ms)');
    expect(searchHttpVerdict([], 1_000_000).pass).toBe(false);
    expect(searchHttpVerdict([http('city', NaN, 0)], 1_000_000).pass).toBe(false);
  });
});
