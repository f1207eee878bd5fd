// bench:stream's verdicts (issues 20 and 40), apart from the run so a test can show each one
// failing: fan-out at least 5x `ws`'s delivered messages/s, and a reconnect storm of the same
// connections within 1.5x of `ws`'s connect time, caps on against none. A run that connected
// nothing or delivered nothing fails: counting nothing proves nothing.

export const FAN_OUT_TARGET = 5;
export const CONNECT_TARGET = 1.5;

export interface StreamVerdict {
  line: string;
  pass: boolean;
}

/** Ours against `ws` on the best delivered messages/s of each. */
export function fanOutVerdict(oursBest: number, wsBest: number): StreamVerdict {
  const ratio = wsBest > 0 ? oursBest / wsBest : NaN;
  const pass = oursBest > 0 && wsBest > 0 && ratio >= FAN_OUT_TARGET;
  return { pass, line: `Best of each: ours / ws = ${ratio.toFixed(2)}x delivered messages/s (target: at least ${FAN_OUT_TARGET}x: ${pass ? 'met' : 'NOT met'})` };
}

/** Ours (connection caps on) against `ws` (none) on the time to connect every client; failed connects fail it. */
export function connectVerdict(ours: { ms: number; failed: number }, ws: { ms: number; failed: number }): StreamVerdict {
  const ratio = ws.ms > 0 ? ours.ms / ws.ms : NaN;
  const pass = ours.failed === 0 && ws.failed === 0 && ours.ms > 0 && ws.ms > 0 && ratio <= CONNECT_TARGET;
  const failed = ours.failed + ws.failed > 0 ? ` (${ours.failed} and ${ws.failed} failed)` : '';
  return { pass, line: `Connects: ours / ws = ${ratio.toFixed(2)}x the time (${Math.round(ours.ms)} against ${Math.round(ws.ms)} ms${failed}; target: at most ${CONNECT_TARGET}x: ${pass ? 'met' : 'NOT met'})` };
}
