// The rehearsal's verdict (rehearsal/verdict.ts, issue 39) on synthetic figures: a clean run
// passes every check, and each way a run can go wrong (written here from the list, one
// change to the clean figures at a time) fails exactly the check that judges it, so no rule can
// pass by counting nothing.
import { describe, expect, it } from 'vitest';
import type { Window } from '../../rehearsal/faults.ts';
import { emptyCredits, emptyNotifications, emptyWindowFigures, type CreditFigures, type NotificationFigures, type RouteFigures, type Totals, type WindowFigures } from '../../rehearsal/truth.ts';
import { verdict } from '../../rehearsal/verdict.ts';

const T0 = 1_800_000_000_000;

/** A window's figures where the load did its work: something expected, nothing wrong. */
function notifications(over: Partial<NotificationFigures> = {}): NotificationFigures {
  return { ...emptyNotifications(), changes: 40, expected: 120, uncertain: 3, superseded: 1, webhookExpected: 30, ...over };
}

function credits(over: Partial<CreditFigures> = {}): CreditFigures {
  return { ...emptyCredits(), paidRequests: 200, billable: 190, expectedCredits: 500, chargedCredits: 500, ...over };
}

function route(over: Partial<RouteFigures> = {}): RouteFigures {
  return { requests: 50, fivexx: 0, fivexxSeconds: 0, noAnswer: 0, failures: new Map(), slowestMs: 120, lastFailureAfterBackS: null, needsPart: false, killedInFlight: 0, ...over };
}

function window(name: string, at: number, over: Partial<Window> = {}): Window {
  const fault = name !== 'warm-up' && name !== 'after';
  return {
    name,
    title: name,
    part: fault ? 'postgres' : 'none',
    start: at,
    end: at + 60_000,
    downAt: fault ? at + 1_000 : null,
    backAt: fault ? at + 11_000 : null,
    apiBackAt: fault ? at + 12_000 : null,
    pollsBackAt: fault ? at + 16_000 : null,
    notes: [],
    skipped: null,
    faultError: null,
    ...over,
  };
}

function figures(w: Window, over: Partial<WindowFigures> = {}): WindowFigures {
  const fault = w.backAt !== null;
  return {
    ...emptyWindowFigures(w),
    notifications: notifications(),
    credits: credits(),
    routes: new Map([
      ['GET /usage', route()],
      ['GET /events/ping', route({ needsPart: true })],
    ]),
    flowFirstS: fault ? 2.5 : null,
    caughtUpS: fault ? 6 : null,
    ...over,
  };
}

/** A clean run: the warm-up, two faults, the window after. */
function cleanRun(): WindowFigures[] {
  return [
    figures(window('warm-up', T0)),
    figures(window('pg-restart', T0 + 60_000)),
    // Another scrape worker polled every target 22 s after the kill.
    figures(window('scrape-worker-kill', T0 + 120_000, { takeoverAt: T0 + 120_000 + 1_000 + 22_000 })),
    figures(window('after', T0 + 180_000), { notifications: notifications({ expected: 0, webhookExpected: 0, changes: 0 }), credits: credits({ paidRequests: 0 }) }),
  ];
}

function totalsOf(perWindow: WindowFigures[], over: Partial<Totals> = {}): Totals {
  const sum = <T extends object>(parts: T[]): T => {
    const out = { ...parts[0]! } as Record<string, unknown>;
    for (const p of parts.slice(1)) for (const [k, v] of Object.entries(p)) if (typeof v === 'number') out[k] = (out[k] as number) + v;
    return out as T;
  };
  return {
    notifications: sum(perWindow.map((p) => p.notifications)),
    credits: sum(perWindow.map((p) => p.credits)),
    unmatched: 2,
    unmatchedUnknownItems: 2,
    lostCreates: 1,
    unverifiedWebhooks: 0,
    webhookIdDuplicates: 0,
    streamGaps: 0,
    streamFatal: [],
    unexpectedExits: [],
    doublePolls: perWindow.reduce((a, p) => a + p.doublePolls, 0),
    ...over,
  };
}

const BUDGET = { withinBudget: true, budgetMs: 20 * 60_000 };

/** The names of the checks that fail. */
function failing(perWindow: WindowFigures[], totals = totalsOf(perWindow), opts = BUDGET): string[] {
  return verdict(perWindow, totals, opts)
    .filter((c) => !c.ok)
    .map((c) => c.name);
}

/** The clean run with window `i` changed. */
function withWindow(i: number, change: (p: WindowFigures) => WindowFigures): WindowFigures[] {
  return cleanRun().map((p, k) => (k === i ? change(p) : p));
}

describe('the rehearsal verdict', () => {
  it('passes a clean run on every check', () => {
    const checks = verdict(cleanRun(), totalsOf(cleanRun()), BUDGET);
    expect(checks.length).toBeGreaterThanOrEqual(14);
    expect(checks.filter((c) => !c.ok)).toEqual([]);
  });

  // Each case: a name, the run's figures with one thing wrong, and the check that must fail.
  const cases: [string, () => string[], string][] = [
    ['a notification missed in the log', () => failing(withWindow(1, (p) => ({ ...p, notifications: notifications({ logMissed: 1 }) }))), '0 notifications missed or duplicated'],
    ['a notification duplicated at a stream client', () => failing(withWindow(2, (p) => ({ ...p, notifications: notifications({ streamDuplicated: 1 }) }))), '0 notifications missed or duplicated'],
    ['a webhook delivery missed', () => failing(withWindow(1, (p) => ({ ...p, notifications: notifications({ webhookMissed: 1 }) }))), '0 webhook deliveries missed or duplicated'],
    ['a charge for a 5xx', () => failing(withWindow(1, (p) => ({ ...p, credits: credits({ chargedFor5xx: 5 }) }))), 'Credits exact'],
    ['a charge for a 429', () => failing(withWindow(1, (p) => ({ ...p, credits: credits({ chargedForRefusal: 1 }) }))), 'Credits exact'],
    ['a request charged another amount', () => failing(withWindow(0, (p) => ({ ...p, credits: credits({ wrongAmountRequests: 1 }) }))), 'Credits exact'],
    ['a billable answer not charged', () => failing(withWindow(2, (p) => ({ ...p, credits: credits({ billableNotCharged: 5, billableNotChargedRequests: 1 }) }))), 'Credits exact'],
    ['a reservation left open', () => failing(withWindow(2, (p) => ({ ...p, credits: credits({ stillReserved: 1 }) }))), 'Credits exact'],
    [
      'a 5xx from a route that does not need the part',
      () => failing(withWindow(1, (p) => ({ ...p, routes: new Map([['GET /usage', route({ fivexx: 13, fivexxSeconds: 4 })]]) }))),
      'No 5xx from a route that does not need the failed part',
    ],
    [
      "a 5xx beside the requests the killed replica had",
      () => failing(withWindow(1, (p) => ({ ...p, routes: new Map([['POST /events/scrape', route({ fivexx: 2, killedInFlight: 1 })]]) }))),
      'No 5xx from a route that does not need the failed part',
    ],
    [
      'a route that needs the part failing 20 s after its return',
      () => failing(withWindow(1, (p) => ({ ...p, routes: new Map([['GET /events/ping', route({ needsPart: true, fivexx: 3, lastFailureAfterBackS: 20 })]]) }))),
      'Routes that need the part back within 15 s of it',
    ],
    ['no first notification after a fault', () => failing(withWindow(1, (p) => ({ ...p, flowFirstS: null }))), 'Notifications flow again'],
    ['the first notification 16 s after a PostgreSQL restart', () => failing(withWindow(1, (p) => ({ ...p, flowFirstS: 16 }))), 'Notifications flow again'],
    ['polls not back after a fault', () => failing(withWindow(1, (p) => ({ ...p, window: { ...p.window, pollsBackAt: null } }))), 'Notifications flow again'],
    ['a part that never came back', () => failing(withWindow(1, (p) => ({ ...p, window: { ...p.window, backAt: null } }))), 'Notifications flow again'],
    ['changes late after the return', () => failing(withWindow(2, (p) => ({ ...p, lateAfterBack: 2 }))), 'Notifications flow again'],
    ['a double poll', () => failing(withWindow(2, (p) => ({ ...p, doublePolls: 1 }))), 'No target polled twice in one interval'],
    ["a scrape worker's targets never taken over", () => failing(withWindow(2, (p) => ({ ...p, window: { ...p.window, takeoverAt: null } }))), "A lost scrape worker's targets polled by the others"],
    ["a takeover 31 s after the worker's death", () => failing(withWindow(2, (p) => ({ ...p, window: { ...p.window, takeoverAt: p.window.downAt! + 31_000 } }))), "A lost scrape worker's targets polled by the others"],
    ['a fault that threw', () => failing(withWindow(1, (p) => ({ ...p, window: { ...p.window, faultError: 'toxic refused' } }))), 'Every fault ran'],
    ['a fault that was skipped', () => failing(withWindow(2, (p) => ({ ...p, window: { ...p.window, skipped: 'no split workers' } }))), 'Every fault ran'],
    ['a fault window with nothing expected', () => failing(withWindow(1, (p) => ({ ...p, notifications: notifications({ expected: 0 }) }))), 'Every window expected'],
    ['a fault window with no webhook delivery expected', () => failing(withWindow(2, (p) => ({ ...p, notifications: notifications({ webhookExpected: 0 }) }))), 'Every window expected'],
    ['a warm-up with no paid request', () => failing(withWindow(0, (p) => ({ ...p, credits: credits({ paidRequests: 0 }) }))), 'Every window expected'],
    ['a notification after its delete', () => failing(withWindow(2, (p) => ({ ...p, notifications: notifications({ afterDelete: 1 }) }))), 'No notification after its item was deleted'],
    ['a log row matching no change', () => failing(cleanRun(), totalsOf(cleanRun(), { unmatched: 3 })), 'Every notification in the log matches a change'],
    ['a webhook failing its signature', () => failing(cleanRun(), totalsOf(cleanRun(), { unverifiedWebhooks: 1 })), 'Every webhook request verifies'],
    ['a repeated webhook-id', () => failing(cleanRun(), totalsOf(cleanRun(), { webhookIdDuplicates: 1 })), 'Every webhook request verifies'],
    ['a stream resume gap', () => failing(cleanRun(), totalsOf(cleanRun(), { streamGaps: 1 })), 'Every stream client resumed'],
    ['a stream given up', () => failing(cleanRun(), totalsOf(cleanRun(), { streamFatal: ['acct 3: 4408'] })), 'Every stream client resumed'],
    ['a process that died unplanned', () => failing(cleanRun(), totalsOf(cleanRun(), { unexpectedExits: ['gateway-1 at 10:00:00 (exit 1)'] })), 'No process exited without being asked'],
    ['a run over its budget', () => failing(cleanRun(), totalsOf(cleanRun()), { ...BUDGET, withinBudget: false }), 'The whole rehearsal under 20 minutes'],
    ['no fault at all', () => failing([cleanRun()[0]!, cleanRun()[3]!]), 'Every fault ran'],
  ];

  it.each(cases)('fails on %s, on that check alone', (_name, run, check) => {
    const failed = run();
    expect(failed).toHaveLength(1);
    expect(failed[0]).toContain(check);
  });

  it("excuses a request the killed replica had when it died, and only that one", () => {
    const run = withWindow(1, (p) => ({ ...p, routes: new Map([['POST /events/scrape', route({ fivexx: 1, killedInFlight: 1 })]]) }));
    expect(failing(run)).toEqual([]);
  });

  it('a run that counted nothing fails, though nothing was missed', () => {
    const empty = cleanRun().map((p) => ({ ...p, notifications: notifications({ expected: 0, webhookExpected: 0, changes: 0 }), credits: credits({ paidRequests: 0, billable: 0, expectedCredits: 0, chargedCredits: 0 }) }));
    const failed = failing(empty);
    expect(failed).toEqual(expect.arrayContaining([expect.stringContaining('Every window expected'), expect.stringContaining('0 notifications'), expect.stringContaining('0 webhook'), expect.stringContaining('Credits exact')]));
  });
});
