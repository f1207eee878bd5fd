// The markdown report of bench:alerts: the verdict against the target (0 false, 0 missed, 0
// duplicated on every platform and every channel: the stream, the standard webhooks and
// Discord, with messages expected and received on each), a row per platform, a row per scenario
// with what it waits on, then every false, missed and duplicated message with its channel and
// step, scenarios whose schedule or observation the bench could not keep, and the worker's SIGKILL.
import type { PlatformKey } from '../../src/platform/registry.ts';
import { summarise } from '../support/percentiles.ts';
import type { WallsAll } from '../monitors/meter.ts';
import { fmtMs } from '../monitors/support.ts';
import { CHANNELS, CHANNEL_NAMES } from './channels.ts';
import type { AlertsConfig } from './config.ts';
import type { KillRecord } from './runner.ts';
import { allPass, emptyTally, type Score, type ScriptScore, type Tallies, type Tally } from './score.ts';

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
  /** The webhook endpoints: requests the reference verifier refused, bodies that could not be read, deliveries still pending at the end. */
  endpoints: { unverified: number; unreadable: number; pending: number };
  /** Every platform's bot wall over the run (issue 37; null: the simulator reports none). */
  walls: WallsAll | null;
}

function addCounts(into: Tally, t: Tally): void {
  into.expected += t.expected;
  into.false += t.false;
  into.missed += t.missed;
  into.duplicated += t.duplicated;
}

const clean = (t: Tally) => t.false === 0 && t.missed === 0 && t.duplicated === 0;

function scriptOk(s: ScriptScore): boolean {
  return CHANNELS.every((c) => clean(s.tallies[c])) && s.unseen.length === 0 && s.late.length === 0;
}

/** A platform passes the target on every channel, and the bench saw every step of it as scripted. */
function platformOk(t: Tallies, scripts: readonly ScriptScore[]): boolean {
  return allPass(t) && scripts.every((s) => s.unseen.length === 0 && s.late.length === 0);
}

function delays(t: Tally): string {
  const s = summarise(t.delays);
  const k = summarise(t.killDelays);
  return `${fmtMs(s.p50)} | ${fmtMs(s.p95)} | ${fmtMs(s.max)} | ${k.n ? `${k.n}, max ${fmtMs(k.max)}` : 'none'}`;
}

/** "received · false/missed/duplicated" of one channel. */
function cell(t: Tally): string {
  return `${t.received} · ${t.false}/${t.missed}/${t.duplicated}`;
}

function why(tallies: Tallies, scripts: readonly ScriptScore[]): string {
  const out: string[] = [];
  for (const c of CHANNELS) {
    const t = tallies[c];
    const bad: string[] = [];
    if (t.expected === 0) bad.push('nothing expected');
    if (t.received === 0) bad.push('nothing received');
    if (t.false) bad.push(`${t.false} false`);
    if (t.missed) bad.push(`${t.missed} missed`);
    if (t.duplicated) bad.push(`${t.duplicated} duplicated`);
    if (bad.length) out.push(`${CHANNEL_NAMES[c]}: ${bad.join(', ')}`);
  }
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
  const total = [...score.platforms.values()].reduce((a, t) => ({ expected: a.expected + t.stream.expected, received: a.received + t.stream.received }), { expected: 0, received: 0 });
  const hooks = [...score.platforms.values()].reduce(
    (a, t) => ({ expected: a.expected + t.webhook.expected + t.discord.expected, received: a.received + t.webhook.received + t.discord.received }),
    { expected: 0, received: 0 },
  );
  const strays = CHANNELS.reduce((n, c) => n + score.strays[c], 0);
  const endpointsOk = r.endpoints.unverified === 0 && r.endpoints.unreadable === 0;
  // With walls on, not one request refused by a wall, out of some it judged (issue 37).
  const wallsOk = !r.walls?.on || (r.walls.refused === 0 && r.walls.passed > 0);
  const pass = failing.length === 0 && strays === 0 && endpointsOk && r.crashes.length === 0 && wallsOk;
  // A failed verdict exits non-zero once the report is out (Lifecycle.finish).
  if (!pass) process.exitCode = 1;
  const lines: string[] = [];
  lines.push(`# bench:alerts: alert quality on ${platforms.length} platform${platforms.length === 1 ? '' : 's'}`, '');
  lines.push(`${r.date.toISOString()} · \`${r.command}\` · ${r.machine}`, '');
  lines.push(
    `Poll interval ${cfg.intervalMs} ms, cooldown scenario ${cfg.cooldownS} s, ${score.scripts.length} scenarios, ${r.stepsTotal} steps, ` +
      `${total.expected} messages written down before the run for the stream (${hooks.expected} more for the webhooks and Discord, each item's twin naming one of them), ` +
      `${total.received} received on the stream and ${hooks.received} by the webhook endpoints; ` +
      `${r.kill ? `worker SIGKILLed between the phases (down ${r.kill.downMs} ms, ready again ${r.kill.readyAt ? `${((r.kill.readyAt - r.kill.killedAt) / 1000).toFixed(1)} s` : 'never'} and polling ${r.kill.firstPollAt ? `${((r.kill.firstPollAt - r.kill.killedAt) / 1000).toFixed(1)} s` : 'not seen'} after the kill)` : 'no worker SIGKILL'}; ` +
      `every item had its baseline ${r.baselineSeconds.toFixed(1)} s after its creation; run ${r.runtimeSeconds.toFixed(0)} s.`,
    '',
  );
  lines.push(
    `**${pass ? 'PASS' : 'FAIL'}**: target 0 false, 0 missed, 0 duplicated on every platform and every channel (stream, webhooks, Discord), with messages expected and received on each` +
      (pass
        ? '.'
        : `: ${failing.length ? `failing on ${failing.join(', ')}` : ''}${strays ? `; ${strays} messages about items the bench did not create (or to a channel they do not name)` : ''}` +
          `${r.endpoints.unverified ? `; ${r.endpoints.unverified} webhook requests whose signature did not verify` : ''}${r.endpoints.unreadable ? `; ${r.endpoints.unreadable} webhook or Discord bodies that could not be read` : ''}` +
          `${r.crashes.length ? `; the worker exited by itself ${r.crashes.length} time(s)` : ''}${wallsOk ? '' : `; the bot walls refused ${r.walls!.refused} requests of ${r.walls!.refused + r.walls!.passed}`}.`),
    '',
  );
  lines.push(
    r.walls?.on
      ? `Bot walls (every platform's: TLS fingerprint, HTTP/2, headers, rotating cookie): ${r.walls.passed} requests let through, ${r.walls.refused} refused${r.walls.lastRefusal ? ` (last: ${r.walls.lastRefusal.reason}, ${r.walls.lastRefusal.detail})` : ''}.`
      : 'Bot walls: off (BENCH_WALLS=off).',
    '',
  );
  for (const site of r.walls?.refusingSites ?? []) {
    // When each came, against the kill: refusals at a restart's first polls are not those of a steady worker.
    const when = (at: string) => (r.kill ? `${((Date.parse(at) - r.kill.killedAt) / 1000).toFixed(1)} s after the kill` : at);
    lines.push(
      `- ${site.site}: refused ${Object.entries(site.refused).map(([reason, n]) => `${n} ${reason}`).join(', ')}; ${site.cookiesIssued} bot cookies given in all; ` +
        `the last ${site.recent.length}: ${site.recent.map((x) => `${when(x.at)} (${x.reason})`).join(', ')}.`,
    );
  }
  if (r.walls?.refusingSites.length) lines.push('');

  lines.push('## Per platform', '');
  lines.push(
    '| platform | expected: stream / webhooks / Discord | stream: received · false/missed/dup | webhooks | Discord | stream delay p50 | p95 | max | across the kill | webhooks p95 | Discord p95 | result |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
  );
  for (const p of platforms) {
    const t = score.platforms.get(p)!;
    const ok = platformOk(t, scriptsOf(p));
    lines.push(
      `| ${p} | ${t.stream.expected} / ${t.webhook.expected} / ${t.discord.expected} | ${cell(t.stream)} | ${cell(t.webhook)} | ${cell(t.discord)} | ${delays(t.stream)} | ` +
        `${fmtMs(summarise(t.webhook.delays).p95)} | ${fmtMs(summarise(t.discord.delays).p95)} | ${ok ? 'PASS' : `FAIL (${why(t, scriptsOf(p))})`} |`,
    );
  }
  lines.push(
    '',
    'Each item is created twice, one twin naming the account’s standard webhook and the other its Discord webhook: the stream hears both, each webhook its twins. ' +
      'Delay: from the simulator control call to the WebSocket client (or the webhook endpoint), for every expected change received (those sent at a cooldown’s end are left out); ' +
      '"across the kill": those of changes made from two intervals before the worker’s SIGKILL until its successor’s first poll (count, max), apart from the others.',
    '',
  );

  lines.push('## Per scenario', '');
  lines.push('| platform | scenario | targets | items | steps (expect nothing) | expected (stream) | stream f/m/d | webhooks f/m/d | Discord f/m/d | result |', '|---|---|---:|---:|---:|---:|---:|---:|---:|---|');
  // Scripts of one scenario on one platform (the incident's targets) are one row.
  const rows = new Map<string, ScriptScore[]>();
  for (const s of score.scripts) {
    const k = `${s.run.script.platform.platform} ${s.run.script.title}`;
    rows.set(k, [...(rows.get(k) ?? []), s]);
  }
  const fmd = (t: Tally) => `${t.false}/${t.missed}/${t.duplicated}`;
  for (const group of rows.values()) {
    const sc = group[0]!.run.script;
    const quiet = group.reduce((n, s) => n + s.run.steps.filter((st) => !s.run.expected.some((e) => e.step === st.index)).length, 0);
    const t: Tallies = { stream: emptyTally(), webhook: emptyTally(), discord: emptyTally() };
    for (const x of group) for (const c of CHANNELS) addCounts(t[c], x.tallies[c]);
    const ok = group.every(scriptOk);
    const result = ok ? 'ok' : sc.pending ? `FAIL, waits on: ${sc.pending}` : 'FAIL';
    const items = group.reduce((n, s) => n + s.run.items.length, 0);
    const steps = group.reduce((n, s) => n + s.run.steps.length, 0);
    lines.push(`| ${sc.platform.platform} | ${sc.title} | ${group.length} | ${items} | ${steps} (${quiet}) | ${t.stream.expected} | ${fmd(t.stream)} | ${fmd(t.webhook)} | ${fmd(t.discord)} | ${result} |`);
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
      for (const p of shown) lines.push(`- ${CHANNEL_NAMES[p.channel]}, ${p.kind}: ${p.text}`);
      if (s.problems.length > shown.length) lines.push(`- … and ${s.problems.length - shown.length} more`);
      lines.push('');
    }
  }

  lines.push('## The run', '');
  lines.push(`- Stream: ${r.stream.reconnects} reconnects${r.stream.closes.length ? ` (closes: ${[...new Set(r.stream.closes)].slice(0, 5).join('; ')})` : ''}; ${score.resent.stream} arrivals repeated a log id already received.`);
  lines.push(
    `- Webhooks: ${score.resent.webhook} standard requests repeated a \`webhook-id\` already received and ${score.resent.discord} Discord messages a notification id (at-least-once resends, one message each); ` +
      `${r.endpoints.unverified} standard requests failed the reference verifier; ${r.endpoints.unreadable} bodies could not be read; ${r.endpoints.pending} deliveries still pending at the end.`,
  );
  if (r.crashes.length) lines.push(`- The worker exited by itself: ${r.crashes.map((c) => c.split('\n')[0]).join('; ')}`);
  const logs = [...r.logCounts].sort((a, b) => b[1] - a[1]).slice(0, 8);
  if (logs.length) lines.push(`- Log lines (warnings and errors, counted): ${logs.map(([k, n]) => `${n} × ${k.replace(/\|/g, '/')}`).join('; ')}`);
  lines.push('');
  return lines.join('\n');
}
