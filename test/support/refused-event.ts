// Issue 36's scenario, run by test/monitors/refused-event*.test.ts with proxies and without: twenty
// pf_06 targets are watched at a 1 s interval; then one more pf_06 event that the platform answers
// 403 to every request (the simulator's `blocked` behaviour) is watched too, and scraped on demand
// 60 times, three at a time, through a real gateway. Across the next window the other targets
// must keep at least 95% of their polls, every exit must keep carrying traffic, the refused event
// must be asked once per back-off step, and the other targets' changes (written down by the
// test before it makes them) must each be notified exactly once. Every figure is read at the
// simulator's request log, the ground truth of what the platform received.
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { TemporalScrapeRunner } from '../../src/apis/live-availability/scrape-runs.ts';
import { call, newAccount, startTestGateway } from './harness.ts';
import { GATEWAY_ENV } from './gateway-helpers.ts';
import { baselined, eventually, notificationsOf, type MonitorStack } from './monitor-stack.ts';
import { putEvent, section } from './scrape-stack.ts';

export const SCENARIO_INTERVAL_MS = 1_000;
/** SCRAPE_TARGET_BACKOFF_MS of the scenario's worker: short, so several back-off steps fit the window. */
export const SCENARIO_BACKOFF_MS = 1_000;
const TARGETS = 20;
const WINDOW_MS = 20_000;
const ON_DEMAND = 60;
const ON_DEMAND_AT_ONCE = 3;
/** Polls the other targets keep during the window against before, all together. */
const KEPT_TOGETHER = 0.8;
/** The longest any other target goes without a poll in the window: four intervals. */
const LONGEST_GAP_MS = 4 * SCENARIO_INTERVAL_MS;

interface SimRequest {
  at: number;
  key: string;
  address: string;
  refused?: boolean;
}

async function simRequests(stack: MonitorStack, since: number): Promise<SimRequest[]> {
  const res = await fetch(`${stack.sim.url}/_sim/requests?since=${since}&platform=pf_06`);
  return ((await res.json()) as { requests: SimRequest[] }).requests;
}

/** A pf_06 event id: eight letters or digits. */
const eventKey = () => randomUUID().replace(/-/g, '').slice(0, 8);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const listing = (stock: number) => ({ region: 'fr', sections: [section('Stalls', 80, stock)] });

export interface ScenarioResult {
  /** Polls per second of the other targets, all together, before and during. */
  before: number;
  during: number;
  /** Each other target's polls during against before (1: kept them all). */
  perTarget: number[];
  /** The longest any other target went without a poll in the window (ms; its start and end count). */
  longestGap: number;
  /** Requests per proxy address during the window (or the one address without proxies). */
  perAddress: Record<string, number>;
  /** When the refused event was asked during the window (ms from its first request). */
  refusedAsked: number[];
  onDemandStatuses: Record<number, number>;
}

/**
 * Runs the scenario; `addresses` are the addresses the platform should see requests from (the
 * proxies', or 127.0.0.1 without). Asserts the issue's targets and returns the figures.
 */
export async function refusedEventScenario(stack: MonitorStack, addresses: readonly string[]): Promise<ScenarioResult> {
  const acct = await stack.account();
  const items: { id: number; key: string }[] = [];
  for (let i = 0; i < TARGETS; i++) {
    const key = eventKey();
    await putEvent(stack.sim, 'pf_06', key, listing(1));
    const res = await call(stack.gateway.url, 'POST', '/watchlist', { key: acct.key, body: { website: 'pf_06', event: key, region: 'fr' } });
    expect(res.status).toBe(201);
    items.push({ id: res.body.id as number, key });
  }
  for (const item of items) await baselined(stack, item.id);
  const keys = new Set(items.map((i) => i.key));

  // Before: a quiet window of the twenty alone.
  const beforeFrom = Date.now();
  await sleep(WINDOW_MS / 2);
  const beforeTo = Date.now();
  const beforeReqs = (await simRequests(stack, beforeFrom)).filter((r) => r.at < beforeTo && keys.has(r.key));

  // The refused event: watched by another account, and scraped on demand by a third.
  const refusedKey = eventKey();
  await putEvent(stack.sim, 'pf_06', refusedKey, { ...listing(1), behaviour: 'blocked', blocked_status: 403, retry_after_s: null });
  const watcher = await stack.account();
  const from = Date.now();
  const refusedItem = await call(stack.gateway.url, 'POST', '/watchlist', { key: watcher.key, body: { website: 'pf_06', event: refusedKey, region: 'fr' } });
  expect(refusedItem.status).toBe(201);
  const gw = await startTestGateway({
    env: { ...GATEWAY_ENV, SCRAPE_REQUESTS_PER_PLATFORM_PER_MINUTE: '1000' },
    services: { scrapes: new TemporalScrapeRunner(stack.client, { taskQueue: stack.config.SCRAPE_TASK_QUEUE, timeoutMs: 10_000 }) },
  });
  const onDemandStatuses: Record<number, number> = {};
  try {
    const scraper = await newAccount(gw.db, { plan: 'enterprise', rateLimit: 10_000 });
    const scrapes = (async () => {
      for (let sent = 0; sent < ON_DEMAND; sent += ON_DEMAND_AT_ONCE) {
        const answers = await Promise.all(
          Array.from({ length: ON_DEMAND_AT_ONCE }, () => call(gw.url, 'POST', '/events/scrape', { key: scraper.key, body: { platform: 'pf_06', event_id: refusedKey, region: 'fr' } })),
        );
        for (const a of answers) onDemandStatuses[a.status] = (onDemandStatuses[a.status] ?? 0) + 1;
      }
    })();
    // The ground truth of the changes, written down before they are made: every passing target
    // goes from 1 ticket to 3, a third of the way into the window.
    await sleep(WINDOW_MS / 3);
    const changed = new Map(items.map((i) => [i.id, 3]));
    for (const item of items) await putEvent(stack.sim, 'pf_06', item.key, listing(changed.get(item.id)!));
    await scrapes;
    await sleep(Math.max(0, from + WINDOW_MS - Date.now()));
    const to = Date.now();
    const during = (await simRequests(stack, from)).filter((r) => r.at < to);

    const count = (reqs: SimRequest[], key: string) => reqs.filter((r) => r.key === key).length;
    const duringOthers = during.filter((r) => keys.has(r.key));
    const result: ScenarioResult = {
      before: beforeReqs.length / ((beforeTo - beforeFrom) / 1000),
      during: duringOthers.length / ((to - from) / 1000),
      perTarget: items.map((i) => count(duringOthers, i.key) / ((to - from) / 1000) / Math.max(1e-9, count(beforeReqs, i.key) / ((beforeTo - beforeFrom) / 1000))),
      perAddress: Object.fromEntries(addresses.map((a) => [a, during.filter((r) => r.address === a && keys.has(r.key)).length])),
      refusedAsked: [],
      onDemandStatuses,
      longestGap: Math.max(
        ...items.map((i) => {
          const times = [from + SCENARIO_INTERVAL_MS, ...duringOthers.filter((r) => r.key === i.key).map((r) => r.at), to];
          return Math.max(...times.slice(1).map((t, k) => t - times[k]!));
        }),
      ),
    };
    const refusedTimes = during.filter((r) => r.key === refusedKey).map((r) => r.at);
    result.refusedAsked = refusedTimes.map((t) => t - refusedTimes[0]!);
    const trace = JSON.stringify({ ...result, perTarget: result.perTarget.map((x) => x.toFixed(2)) });

    // Nothing is counted from nothing: the twenty were polled before, and the refused event asked.
    expect(beforeReqs.length, trace).toBeGreaterThan(TARGETS * 5);
    expect(refusedTimes.length, trace).toBeGreaterThan(0);
    // The other targets keep their polls, together, and none stalls. The 95% target is
    // bench:proxies' verdict on a quiet machine; here, beside the rest of the suite on two cores,
    // the two windows see different loads, so the bound is looser, yet far above what the fault
    // left (before issue 36: 0% with proxies; without, six targets at 10%, polled 10 s apart).
    expect(result.during / result.before, trace).toBeGreaterThanOrEqual(KEPT_TOGETHER);
    expect(result.longestGap, trace).toBeLessThanOrEqual(LONGEST_GAP_MS);
    // Every exit keeps carrying traffic: at least half of its even share.
    for (const a of addresses) expect(result.perAddress[a], trace).toBeGreaterThanOrEqual((0.5 * duringOthers.length) / addresses.length);
    // The refused event is asked once per back-off step: after the first ask (the watcher's
    // first poll, and an on-demand scrape that tries one more exit, at most three requests within
    // a second), each wait is at least the step before it doubled, less the jitter.
    // Step k (k = 1, 2, ...) is at least SCENARIO_BACKOFF_MS × 2^(k-1) long, less the schedule's
    // 10% jitter, whoever (a poll, an on-demand scrape) takes its one ask.
    const steps = result.refusedAsked.filter((t, i) => i === 0 || t - result.refusedAsked[i - 1]! > 500);
    expect(result.refusedAsked.filter((t) => t < 500).length, trace).toBeLessThanOrEqual(3);
    expect(result.refusedAsked.length - result.refusedAsked.filter((t) => t < 500).length, trace).toBe(steps.length - 1);
    for (let k = 1; k < steps.length; k++) expect(steps[k]! - steps[k - 1]!, trace).toBeGreaterThanOrEqual(0.9 * SCENARIO_BACKOFF_MS * 2 ** (k - 1));
    expect(steps.length, trace).toBeGreaterThanOrEqual(3);
    // On demand it was answered as refused (the spec's 500 for a platform refusing us), never served.
    expect(onDemandStatuses[200] ?? 0, trace).toBe(0);
    expect(onDemandStatuses[500], trace).toBe(ON_DEMAND);

    // Its watcher's status row says the refusal is the event's, and when it is asked next.
    const row = await stack.db('monitor_target_status').where({ target: `pf_06:fr:${refusedKey}` }).first();
    expect(row, trace).toMatchObject({ kind: 'blocked' });
    expect(String(row.last_error)).toContain('charged to this event');

    // 0 missed and 0 doubled notifications for the other targets: each one change, one notification.
    await eventually(async () => {
      const rows = await notificationsOf(stack, acct.accountId);
      return items.every((i) => rows.some((r) => r.itemId === i.id && r.kind === 'notification')) ? true : undefined;
    }, 30_000);
    await sleep(3 * SCENARIO_INTERVAL_MS);
    const rows = (await notificationsOf(stack, acct.accountId)).filter((r) => r.kind === 'notification');
    expect(
      items.map((i) => rows.filter((r) => r.itemId === i.id).length),
      trace,
    ).toEqual(items.map(() => 1));
    for (const item of items) expect(rows.find((r) => r.itemId === item.id)!.payload).toMatchObject({ after: { stock: changed.get(item.id) } });
    return result;
  } finally {
    await gw.close();
  }
}
