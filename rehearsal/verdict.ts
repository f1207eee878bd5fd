// The rehearsal's verdict (issue 39): every target of the issue and every figure the report
// prints, judged as a check that passes or fails. `npm run rehearsal` exits non-zero unless all
// pass, so a run that missed a target can no longer end green with "not met" in its report.
// Pure: it reads only the figures truth.ts computed from the run's own ground truth, so
// test/rehearsal/verdict.test.ts feeds it synthetic figures and shows each check failing.
//
// What a check needs beyond its figure being zero:
// - a fault that threw, or was skipped, fails (a fault left out of REHEARSAL_FAULTS is not run,
//   and is not a window at all);
// - the warm-up and every fault window must have expected something: certain (change, item)
//   pairs, webhook deliveries and paid requests. A window where the load did nothing would
//   otherwise pass every "0 missed" by counting nothing;
// - after a fault whose part came back, a first notification must arrive: none is a failure,
//   not a 0 s wait.
import type { RehearsalConfig } from './config.ts';
import { AFTER, WARM_UP, type Totals, type WindowFigures } from './truth.ts';

export interface Check {
  /** The target, as the report's "Against the issue's targets" lists it. */
  name: string;
  ok: boolean;
  /** The figures behind it, and the windows that missed it. */
  detail: string;
}

/** A part is allowed this long to be back (a worker's death: its pollers' heartbeat timeout, then a takeover). */
export function recoveryLimitS(window: WindowFigures['window']): number {
  return window.name.endsWith('worker-kill') ? 30 : 15;
}

/** The issue's target for a scrape worker's takeover by another. */
const TAKEOVER_LIMIT_S = 30;

const s1 = (v: number | null) => (v === null ? '–' : v.toFixed(1));
const list = (items: string[]) => (items.length ? `: ${items.join('; ')}` : '');

/** Every check of the run. `withinBudget`: the whole run took no longer than its budget. */
export function verdict(perWindow: WindowFigures[], totals: Totals, opts: { withinBudget: boolean; budgetMs: RehearsalConfig['budgetMs'] }): Check[] {
  const faults = perWindow.filter((p) => p.window.name !== WARM_UP && p.window.name !== AFTER);
  const ran = faults.filter((p) => p.window.backAt !== null && !p.window.skipped && !p.window.faultError);
  const tn = totals.notifications;
  const c = totals.credits;
  const checks: Check[] = [];
  const check = (name: string, ok: boolean, detail: string) => checks.push({ name, ok, detail });

  check(
    'Every fault ran: none threw, none was skipped',
    faults.every((p) => !p.window.skipped && !p.window.faultError) && faults.length > 0,
    faults.length === 0
      ? 'no fault ran'
      : `${faults.length} faults` +
          list(faults.filter((p) => p.window.skipped || p.window.faultError).map((p) => `${p.window.name} ${p.window.skipped ? `skipped (${p.window.skipped})` : `threw (${p.window.faultError})`}`)),
  );
  // The warm-up and each fault: the windows the load runs through.
  const loaded = perWindow.filter((p) => p.window.name !== AFTER);
  const idle = loaded.filter((p) => p.notifications.expected === 0 || p.notifications.webhookExpected === 0 || p.credits.paidRequests === 0);
  check(
    'Every window expected notifications, webhook deliveries and charges',
    idle.length === 0,
    `${loaded.length} windows` +
      list(idle.map((p) => `${p.window.name}: ${p.notifications.expected} pairs, ${p.notifications.webhookExpected} deliveries, ${p.credits.paidRequests} paid requests`)),
  );
  check(
    '0 notifications missed or duplicated',
    tn.expected > 0 && tn.logMissed + tn.streamMissed + tn.logDuplicated + tn.streamDuplicated === 0,
    `${tn.expected} certain pairs; ${tn.logMissed} / ${tn.streamMissed} missed, ${tn.logDuplicated} / ${tn.streamDuplicated} duplicated, log / stream`,
  );
  check(
    '0 webhook deliveries missed or duplicated',
    tn.webhookExpected > 0 && tn.webhookMissed + tn.webhookDuplicated === 0,
    `${tn.webhookExpected} expected; ${tn.webhookMissed} missed, ${tn.webhookDuplicated} duplicated`,
  );
  check(
    'Credits exact, amount by amount; nothing charged for a 401, 402, 403, 429, a 5xx or an answer that never arrived',
    c.paidRequests > 0 &&
      c.billableNotCharged + c.chargedFor5xx + c.chargedForRefusal + c.chargedNoAnswer + c.stillReserved + c.wrongAmountRequests === 0,
    `${c.paidRequests} paid requests, ${c.expectedCredits} credits billable, ${c.chargedCredits} charged; not charged ${c.billableNotCharged}, ` +
      `charged for a 5xx ${c.chargedFor5xx}, for a refusal ${c.chargedForRefusal}, with no answer ${c.chargedNoAnswer}, still reserved ${c.stillReserved}, ` +
      `${c.wrongAmountRequests} requests charged another amount`,
  );
  // A request the killed replica had when it died needed that replica (truth.ts killedInFlight).
  const wrongRoutes = perWindow.flatMap((p) =>
    [...p.routes].filter(([, r]) => !r.needsPart && r.fivexx + r.noAnswer > r.killedInFlight).map(([route, r]) => `${p.window.name} ${route} ${r.fivexx + r.noAnswer - r.killedInFlight}×`),
  );
  check('No 5xx from a route that does not need the failed part', wrongRoutes.length === 0, `${wrongRoutes.length} window-routes${list(wrongRoutes)}`);
  const slowBack = ran.flatMap((p) =>
    [...p.routes].filter(([, r]) => (r.lastFailureAfterBackS ?? 0) > 15).map(([route, r]) => `${p.window.name} ${route} +${r.lastFailureAfterBackS!.toFixed(1)} s`),
  );
  check('Routes that need the part back within 15 s of it', slowBack.length === 0, `${slowBack.length}${list(slowBack)}`);
  const notBack = faults.filter((p) => !p.window.skipped && !p.window.faultError && p.window.backAt === null);
  const slowFlow = ran.filter((p) => {
    const limit = recoveryLimitS(p.window);
    return p.flowFirstS === null || p.flowFirstS > limit || p.lateAfterBack > 0 || p.window.pollsBackAt === null || (p.window.pollsBackAt - p.window.backAt!) / 1000 > limit;
  });
  check(
    "Notifications flow again within 15 s of the part's return (30 s of a worker's death)",
    slowFlow.length === 0 && notBack.length === 0,
    `${ran.length} faults` +
      list([
        ...notBack.map((p) => `${p.window.name}: the part never came back`),
        ...slowFlow.map(
          (p) =>
            `${p.window.name} first ${p.flowFirstS === null ? 'none' : `${s1(p.flowFirstS)} s`}, polls back ${p.window.pollsBackAt === null ? 'never' : `${s1((p.window.pollsBackAt - p.window.backAt!) / 1000)} s`}, ${p.lateAfterBack} late`,
        ),
      ]),
  );
  // A scrape worker killed or stopped while another runs: its shards must move, not wait for it.
  const takeovers = ran.filter((p) => p.window.takeoverAt !== undefined);
  const slowTakeover = takeovers.filter((p) => p.window.takeoverAt === null || (p.window.takeoverAt! - p.window.downAt!) / 1000 > TAKEOVER_LIMIT_S);
  check(
    `A lost scrape worker's targets polled by the others within ${TAKEOVER_LIMIT_S} s, with it still down`,
    slowTakeover.length === 0,
    `${takeovers.length} faults` +
      list(takeovers.map((p) => `${p.window.name} ${p.window.takeoverAt ? `${s1((p.window.takeoverAt - p.window.downAt!) / 1000)} s` : 'never'}`)),
  );
  check(
    'No target polled twice in one interval',
    totals.doublePolls === 0,
    `${totals.doublePolls}${list(perWindow.filter((p) => p.doublePolls).map((p) => `${p.window.name} ${p.doublePolls}`))}`,
  );
  check(
    'No notification after its item was deleted',
    tn.afterDelete === 0,
    `${tn.afterDelete}${list(perWindow.filter((p) => p.notifications.afterDelete).map((p) => `${p.window.name} ${p.notifications.afterDelete}`))}`,
  );
  // Rows of items whose create got no answer are the one kind the load cannot know of.
  const unexplained = totals.unmatched - totals.unmatchedUnknownItems;
  check('Every notification in the log matches a change the load made', unexplained === 0, `${unexplained} rows match none (${totals.unmatchedUnknownItems} more of items whose create got no answer)`);
  check(
    'Every webhook request verifies, and none repeats a webhook-id',
    totals.unverifiedWebhooks === 0 && totals.webhookIdDuplicates === 0,
    `${totals.unverifiedWebhooks} failing signature verification, ${totals.webhookIdDuplicates} repeating a webhook-id`,
  );
  check(
    'Every stream client resumed without a gap, and none gave up',
    totals.streamGaps === 0 && totals.streamFatal.length === 0,
    `${totals.streamGaps} resume gaps, ${totals.streamFatal.length} streams given up${list(totals.streamFatal.slice(0, 3))}`,
  );
  check('No process exited without being asked', totals.unexpectedExits.length === 0, `${totals.unexpectedExits.length}${list(totals.unexpectedExits)}`);
  check(`The whole rehearsal under ${opts.budgetMs / 60_000} minutes`, opts.withinBudget, opts.withinBudget ? 'within' : 'over');
  return checks;
}
