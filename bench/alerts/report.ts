// The markdown report of bench:alerts: the verdict against the target (0 false, 0 missed, 0
// duplicated on every platform, with notifications expected and received on each), a row per
// platform, a row per scenario with what it waits on, then every false, missed and duplicated
// notification with its step, scenarios whose schedule or observation the bench could not keep,
// and the worker's SIGKILL.
import type { PlatformKey } from '../../src/platform/registry.ts';
import { summarise } from '../support/percentiles.ts';
import { fmtMs } from '../monitors/support.ts';
import type { AlertsConfig } from './config.ts';
import type { KillRecord } from './runner.ts';
import { passes, type Score, type ScriptScore, type Tally } from './score.ts';

export interface ReportInput {
  cfg: AlertsConfig;
  command: string;
  machine: string;
  date: Date;
  score: Score;
  kill: KillRecord | null;
  baselineSeconds: number;
  stepsTotal: number;
  runtimeSeconds: number;
  stream: { reconnects: number; closes: string[] };
  crashes: string[];
  logCounts: Map<string, number>;
  /** Every platform's bot wall over the run (issue 37; null: the simulator reports none). */
  walls: { on: boolean; passed: number; refused: number; lastRefusal: { reason: string; detail: string } | null } | null;
}

function scriptOk(s: ScriptScore): boolean {
  return s.tally.false === 0 && s.tally.missed === 0 && s.tally.duplicated === 0 && s.unseen.length === 0 && s.late.length === 0;
}

/** A platform passes the target, and the bench saw every step of it as scripted. */
function platformOk(t: Tally, scripts: readonly ScriptScore[]): boolean {
  return passes(t) && scripts.every((s) => s.unseen.length === 0 && s.late.length === 0);
}

function delays(t: Tally): string {
  const s = summarise(t.delays);
  const k = summarise(t.killDelays);
  return `${fmtMs(s.p50)} | ${fmtMs(s.p95)} | ${fmtMs(s.max)} | ${k.n ? `${k.n}, max ${fmtMs(k.max)}` : 'none'}`;
}

function why(t: Tally, scripts: readonly ScriptScore[]): string {
  const out: string[] = [];
  if (t.expected === 0) out.push('nothing expected');
  if (t.received === 0) out.push('nothing received');
  if (t.false) out.push(`${t.false} false`);
  if (t.missed) out.push(`${t.missed} missed`);
  if (t.duplicated) out.push(`${t.duplicated} duplicated`);
  if (scripts.some((s) => s.unseen.length)) out.push('steps not seen');
  if (scripts.some((s) => s.late.length)) out.push('timed steps late');
  const pending = [...new Set(scripts.filter((s) => !scriptOk(s) && s.run.script.pending).map((s) => s.run.script.pending!))];
  const real = scripts.filter((s) => !scriptOk(s) && !s.run.script.pending).map((s) => s.run.script.role);
  if (pending.length) out.push(`waits on: ${pending.join('; ')}`);
  if (real.length) out.push(`other: ${real.join(', ')}`);
  return out.join(', ');
}

export function renderReport(r: ReportInput): string {
  const { score, cfg } = r;
  const platforms = [...score.platforms.keys()];
  const scriptsOf = (p: PlatformKey) => score.scripts.filter((s) => s.run.script.platform.platform === p);
  const failing = platforms.filter((p) => !platformOk(score.platforms.get(p)!, scriptsOf(p)));
  const total = [...score.platforms.values()].reduce((a, t) => ({ expected: a.expected + t.expected, received: a.received + t.received }), { expected: 0, received: 0 });
  // With walls on, not one request refused by a wall, out of some it judged (issue 37).
  const wallsOk = !r.walls?.on || (r.walls.refused === 0 && r.walls.passed > 0);
  const pass = failing.length === 0 && score.strays === 0 && r.crashes.length === 0 && wallsOk;
  // A failed verdict exits non-zero once the report is out (Lifecycle.finish).
  if (!pass) process.exitCode = 1;
  const lines: string[] = [];
  lines.push(`# bench:alerts: alert quality on ${platforms.length} platform${platforms.length === 1 ? '' : 's'}`, '');
  lines.push(`${r.date.toISOString()} · \`${r.command}\` · ${r.machine}`, '');
  lines.push(
    `Poll interval ${cfg.intervalMs} ms, cooldown scenario ${cfg.cooldownS} s, ${score.scripts.length} scenarios, ${r.stepsTotal} steps, ` +
      `${total.expected} notifications written down before the run, ${total.received} received; ` +
      `${r.kill ? `worker SIGKILLed between the phases (down ${r.kill.downMs} ms, ready again ${r.kill.readyAt ? `${((r.kill.readyAt - r.kill.killedAt) / 1000).toFixed(1)} s` : 'never'} and polling ${r.kill.firstPollAt ? `${((r.kill.firstPollAt - r.kill.killedAt) / 1000).toFixed(1)} s` : 'not seen'} after the kill)` : 'no worker SIGKILL'}; ` +
      `every item had its baseline ${r.baselineSeconds.toFixed(1)} s after its creation; run ${r.runtimeSeconds.toFixed(0)} s.`,
    '',
  );
  lines.push(
    `**${pass ? 'PASS' : 'FAIL'}**: target 0 false, 0 missed, 0 duplicated on every platform, with notifications expected and received on each` +
      (pass ? '.' : `: ${failing.length ? `failing on ${failing.join(', ')}` : ''}${score.strays ? `; ${score.strays} notifications of items the bench did not create` : ''}${r.crashes.length ? `; the worker exited by itself ${r.crashes.length} time(s)` : ''}${wallsOk ? '' : `; the bot walls refused ${r.walls!.refused} requests of ${r.walls!.refused + r.walls!.passed}`}.`),
    '',
  );
  lines.push(
    r.walls?.on
      ? `Bot walls (every platform's: TLS fingerprint, HTTP/2, headers, rotating cookie): ${r.walls.passed} requests let through, ${r.walls.refused} refused${r.walls.lastRefusal ? ` (last: ${r.walls.lastRefusal.reason}, ${r.walls.lastRefusal.detail})` : ''}.`
      : 'Bot walls: off (BENCH_WALLS=off).',
    '',
  );

  lines.push('## Per platform', '');
  lines.push('| platform | expected | received | false | missed | duplicated | delay p50 | p95 | max | across the kill | result |', '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|');
  for (const p of platforms) {
    const t = score.platforms.get(p)!;
    const ok = platformOk(t, scriptsOf(p));
    lines.push(`| ${p} | ${t.expected} | ${t.received} | ${t.false} | ${t.missed} | ${t.duplicated} | ${delays(t)} | ${ok ? 'PASS' : `FAIL (${why(t, scriptsOf(p))})`} |`);
  }
  lines.push(
    '',
    'Delay: from the simulator control call to the WebSocket client, for every expected notification received (those sent at a cooldown’s end are left out); ' +
      '"across the kill": those of changes made from two intervals before the worker’s SIGKILL until its successor’s first poll (count, max), apart from the others.',
    '',
  );

  lines.push('## Per scenario', '');
  lines.push('| platform | scenario | items | steps (expect nothing) | expected | received | false | missed | duplicated | result |', '|---|---|---:|---:|---:|---:|---:|---:|---:|---|');
  for (const s of score.scripts) {
    const sc = s.run.script;
    const quiet = s.run.steps.filter((st) => !s.run.expected.some((e) => e.step === st.index)).length;
    const t = s.tally;
    const result = scriptOk(s) ? 'ok' : sc.pending ? `FAIL, waits on: ${sc.pending}` : 'FAIL';
    lines.push(`| ${sc.platform.platform} | ${sc.title} | ${s.run.items.length} | ${s.run.steps.length} (${quiet}) | ${t.expected} | ${t.received} | ${t.false} | ${t.missed} | ${t.duplicated} | ${result} |`);
  }
  lines.push('');

  const troubled = score.scripts.filter((s) => !scriptOk(s) || s.refused.length);
  if (troubled.length) {
    lines.push('## What went wrong', '');
    for (const s of troubled) {
      const sc = s.run.script;
      lines.push(`### ${sc.platform.platform} · ${sc.title} (${sc.eventId}, region ${sc.region})${sc.pending ? ` · waits on: ${sc.pending}` : ''}`, '');
      for (const x of s.refused) lines.push(`- created without cooldown_seconds: ${x}`);
      for (const x of s.unseen) lines.push(`- not seen by any poll within ${cfg.stepTimeoutMs / 1000} s: ${x}`);
      for (const x of s.late) lines.push(`- timing: ${x} (the expected outcome assumes the schedule)`);
      const shown = s.problems.slice(0, 12);
      for (const p of shown) lines.push(`- ${p.kind}: ${p.text}`);
      if (s.problems.length > shown.length) lines.push(`- … and ${s.problems.length - shown.length} more`);
      lines.push('');
    }
  }

  lines.push('## The run', '');
  lines.push(`- Stream: ${r.stream.reconnects} reconnects${r.stream.closes.length ? ` (closes: ${[...new Set(r.stream.closes)].slice(0, 5).join('; ')})` : ''}; ${score.resentIds} arrivals repeated a log id already received.`);
  if (r.crashes.length) lines.push(`- The worker exited by itself: ${r.crashes.map((c) => c.split('\n')[0]).join('; ')}`);
  const logs = [...r.logCounts].sort((a, b) => b[1] - a[1]).slice(0, 8);
  if (logs.length) lines.push(`- Log lines (warnings and errors, counted): ${logs.map(([k, n]) => `${n} × ${k.replace(/\|/g, '/')}`).join('; ')}`);
  lines.push('');
  return lines.join('\n');
}
