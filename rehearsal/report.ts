// The report, markdown on stdout: one line per fault (and for the warm-up and the tail), the
// totals, then each fault's details (its notes, its routes' failures, what the processes logged),
// so a figure can be traced to the window, the route and the process it came from.
import type { RehearsalConfig } from './config.ts';
import { fmtElapsed } from './faults.ts';
import type { RouteFigures, Totals, WindowFigures } from './truth.ts';
import type { Check } from './verdict.ts';

export interface ReportContext {
  cfg: RehearsalConfig;
  command: string;
  machine: string;
  topology: string[];
  startedAt: number;
  setupMs: number;
  totalMs: number;
  load: { requests: number; changes: number; items: number; churned: number };
}

const s1 = (v: number | null) => (v === null ? '–' : v.toFixed(1));
const pair = (a: number, b: number) => `${a} / ${b}`;

function failingRoutes(routes: Map<string, RouteFigures>): string {
  const bad = [...routes.entries()].filter(([, r]) => r.fivexx > 0 || r.noAnswer > 0);
  if (bad.length === 0) return 'none';
  return bad
    .map(([route, r]) => `${route}: ${r.fivexxSeconds} s${r.noAnswer ? ` +${r.noAnswer} unanswered` : ''} (${r.needsPart ? 'needs it' : '**does not need it**'})`)
    .join('; ');
}

function credits(c: WindowFigures['credits']): string {
  const off = [
    c.billableNotCharged ? `${c.billableNotCharged} not charged` : '',
    c.chargedFor5xx ? `**${c.chargedFor5xx} charged for 5xx**` : '',
    c.chargedForRefusal ? `**${c.chargedForRefusal} charged for a refusal**` : '',
    c.wrongAmountRequests ? `**${c.wrongAmountRequests} charged another amount**` : '',
    c.chargedNoAnswer ? `${c.chargedNoAnswer} charged, no answer` : '',
    c.stillReserved ? `${c.stillReserved} still reserved` : '',
  ].filter(Boolean);
  return off.length ? off.join(', ') : 'exact';
}

/** The verdict's checks (verdict.ts), each met or not, with the figures and windows behind it. */
function againstTargets(checks: Check[]): string[] {
  const failed = checks.filter((c) => !c.ok).length;
  return [
    '## Against the issue\'s targets',
    '',
    `**Verdict: ${failed === 0 ? 'PASS' : `FAIL, ${failed} of ${checks.length} checks not met`}** (the process exits ${failed === 0 ? 0 : 1})`,
    '',
    ...checks.map((c) => `- ${c.name}: ${c.ok ? 'met' : '**not met**'} (${c.detail})`),
  ];
}

export function renderReport(ctx: ReportContext, perWindow: WindowFigures[], totals: Totals, checks: Check[]): string {
  const out: string[] = [];
  const { cfg } = ctx;
  const within = ctx.totalMs <= cfg.budgetMs;
  out.push(`# Production rehearsal, ${new Date(ctx.startedAt).toISOString().slice(0, 16).replace('T', ' ')} UTC`, '');
  out.push(`\`${ctx.command}\``, '');
  out.push(`- Machine: ${ctx.machine}`);
  out.push(
    `- Duration: **${fmtElapsed(ctx.totalMs)}** in all (set-up ${fmtElapsed(ctx.setupMs)}): ${within ? 'within' : '**over**'} the ${cfg.budgetMs / 60_000}-minute budget`,
  );
  out.push(
    `- Load: ${ctx.load.requests} requests through nginx, ${ctx.load.changes} inventory changes, ${ctx.load.items} items (${ctx.load.churned} created and deleted during the run), ` +
      `${cfg.accounts} accounts with a stream client each, ${cfg.webhookAccounts} webhook endpoints, MONITOR_INTERVAL_MS=${cfg.intervalMs}`,
  );
  for (const t of ctx.topology) out.push(`- ${t}`);
  out.push('');

  out.push('## Per fault', '');
  out.push(
    'Notifications: certain (change, item) pairs missed and duplicated, in the notifications log / at the stream clients; webhooks: missed / duplicated at the receivers. ' +
      'API back / polls back: seconds from the part\'s return until GET /usage answered through nginx / until every watched target had been polled again (the simulator\'s log). ' +
      'Credits: billable answers the clients saw against the credit ledger after the sweeper. 5xx: seconds a route answered 5xx (and requests never answered), and whether the route needs the failed part. ' +
      'Flow: seconds from the part\'s return to the first notification at a client of a change made after it / to the last notification of a change made before it (the backlog delivered); ' +
      'late: changes made after the return that reached their client more than 15 s after the change, or never. Double polls: one target polled twice within 40% of an interval.',
    '',
  );
  out.push('| # | fault | down s | API back s | polls back s | missed log / stream | dup log / stream | webhooks missed / dup | credits | 5xx by route | flow s: first / caught up | double polls |');
  out.push('|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const [i, pw] of perWindow.entries()) {
    const w = pw.window;
    const n = pw.notifications;
    if (w.skipped) {
      out.push(`| ${i} | ${w.name} | skipped: ${w.skipped} | | | | | | | | | |`);
      continue;
    }
    const down = w.downAt !== null && w.backAt !== null ? s1((w.backAt - w.downAt) / 1000) : '–';
    const apiBack = w.apiBackAt !== null && w.backAt !== null ? s1((w.apiBackAt - w.backAt) / 1000) : w.backAt !== null ? '**not back**' : '–';
    const flow = w.backAt === null ? '–' : `${s1(pw.flowFirstS)} / ${s1(pw.caughtUpS)}${pw.lateAfterBack ? ` (**${pw.lateAfterBack} late**)` : ''}`;
    const polls = w.backAt === null ? '–' : w.pollsBackAt === null ? '**not within 120**' : s1((w.pollsBackAt - w.backAt) / 1000);
    out.push(
      `| ${i} | ${w.name} | ${down} | ${apiBack} | ${polls} | ${pair(n.logMissed, n.streamMissed)} | ${pair(n.logDuplicated, n.streamDuplicated)} | ${pair(n.webhookMissed, n.webhookDuplicated)} | ${credits(pw.credits)} | ${failingRoutes(pw.routes)} | ${flow} | ${pw.doublePolls} |`,
    );
  }
  const tn = totals.notifications;
  out.push(
    `| | **total** | | | | **${pair(tn.logMissed, tn.streamMissed)}** | **${pair(tn.logDuplicated, tn.streamDuplicated)}** | **${pair(tn.webhookMissed, tn.webhookDuplicated)}** | **${credits(totals.credits)}** | | | **${totals.doublePolls}** |`,
  );
  out.push('');

  out.push(...againstTargets(checks), '');
  out.push('## Totals', '');
  out.push(
    `- Notifications: ${tn.changes} changes; ${tn.expected} certain (change, item) pairs, ${tn.logMissed} missed in the log (${tn.logMissedMerged} of them merged into a later notification whose before/after spans them), ${tn.streamMissed} at the stream clients ` +
      `(${tn.streamMissedButLogged} of them in the log), ${tn.logDuplicated} duplicated in the log, ${tn.streamDuplicated} at the clients; ` +
      `${tn.uncertain} pairs uncertain (an item created or deleted near the change or a fault), ${tn.superseded} superseded (no poll between two changes of a section), ` +
      `${tn.afterDelete} notified after their item's delete, ${totals.unmatched} log rows matching no change (${totals.unmatchedUnknownItems} of items whose create got no answer; ${totals.lostCreates} such creates).`,
  );
  out.push(
    `- Webhooks: ${tn.webhookExpected} expected deliveries, ${tn.webhookMissed} missed (${tn.webhookMissedButLogged} of them in the log), ${tn.webhookDuplicated} duplicated ` +
      `(${totals.webhookIdDuplicates} requests repeating a webhook-id), ${totals.unverifiedWebhooks} failing signature verification.`,
  );
  const c = totals.credits;
  out.push(
    `- Credits: ${c.paidRequests} paid requests, ${c.billable} billable answers seen worth ${c.expectedCredits} credits; the ledger charged ${c.chargedCredits}. ` +
      `Billable but not charged: ${c.billableNotCharged} credits (${c.billableNotChargedRequests} requests); charged for a 5xx: ${c.chargedFor5xx}; ` +
      `charged for a request whose answer never arrived: ${c.chargedNoAnswer} (${c.chargedNoAnswerRequests} requests); still reserved: ${c.stillReserved}.`,
  );
  out.push(
    `- Stream clients: ${perWindow.reduce((a, p) => a + p.streamDisconnects, 0)} disconnects (resumed), ${totals.streamGaps} resume gaps, ${totals.streamFatal.length} streams the client gave up on` +
      `${totals.streamFatal.length ? `: ${totals.streamFatal.slice(0, 3).join('; ')}` : ''}.`,
  );
  out.push(`- Processes that exited without being asked: ${totals.unexpectedExits.length ? totals.unexpectedExits.join(', ') : 'none'}.`);
  out.push('');

  out.push('## Details', '');
  for (const [i, pw] of perWindow.entries()) {
    const w = pw.window;
    out.push(`### ${i}. ${w.name}: ${w.title}`, '');
    if (w.skipped) {
      out.push(`Skipped: ${w.skipped}`, '');
      continue;
    }
    for (const note of w.notes) out.push(`- ${note}`);
    const n = pw.notifications;
    out.push(
      `- ${n.changes} changes, ${n.expected} certain pairs (${n.uncertain} uncertain, ${n.superseded} superseded); webhooks expected ${n.webhookExpected}` +
        `${n.afterDelete ? `; **${n.afterDelete} notified after their item's delete**` : ''}`,
    );
    for (const e of n.examples) out.push(`  - ${e}`);
    const cr = pw.credits;
    out.push(`- Credits: ${cr.paidRequests} paid requests, ${cr.expectedCredits} billable credits seen, ${cr.chargedCredits} charged: ${credits(cr)}`);
    for (const e of cr.mismatchExamples ?? []) out.push(`  - ${e}`);
    if (pw.streamDisconnects) out.push(`- Stream: ${pw.streamDisconnects} disconnects${pw.streamRefusals.size ? `, upgrades refused: ${[...pw.streamRefusals].map(([st, k]) => `${k}× ${st}`).join(', ')}` : ''}`);
    if (pw.doublePollExamples.length) out.push(`- Double polls: ${pw.doublePolls}, e.g. ${pw.doublePollExamples.join('; ')}`);
    const routes = [...pw.routes.entries()].sort(([a], [b]) => a.localeCompare(b));
    if (routes.some(([, r]) => r.fivexx || r.noAnswer)) {
      out.push('', '| route | requests | 5xx | 5xx s | no answer | slowest s | last failure after back s | needs the part | failures |', '|---|---|---|---|---|---|---|---|---|');
      for (const [route, r] of routes) {
        if (!r.fivexx && !r.noAnswer) continue;
        out.push(
          `| ${route} | ${r.requests} | ${r.fivexx} | ${r.fivexxSeconds} | ${r.noAnswer} | ${(r.slowestMs / 1000).toFixed(1)} | ${s1(r.lastFailureAfterBackS)} | ${r.needsPart ? 'yes' : 'no'} | ${[...r.failures].map(([k, v]) => `${v}× ${k}`).join(', ')} |`,
        );
      }
      out.push('');
    } else {
      const [slowRoute, slow] = routes.reduce<[string, number]>((m, [route, r]) => (r.slowestMs > m[1] ? [route, r.slowestMs] : m), ['', 0]);
      out.push(`- Every route answered below 500 (slowest: ${slowRoute || 'none'}, ${(slow / 1000).toFixed(1)} s)`);
    }
    if (pw.warnings.total) {
      out.push(`- ${pw.warnings.total} warn/error log lines; most frequent:`);
      for (const [k, v] of pw.warnings.top) out.push(`  - ${v}× ${k}`);
    }
    out.push('');
  }
  return out.join('\n');
}
