// bench:search's verdicts (issue 40's targets, at any catalog size): every typical scenario's p95
// under 20 ms and every worst case's under 100 ms, through the function the route calls; and the
// typical scenarios sent through the gateway under 20 ms there too (the issue's target is
// "through the gateway"). Apart from the run so a test can show each failing; a run that
// measured nothing fails.
import type { Summary } from '../support/percentiles.ts';

export const TYPICAL_P95_MS = 20;
export const WORST_P95_MS = 100;

export interface ScenarioFigures {
  name: string;
  kind: 'typical' | 'broad';
  ours: Summary;
}

export function searchVerdict(rows: readonly ScenarioFigures[], events: number): { pass: boolean; line: string } {
  const highest = (kind: ScenarioFigures['kind']) => rows.filter((r) => r.kind === kind).reduce<ScenarioFigures | null>((a, b) => (a === null || b.ours.p95 > a.ours.p95 ? b : a), null);
  const typical = highest('typical');
  const worst = highest('broad');
  const measured = rows.length > 0 && rows.every((r) => r.ours.n > 0 && Number.isFinite(r.ours.p95));
  const typicalMet = typical !== null && typical.ours.p95 < TYPICAL_P95_MS;
  const worstMet = worst === null || worst.ours.p95 < WORST_P95_MS;
  const pass = measured && typicalMet && worstMet;
  const figure = (r: ScenarioFigures | null) => (r ? `highest ${r.name}, ${r.ours.p95.toFixed(1)} ms` : 'none measured');
  return {
    pass,
    line:
      `target at ${events.toLocaleString('en-US')} events: typical p95 under ${TYPICAL_P95_MS} ms ${typicalMet ? 'met' : 'NOT met'} (${figure(typical)}); ` +
      `worst cases under ${WORST_P95_MS} ms ${worstMet ? 'met' : 'NOT met'} (${figure(worst)})${measured ? '' : '; a scenario measured nothing'}`,
  };
}

/** The typical scenarios sent through the gateway (HTTP, key, metering), each with its HTTP figures. */
export interface HttpFigures {
  name: string;
  http: Summary;
}

export function searchHttpVerdict(rows: readonly HttpFigures[], events: number): { pass: boolean; line: string } {
  const highest = rows.reduce<HttpFigures | null>((a, b) => (a === null || b.http.p95 > a.http.p95 ? b : a), null);
  const measured = rows.length > 0 && rows.every((r) => r.http.n > 0 && Number.isFinite(r.http.p95));
  const pass = measured && highest !== null && highest.http.p95 < TYPICAL_P95_MS;
  return {
    pass,
    line:
      `target at ${events.toLocaleString('en-US')} events through the gateway: typical p95 under ${TYPICAL_P95_MS} ms ${pass ? 'met' : 'NOT met'} ` +
      `(${highest ? `highest ${highest.name}, ${highest.http.p95.toFixed(1)} ms` : 'none measured'})${measured ? '' : '; a scenario measured nothing'}`,
  };
}
