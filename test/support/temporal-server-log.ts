// The end-of-run summary of the test Temporal server's log (global-setup.ts): how many warnings
// and errors it wrote, grouped by message and cause, so that a run whose Temporal misbehaved says
// so in its own output (issue 22's `interrupted (9)` was found only by reading a server log).

const LEVELS: Record<number, string> = { 40: 'warning', 50: 'error', 60: 'fatal' };
const SHOWN = 8;

/** `log` is the pino JSON lines that temporal/dev-server.ts writes for the server's output. */
export function summariseServerLog(log: string): string {
  const groups = new Map<string, number>();
  const counts = new Map<string, number>();
  for (const line of log.split('\n')) {
    if (!line) continue;
    let entry: { level?: number; msg?: string; server?: { error?: unknown } };
    try {
      entry = JSON.parse(line);
    } catch {
      entry = { level: 40, msg: line };
    }
    const level = LEVELS[entry.level ?? 0];
    if (!level) continue;
    counts.set(level, (counts.get(level) ?? 0) + 1);
    const cause = typeof entry.server?.error === 'string' ? `: ${entry.server.error.slice(0, 160)}` : '';
    const key = `${level} ${entry.msg ?? '(no message)'}${cause}`;
    groups.set(key, (groups.get(key) ?? 0) + 1);
  }
  if (groups.size === 0) return 'temporal: the test server logged no warning or error\n';
  const totals = [...counts].map(([level, n]) => `${n} ${level}${n === 1 ? '' : 's'}`).join(', ');
  const top = [...groups].sort((a, b) => b[1] - a[1]).slice(0, SHOWN);
  const more = groups.size > SHOWN ? `\n  (${groups.size - SHOWN} more kinds)` : '';
  return `temporal: the test server logged ${totals}:\n${top.map(([key, n]) => `  ${n} x ${key}`).join('\n')}${more}\n`;
}
