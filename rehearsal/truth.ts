// The ground truth against what happened, per window (warm-up, each fault, after the last one):
// - notifications: each inventory change the load made × each item that should see it, exactly
//   once in the notifications log, once at the account's stream client, once at its webhook
//   receiver (when the item names one). Which (change, item) pairs are certain is decided from
//   the load's own record (rules below); the others are counted as uncertain, never as missed;
// - credits: every paid answer the clients saw against the credit ledger, request by request;
// - per route, the seconds it answered 5xx, the requests that got no answer at all;
// - how long after a part was back every stream client had a notification again;
// - polls of one target closer together than a poll interval allows (the simulator's own log).
// A (change, item) pair is certain when the item had its baseline well before the change (its
// create answered READY_MS before, or RECOVERY_MS after a fault active meanwhile came back) and
// was not deleted until well after (DELETE_MARGIN_MS, and no fault active in between). A change
// whose same section changed again before the target served any request was never seen by any
// poll ("superseded", as bench/monitors/integrity.ts counts it).
import fs from 'node:fs';
import path from 'node:path';
import { changeKey } from '../bench/monitors/stream-clients.ts';
import type { RehearsalConfig } from './config.ts';
import type { Part, Window } from './faults.ts';
import { PAID_ROUTES, SCRAPE_ROUTE, type Change, type Item, type Load } from './load.ts';
import type { Topology } from './topology.ts';

const RECOVERY_MS = 15_000;
const DELETE_MARGIN_MS = 20_000;
/** The issue's target: notifications flow again within 15 s of a part's return. */
const LATE_MS = 15_000;
const EXAMPLES = 4;

/** What each route needs to answer: any other part's failure must cost it nothing. */
export function routeNeeds(route: string, workers: RehearsalConfig['workers']): Part[] {
  const base: Part[] = ['nginx', 'postgres'];
  // A scrape reads the platform (pf_03, the faulted one), ping only asks for a worker.
  if (route.startsWith(SCRAPE_ROUTE)) return [...base, 'temporal', 'platform', ...(workers === 'split' ? (['scrape-worker'] as Part[]) : [])];
  if (route.startsWith('GET /events/ping')) return [...base, 'temporal', ...(workers === 'split' ? (['scrape-worker'] as Part[]) : [])];
  return base;
}

export interface RouteFigures {
  requests: number;
  fivexx: number;
  /** Distinct wall-clock seconds with at least one 5xx. */
  fivexxSeconds: number;
  noAnswer: number;
  /** 5xx and no-answer together, by status ('0' for none), for the details. */
  failures: Map<string, number>;
  slowestMs: number;
  /** Seconds from the part's return to the last failure in the window (negative: all before it). */
  lastFailureAfterBackS: number | null;
  needsPart: boolean;
  /**
   * Of the failures, requests that were in flight when a replica (a gateway, a stream node) was
   * killed, and failed within KILLED_IN_FLIGHT_MS of it: the killed process had them, and nginx
   * retries no request that may have been half done (a POST) elsewhere. They needed that replica.
   */
  killedInFlight: number;
}

/** A failure this soon after a replica's kill, of a request sent before it, was the killed replica's. */
const KILLED_IN_FLIGHT_MS = 5_000;
const REPLICA_PARTS: readonly Part[] = ['gateway-replica', 'stream-replica'];

export interface NotificationFigures {
  changes: number;
  /** Certain (change, item) pairs. */
  expected: number;
  logMissed: number;
  /** Of the log's misses, those a notification spanning more than one step covers (seen by a poll, not recorded, merged into the next). */
  logMissedMerged: number;
  logDuplicated: number;
  streamMissed: number;
  /** Of the stream's misses, those the log has (a delivery loss, not a detection loss). */
  streamMissedButLogged: number;
  streamDuplicated: number;
  uncertain: number;
  superseded: number;
  /** Notifications of a change made after the item's delete answered (past a grace). */
  afterDelete: number;
  webhookExpected: number;
  webhookMissed: number;
  webhookMissedButLogged: number;
  webhookDuplicated: number;
  examples: string[];
}

export interface CreditFigures {
  /** Paid requests sent, and those whose answer was billable (2xx, or the API's own 4xx). */
  paidRequests: number;
  billable: number;
  expectedCredits: number;
  chargedCredits: number;
  /** Billable answers seen but not charged (under-billing), in credits and requests. */
  billableNotCharged: number;
  billableNotChargedRequests: number;
  /** The first few of those, and of any other credit mismatch: route, status, request id, ledger state. */
  mismatchExamples?: string[];
  /** Charged for an answer the client saw as 5xx. */
  chargedFor5xx: number;
  /** Charged for a request whose answer never reached the client. */
  chargedNoAnswer: number;
  chargedNoAnswerRequests: number;
  /** Credits charged for an answer that refused the request (401, 402, 403, 429). */
  chargedForRefusal: number;
  /** Billable answers charged another amount than the route's price, in requests. */
  wrongAmountRequests: number;
  stillReserved: number;
}

export interface WindowFigures {
  window: Window;
  notifications: NotificationFigures;
  credits: CreditFigures;
  routes: Map<string, RouteFigures>;
  /** Seconds from backAt to the first notification at a stream client of a change made after it. */
  flowFirstS: number | null;
  /** Seconds from backAt to the last first-arrival of a change made before it (the backlog delivered). */
  caughtUpS: number | null;
  /** Certain pairs of changes made after backAt (deadline inside the window) that reached their client more than LATE_MS after the change, or never. */
  lateAfterBack: number;
  doublePolls: number;
  doublePollExamples: string[];
  streamDisconnects: number;
  streamRefusals: Map<string, number>;
  warnings: { total: number; top: [string, number][] };
}

export interface Totals {
  notifications: NotificationFigures;
  credits: CreditFigures;
  unmatched: number;
  unmatchedUnknownItems: number;
  lostCreates: number;
  unverifiedWebhooks: number;
  webhookIdDuplicates: number;
  streamGaps: number;
  streamFatal: string[];
  unexpectedExits: string[];
  doublePolls: number;
}

export function emptyNotifications(): NotificationFigures {
  return {
    changes: 0,
    expected: 0,
    logMissed: 0,
    logMissedMerged: 0,
    logDuplicated: 0,
    streamMissed: 0,
    streamMissedButLogged: 0,
    streamDuplicated: 0,
    uncertain: 0,
    superseded: 0,
    afterDelete: 0,
    webhookExpected: 0,
    webhookMissed: 0,
    webhookMissedButLogged: 0,
    webhookDuplicated: 0,
    examples: [],
  };
}

export function emptyCredits(): CreditFigures {
  return { paidRequests: 0, billable: 0, expectedCredits: 0, chargedCredits: 0, billableNotCharged: 0, billableNotChargedRequests: 0, chargedFor5xx: 0, chargedNoAnswer: 0, chargedNoAnswerRequests: 0, chargedForRefusal: 0, wrongAmountRequests: 0, stillReserved: 0 };
}

/** A window's figures before anything is counted in them. */
export function emptyWindowFigures(window: Window): WindowFigures {
  return {
    window,
    notifications: emptyNotifications(),
    credits: emptyCredits(),
    routes: new Map(),
    flowFirstS: null,
    caughtUpS: null,
    lateAfterBack: 0,
    doublePolls: 0,
    doublePollExamples: [],
    streamDisconnects: 0,
    streamRefusals: new Map(),
    warnings: { total: 0, top: [] },
  };
}

function add<T extends object>(into: T, from: T): void {
  for (const [k, v] of Object.entries(from)) if (typeof v === 'number') (into as Record<string, number>)[k]! += v;
}

/** The names of the two windows that are not a fault's: before the first fault, and after the last one. */
export const WARM_UP = 'warm-up';
export const AFTER = 'after';

/** The warm-up window, every fault's, and the one after the last fault: contiguous, covering the load. */
export function timeline(load: Load, faults: Window[]): Window[] {
  const first = faults[0]?.start ?? load.stoppedAt;
  const last = faults.at(-1)?.end ?? first;
  const bare = (name: string, title: string, start: number, end: number): Window => ({ name, title, part: 'none', start, end, downAt: null, backAt: null, apiBackAt: null, pollsBackAt: null, notes: [], skipped: null, faultError: null });
  return [bare(WARM_UP, 'no fault: the load alone', 0, first), ...faults, bare(AFTER, 'after the last fault, until the load stopped and the final wait ended', last, Infinity)];
}

export async function checkTruth(topo: Topology, cfg: RehearsalConfig, load: Load, windows: Window[]): Promise<{ perWindow: WindowFigures[]; totals: Totals }> {
  const at = (t: number) => {
    const i = windows.findIndex((w) => t >= w.start && t < w.end);
    return i < 0 ? windows.length - 1 : i;
  };
  const perWindow: WindowFigures[] = windows.map(emptyWindowFigures);
  const active = windows.filter((w) => w.downAt !== null && w.backAt !== null).map((w) => ({ down: w.downAt!, back: w.backAt! }));
  const activeWithin = (from: number, to: number) => active.some((p) => p.down <= to && p.back >= from);
  const readyMs = Math.max(20_000, 5 * cfg.intervalMs);
  const afterDeleteGraceMs = 2 * cfg.intervalMs + 5_000;

  const readyAt = (item: Item): number => {
    if (item.standing) return item.createdAt;
    let r = item.createdAt + readyMs;
    for (const p of active) if (p.down <= r && p.back >= item.createdAt) r = Math.max(r, p.back + RECOVERY_MS);
    return r;
  };

  // --- what the service wrote and delivered
  const logRows = (await topo.db.raw(
    `SELECT item_id, payload->>'section' AS section, payload->'after'->>'stock' AS stock, payload->'before'->>'stock' AS before_stock, payload->>'change_type' AS change_type
       FROM notifications WHERE kind = 'notification'`,
  )) as { rows: { item_id: string; section: string | null; stock: string | null; before_stock: string | null; change_type: string }[] };
  const logCounts = new Map<string, number>();
  const logItems = new Map<string, number>();
  /** item|section → the (before, after) stock spans notified: a span over more than one step merged changes. */
  const spans = new Map<string, [number, number][]>();
  let otherKinds = 0;
  for (const r of logRows.rows) {
    if (r.change_type !== 'stock_increase') {
      otherKinds++;
      continue;
    }
    const key = changeKey(Number(r.item_id), r.section ?? '', Number(r.stock));
    logCounts.set(key, (logCounts.get(key) ?? 0) + 1);
    logItems.set(key, Number(r.item_id));
    const sectionKey = `${r.item_id}|${r.section ?? ''}`;
    spans.set(sectionKey, [...(spans.get(sectionKey) ?? []), [Number(r.before_stock), Number(r.stock)]]);
  }
  const accountOf = new Map(load.accounts.map((a) => [a.id, a]));
  const hookCounts = new Map<string, number>();
  let unverifiedWebhooks = 0;
  let webhookIdDuplicates = 0;
  for (const a of load.accounts) {
    const ids = new Map<string, number>();
    for (const r of a.webhook?.receiver.received ?? []) {
      if (!r.verified[0]) unverifiedWebhooks++;
      // Only what the receiver took counts as arrived: a request it answered 500 (the
      // webhook-receiver-500 fault) is retried, with the same webhook-id, as it must be.
      if (typeof r.answered !== 'number' || r.answered < 200 || r.answered > 299) continue;
      const id = String(r.headers['webhook-id'] ?? '');
      ids.set(id, (ids.get(id) ?? 0) + 1);
      const body = JSON.parse(r.body) as { type: string; data: { item_id: number; section?: string | null; after?: { stock?: number } } };
      if (body.type !== 'notification') continue;
      const key = changeKey(Number(body.data.item_id), body.data.section ?? '', Number(body.data.after?.stock));
      hookCounts.set(key, (hookCounts.get(key) ?? 0) + 1);
    }
    for (const n of ids.values()) webhookIdDuplicates += n - 1;
  }

  // --- notifications, change by change
  const itemsByTarget = new Map<number, Item[]>();
  for (const item of load.items.values()) {
    const list = itemsByTarget.get(item.target);
    if (list) list.push(item);
    else itemsByTarget.set(item.target, [item]);
  }
  const nextSameSection = new Map<Change, Change>();
  const lastOf = new Map<string, Change>();
  for (const c of load.changes) {
    const k = `${c.target}|${c.section}`;
    const prev = lastOf.get(k);
    if (prev) nextSameSection.set(prev, c);
    lastOf.set(k, c);
  }
  // Whole pages served: a refused, failed or malformed page saw nothing (the platform faults).
  const readsNow = new Map<string, number>();
  for (const t of load.targets) readsNow.set(String(t.index), topo.sim.store.get('pf_03', t.key)?.reads ?? 0);
  const knownKeys = new Set<string>();

  for (const c of load.changes) {
    const wi = at(c.putAt);
    const f = perWindow[wi]!.notifications;
    const w = windows[wi]!;
    f.changes++;
    const next = nextSameSection.get(c);
    const readsAfter = next ? next.readsBefore : (readsNow.get(String(c.target)) ?? 0);
    const seen = readsAfter > c.readsBefore;
    for (const item of itemsByTarget.get(c.target) ?? []) {
      const key = changeKey(item.id, c.section, c.stock);
      knownKeys.add(key);
      const n = logCounts.get(key) ?? 0;
      const account = accountOf.get(item.account)!;
      const arrivals = account.stream.arrivals.get(key) ?? [];
      const hooks = hookCounts.get(key) ?? 0;
      // Copies beyond the first are duplicates whatever else is uncertain about the pair.
      f.logDuplicated += Math.max(0, n - 1);
      f.streamDuplicated += Math.max(0, arrivals.length - 1);
      if (item.webhook) f.webhookDuplicated += Math.max(0, hooks - 1);

      const deleted = item.deleteSentAt !== null;
      if (deleted && c.putAt >= (item.deletedAt ?? item.deleteSentAt!) + afterDeleteGraceMs) {
        f.afterDelete += n;
        continue;
      }
      const certain =
        c.putAt >= readyAt(item) &&
        (!deleted || (item.deleteSentAt! - c.putAt >= DELETE_MARGIN_MS && !activeWithin(c.putAt, item.deletedAt ?? item.deleteSentAt!)));
      if (!certain) {
        f.uncertain++;
        continue;
      }
      if (!seen) {
        f.superseded++;
        continue;
      }
      f.expected++;
      const example = `item ${item.id} (account ${item.account}) on target ${c.target}: ${c.section} → ${c.stock} at ${new Date(c.putAt).toISOString().slice(11, 23)}`;
      if (n === 0) {
        f.logMissed++;
        const merged = (spans.get(`${item.id}|${c.section}`) ?? []).some(([before, after]) => before < c.stock && c.stock < after);
        if (merged) f.logMissedMerged++;
        if (f.examples.length < EXAMPLES) f.examples.push(`not in the log${merged ? ' (merged into a later notification spanning it)' : ''}: ${example}`);
      }
      if (arrivals.length === 0) {
        f.streamMissed++;
        if (n > 0) f.streamMissedButLogged++;
        if (n > 0 && f.examples.length < EXAMPLES) f.examples.push(`logged, never at the stream client: ${example}`);
      }
      if (item.webhook) {
        f.webhookExpected++;
        if (hooks === 0) {
          f.webhookMissed++;
          if (n > 0) f.webhookMissedButLogged++;
          if (n > 0 && f.examples.length < EXAMPLES) f.examples.push(`logged, never at the webhook: ${example}`);
        }
      }
      if (w.backAt !== null) {
        const pw = perWindow[wi]!;
        const first = arrivals[0];
        if (c.putAt >= w.backAt) {
          if (first !== undefined) pw.flowFirstS = Math.min(pw.flowFirstS ?? Infinity, (first - w.backAt) / 1000);
          // Judged here only when its deadline falls in this window: past it, the next fault may be why.
          if (c.putAt + LATE_MS < w.end && (first === undefined || first - c.putAt > LATE_MS)) pw.lateAfterBack++;
        } else if (first !== undefined) {
          pw.caughtUpS = Math.max(pw.caughtUpS ?? 0, (first - w.backAt) / 1000);
        }
      }
    }
  }
  let unmatched = otherKinds;
  let unmatchedUnknownItems = 0;
  for (const [key, n] of logCounts) {
    if (knownKeys.has(key)) continue;
    unmatched += n;
    if (!load.items.has(logItems.get(key)!)) unmatchedUnknownItems += n;
  }

  // --- credits, request by request
  const ledger = (await topo.db.raw(
    `SELECT request_id, account_id, credits, state, status_code, (extract(epoch FROM created_at) * 1000)::float8 AS created FROM credit_ledger`,
  )) as { rows: { request_id: string; account_id: number; credits: number; state: string; status_code: number | null; created: number }[] };
  const byRequest = new Map(ledger.rows.map((r) => [r.request_id, r]));
  const seenIds = new Set<string>();
  for (const rec of load.requests) {
    if (rec.requestId) seenIds.add(rec.requestId);
    if (rec.credits === 0) continue;
    const cf = perWindow[at(rec.sentAt)]!.credits;
    cf.paidRequests++;
    const row = rec.requestId ? byRequest.get(rec.requestId) : undefined;
    const billable = rec.status >= 200 && rec.status < 500 && ![401, 402, 403, 429].includes(rec.status);
    if (billable) {
      cf.billable++;
      cf.expectedCredits += rec.credits;
      if (row?.state !== 'charged') {
        cf.billableNotCharged += rec.credits;
        cf.billableNotChargedRequests++;
        note(cf, `not charged: ${rec.route} answered ${rec.status}, request ${rec.requestId ?? '(no id)'}, ledger ${row ? `${row.state} ${row.credits}` : 'no row'}`);
      } else if (Number(row.credits) !== rec.credits) {
        cf.wrongAmountRequests++;
        note(cf, `charged ${row.credits} for ${rec.credits}: ${rec.route} answered ${rec.status}, request ${rec.requestId}`);
      }
    } else if (rec.status >= 500 && row?.state === 'charged') {
      cf.chargedFor5xx += row.credits;
      note(cf, `charged for ${rec.status}: ${rec.route}, request ${rec.requestId}`);
    } else if (row?.state === 'charged') {
      cf.chargedForRefusal += row.credits;
      note(cf, `charged for a refusal ${rec.status}: ${rec.route}, request ${rec.requestId}`);
    }
  }
  // A row counts in its request's window (when the client saw an answer), else in its own.
  const sentAt = new Map(load.requests.filter((x) => x.requestId).map((x) => [x.requestId!, x.sentAt]));
  for (const r of ledger.rows) {
    const cf = perWindow[at(sentAt.get(r.request_id) ?? r.created)]!.credits;
    if (r.state === 'reserved') cf.stillReserved += r.credits;
    if (r.state !== 'charged') continue;
    cf.chargedCredits += r.credits;
    if (!seenIds.has(r.request_id)) {
      cf.chargedNoAnswer += r.credits;
      cf.chargedNoAnswerRequests++;
    }
  }

  // --- routes, by when the answer came (a request in flight when a fault starts is the fault's)
  for (const rec of load.requests) {
    const wi = at(rec.doneAt);
    const w = windows[wi]!;
    const routes = perWindow[wi]!.routes;
    let r = routes.get(rec.route);
    if (!r) {
      r = { requests: 0, fivexx: 0, fivexxSeconds: 0, noAnswer: 0, failures: new Map(), slowestMs: 0, lastFailureAfterBackS: null, needsPart: routeNeeds(rec.route, cfg.workers).includes(w.part), killedInFlight: 0 };
      routes.set(rec.route, r);
    }
    r.requests++;
    r.slowestMs = Math.max(r.slowestMs, rec.doneAt - rec.sentAt);
    const failed = rec.status === 0 || rec.status >= 500;
    if (!failed) continue;
    if (rec.status === 0) r.noAnswer++;
    else r.fivexx++;
    const label = rec.status === 0 ? `no answer (${rec.error ?? '?'})` : String(rec.status);
    r.failures.set(label, (r.failures.get(label) ?? 0) + 1);
    if (REPLICA_PARTS.includes(w.part) && w.downAt !== null && rec.sentAt < w.downAt && rec.doneAt >= w.downAt && rec.doneAt - w.downAt <= KILLED_IN_FLIGHT_MS) r.killedInFlight++;
    if (w.backAt !== null) {
      const after = (rec.doneAt - w.backAt) / 1000;
      r.lastFailureAfterBackS = r.lastFailureAfterBackS === null ? after : Math.max(r.lastFailureAfterBackS, after);
    }
  }
  for (const [wi, pw] of perWindow.entries()) {
    for (const [route, r] of pw.routes) {
      const seconds = new Set(load.requests.filter((x) => x.route === route && at(x.doneAt) === wi && x.status >= 500).map((x) => Math.floor(x.doneAt / 1000)));
      r.fivexxSeconds = seconds.size;
    }
  }

  // --- polls twice in one interval, from the simulator's own request log
  const watched = new Set(load.targets.map((t) => t.key));
  const byKey = new Map<string, number[]>();
  for (const r of topo.sim.requests.since(load.startedAt, 'pf_03')) {
    if (!watched.has(r.key)) continue;
    const list = byKey.get(r.key);
    if (list) list.push(r.at);
    else byKey.set(r.key, [r.at]);
  }
  const tooClose = 0.4 * cfg.intervalMs;
  let doublePolls = 0;
  for (const [key, times] of byKey) {
    times.sort((a, b) => a - b);
    for (let i = 1; i < times.length; i++) {
      if (times[i]! - times[i - 1]! >= tooClose) continue;
      const pw = perWindow[at(times[i]!)]!;
      pw.doublePolls++;
      doublePolls++;
      if (pw.doublePollExamples.length < 3) pw.doublePollExamples.push(`${key}: ${times[i]! - times[i - 1]!} ms apart at ${new Date(times[i]!).toISOString().slice(11, 23)}`);
    }
  }

  // --- stream connections
  const streamFatal: string[] = [];
  let streamGaps = 0;
  for (const a of load.accounts) {
    streamGaps += a.stream.gaps;
    for (const d of a.stream.disconnects) {
      const pw = perWindow[at(d.at)]!;
      pw.streamDisconnects++;
      if (d.status !== undefined) pw.streamRefusals.set(String(d.status), (pw.streamRefusals.get(String(d.status)) ?? 0) + 1);
    }
    for (const e of a.stream.fatal) streamFatal.push(`account ${a.id} at ${new Date(e.at).toISOString().slice(11, 19)}: ${e.message}`);
  }

  // --- what the processes logged at warn and above, per window
  const warnings = perWindow.map(() => new Map<string, number>());
  for (const file of fs.readdirSync(topo.logDir)) {
    const proc = file.replace(/\.log$/, '');
    for (const line of fs.readFileSync(path.join(topo.logDir, file), 'utf8').split('\n')) {
      if (!line.startsWith('{')) continue;
      let j: { level?: number; time?: string; msg?: string; err?: { message?: string } };
      try {
        j = JSON.parse(line);
      } catch {
        continue;
      }
      if ((j.level ?? 0) < 40 || !j.time) continue;
      const key = `${proc}: ${(j.msg ?? '').slice(0, 90)}${j.err?.message ? ` (${j.err.message.replace(/\s+/g, ' ').slice(0, 90)})` : ''}`;
      const m = warnings[at(Date.parse(j.time))]!;
      m.set(key, (m.get(key) ?? 0) + 1);
    }
  }
  for (const [i, m] of warnings.entries()) {
    perWindow[i]!.warnings = { total: [...m.values()].reduce((a, b) => a + b, 0), top: [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, 4) };
  }

  const totals: Totals = {
    notifications: emptyNotifications(),
    credits: emptyCredits(),
    unmatched,
    unmatchedUnknownItems,
    lostCreates: load.lostCreates,
    unverifiedWebhooks,
    webhookIdDuplicates,
    streamGaps,
    streamFatal,
    unexpectedExits: topo.nodes.flatMap((n) => n.unexpectedExits.map((e) => `${n.name} at ${new Date(e.at).toISOString().slice(11, 19)} (${e.how})`)),
    doublePolls,
  };
  for (const pw of perWindow) {
    add(totals.notifications, pw.notifications);
    add(totals.credits, pw.credits);
  }
  return { perWindow, totals };
}

/** The paid routes' names, for the report's legend. */
export const PAID_ROUTE_NAMES = [...PAID_ROUTES.map((r) => r.route), SCRAPE_ROUTE];

function note(cf: CreditFigures, example: string): void {
  cf.mismatchExamples ??= [];
  if (cf.mismatchExamples.length < EXAMPLES) cf.mismatchExamples.push(example);
}
