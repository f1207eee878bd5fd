// Event tracking ends and pauses (issue 25), all real (PostgreSQL, Temporal, the simulator's
// marketplace A, the gateway): a tracking ends TRACKING_END_AFTER_EVENT_MS after its event's date
// and completes its workflow with no timer left; an event with no date ends
// TRACKING_UNDATED_MAX_MS after its tracking started; a tracking no account holds ends at its
// next tick; re-adding an ended event scrapes it once more (its date may have moved). While no
// account tracking an event is served its tracking scrapes nothing, keeps everything, and
// resumes once one is served again; a tracking shared by two accounts runs while either is.
// A tracking from before accounts were recorded (`unattributed`) runs while it awaits its claim
// and ends as untracked once TRACKING_UNATTRIBUTED_MAX_MS has passed unclaimed (issue 38).
import { describe, expect, it } from 'vitest';
import { startServiceSignalRelay } from '../../src/accounts/service-signals.ts';
import { sweepServiceState } from '../../src/accounts/service-state.ts';
import { createLogger } from '../../src/logger.ts';
import { trackingServiceSignals } from '../../src/market-data/tracking-lifecycle.ts';
import { trackingWorkflowId } from '../../src/market-data/tracking-ref.ts';
import type { TrackEventState } from '../../workflows/track-event.ts';
import { trackStatusQuery } from '../../workflows/track-event-messages.ts';
import { call, newAccount, type TestAccount } from '../support/harness.ts';
import { randomAId } from '../support/market-data-fixtures.ts';
import { hits } from '../support/simulator.ts';
import { eventually, useTrackingStack } from './tracking-stack.ts';

const END_AFTER_MS = 1_500;
const UNDATED_MAX_MS = 4_000;
const INTERVAL_MS = 300;

const stack = useTrackingStack({
  intervalMs: INTERVAL_MS,
  env: { TRACKING_END_AFTER_EVENT_MS: String(END_AFTER_MS), TRACKING_UNDATED_MAX_MS: String(UNDATED_MAX_MS) },
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const page = (startsAt: string | null) => ({ starts_at: startsAt, listings: [{ section: 'S', quantity: 2, price: 10 }] });
const addAs = (account: TestAccount, id: string) => call(stack.gateway.url, 'POST', '/svc/data/events/add', { key: account.key, body: { marketplace: 'marketplace_a', event_id: id } });
const fetches = (id: string) => hits(stack.sim, 'marketplace_a', id);

async function ended(id: string) {
  return eventually(async () => {
    const r = await stack.record('marketplace_a', id);
    return r?.status === 'ended' ? r : undefined;
  }, 30_000);
}

/** The tracking's workflow completed (not failed, not terminated) and left no timer behind. */
async function completedCleanly(id: string) {
  const handle = stack.client.workflow.getHandle(trackingWorkflowId('marketplace_a', id));
  await handle.result();
  expect((await handle.describe()).status.name).toBe('COMPLETED');
  const events = (await handle.fetchHistory()).events ?? [];
  const started = events.filter((e) => e.timerStartedEventAttributes).length;
  const done = events.filter((e) => e.timerFiredEventAttributes || e.timerCanceledEventAttributes).length;
  expect(started).toBe(done);
  expect(events.at(-1)!.workflowExecutionCompletedEventAttributes).toBeTruthy();
}

/** No fetch of the event for `quietMs` after the one in flight (if any) is done. */
async function notFetched(id: string, quietMs = 2_000) {
  await sleep(1_000);
  const before = await fetches(id);
  await sleep(quietMs);
  expect(await fetches(id)).toBe(before);
  return before;
}

async function fetchedAgain(id: string, after: number, withinMs = 10_000) {
  await eventually(async () => ((await fetches(id)) > after ? true : undefined), withinMs);
}

const links = (id: string) =>
  stack
    .db('tracked_event_accounts as l')
    .join('tracked_events as t', 't.id', 'l.tracked_event_id')
    .where({ 't.marketplace': 'marketplace_a', 't.external_id': id })
    .orderBy('l.account_id')
    .select('l.account_id', 'l.ended_at');

describe('tracked events end', { timeout: 120_000 }, () => {
  it('a set time after the event’s date: scraped until then, then ended, the workflow completed with no timer left', async () => {
    const id = randomAId();
    // Ticks come about 1.1 s apart on the test server whatever the 300 ms interval (timers), so
    // 3 s before the date left 3-4 scrapes and, with a slow first tick (a worker still launching
    // its browser), 2: 5 s leaves room for three at least.
    const startsAt = Date.now() + 5_000;
    await stack.put('marketplace_a', id, page(new Date(startsAt).toISOString()));
    expect((await stack.add({ marketplace: 'marketplace_a', event_id: id })).status).toBe(201);

    const row = await ended(id);
    expect(row.end_reason).toBe('event_passed');
    // Tracked past the date itself (until the date plus the setting), and ended within a few ticks of that.
    expect(row.scrape_count).toBeGreaterThanOrEqual(3);
    expect(row.last_scraped_at.getTime()).toBeGreaterThan(startsAt);
    expect(row.ended_at.getTime()).toBeGreaterThanOrEqual(startsAt + END_AFTER_MS);
    expect(row.ended_at.getTime()).toBeLessThan(startsAt + END_AFTER_MS + 5_000);
    await completedCleanly(id);
    await notFetched(id);
    // The account's link ended with it: it no longer counts against the cap.
    expect((await links(id)).map((l) => l.ended_at)).toEqual([expect.any(Date)]);
  });

  it('an event already past is scraped once (for its date) and ends; added again it is scraped once more, and goes on once its date moved', async () => {
    const id = randomAId();
    await stack.put('marketplace_a', id, page(new Date(Date.now() - 86_400_000).toISOString()));
    expect((await stack.add({ marketplace: 'marketplace_a', event_id: id })).status).toBe(201);
    const row = await ended(id);
    expect(row).toMatchObject({ end_reason: 'event_passed', scrape_count: 1 });
    await completedCleanly(id);
    expect(await fetches(id)).toBe(1);

    const again = await stack.add({ marketplace: 'marketplace_a', event_id: id });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ status: 'pending', ended_at: null, end_reason: null });
    expect(await ended(id)).toMatchObject({ end_reason: 'event_passed', scrape_count: 2 });
    await completedCleanly(id);

    // Postponed: the re-added tracking reads the new date and carries on.
    await stack.put('marketplace_a', id, page(new Date(Date.now() + 3_600_000).toISOString()));
    expect((await stack.add({ marketplace: 'marketplace_a', event_id: id })).status).toBe(200);
    const active = await stack.scraped('marketplace_a', id, 6);
    expect(active.ended_at).toBeNull();
    const handle = stack.client.workflow.getHandle(trackingWorkflowId('marketplace_a', id));
    expect((await handle.describe()).status.name).toBe('RUNNING');
    await handle.terminate('test: done');
  });

  it('an event with no date ends TRACKING_UNDATED_MAX_MS after its tracking started', async () => {
    const id = randomAId();
    await stack.put('marketplace_a', id, page(null));
    expect((await stack.add({ marketplace: 'marketplace_a', event_id: id })).status).toBe(201);
    const row = await ended(id);
    expect(row.end_reason).toBe('undated');
    const ranMs = row.ended_at.getTime() - row.started_at.getTime();
    expect(ranMs).toBeGreaterThanOrEqual(UNDATED_MAX_MS);
    expect(ranMs).toBeLessThan(UNDATED_MAX_MS + 5_000);
    expect(row.scrape_count).toBeGreaterThanOrEqual(3);
    await completedCleanly(id);
  });

  it('a tracking from before accounts were recorded (unattributed) keeps running until a date rule ends it', async () => {
    const id = randomAId();
    await stack.put('marketplace_a', id, page(null));
    const workflowId = trackingWorkflowId('marketplace_a', id);
    // As migrations 027 and 034 leave a tracking that was running: no account link, `unattributed`, awaiting its claim.
    await stack.db('tracked_events').insert({ marketplace: 'marketplace_a', external_id: id, workflow_id: workflowId, unattributed: true, unattributed_since: new Date() });
    const state: TrackEventState = { marketplace: 'marketplace_a', externalId: id, scrapeQueue: stack.config.SCRAPE_TASK_QUEUE, intervalMs: INTERVAL_MS, ticks: 0, failures: 0 };
    await stack.client.workflow.start('trackEvent', { taskQueue: stack.config.MONITOR_TASK_QUEUE, workflowId, args: [state] });
    const row = await ended(id);
    expect(row.end_reason).toBe('undated');
    // It ran its whole undated time, ticking on: at a 300 ms interval, 13 ticks alone; a full run on
    // two cores (load average 8) got 2 scrapes in, so the count asks only for more than the first.
    expect(row.ended_at.getTime() - row.started_at.getTime()).toBeGreaterThanOrEqual(UNDATED_MAX_MS);
    expect(row.scrape_count).toBeGreaterThanOrEqual(2);
    expect(await fetches(id)).toBeGreaterThanOrEqual(2);
    await completedCleanly(id);
  });

  it('an unattributed tracking nobody claims ends as untracked when its wait is over, its event however far; one an account adds goes on as that account’s', async () => {
    const unclaimed = randomAId();
    const claimed = randomAId();
    const start = async (id: string) => {
      await stack.put('marketplace_a', id, page(new Date(Date.now() + 3_600_000).toISOString()));
      const workflowId = trackingWorkflowId('marketplace_a', id);
      // Its wait began TRACKING_UNATTRIBUTED_MAX_MS (the default, 30 days) less 6 s ago: 6 s left to claim it.
      const since = new Date(Date.now() - 30 * 86_400_000 + 6_000);
      await stack.db('tracked_events').insert({ marketplace: 'marketplace_a', external_id: id, workflow_id: workflowId, unattributed: true, unattributed_since: since });
      const state: TrackEventState = { marketplace: 'marketplace_a', externalId: id, scrapeQueue: stack.config.SCRAPE_TASK_QUEUE, intervalMs: INTERVAL_MS, ticks: 0, failures: 0 };
      await stack.client.workflow.start('trackEvent', { taskQueue: stack.config.MONITOR_TASK_QUEUE, workflowId, args: [state] });
    };
    const owner = await newAccount(stack.db);
    await start(unclaimed);
    await start(claimed);
    expect((await addAs(owner, claimed)).status).toBe(200);
    expect(await stack.record('marketplace_a', claimed)).toMatchObject({ unattributed: false, unattributed_since: null });

    const row = await ended(unclaimed);
    expect(row).toMatchObject({ end_reason: 'untracked' });
    expect(row.scrape_count).toBeGreaterThanOrEqual(1);
    await completedCleanly(unclaimed);
    await notFetched(unclaimed);

    // The claimed one is its account's now: still scraped after the wait would have ended.
    await fetchedAgain(claimed, await fetches(claimed));
    expect(await stack.record('marketplace_a', claimed)).toMatchObject({ status: 'active', ended_at: null });
    expect((await links(claimed)).map((l) => [l.account_id, l.ended_at])).toEqual([[owner.accountId, null]]);
    await stack.client.workflow.getHandle(trackingWorkflowId('marketplace_a', claimed)).terminate('test: done');
  });

  it('a tracking no account holds ends at its next tick without a scrape', async () => {
    const id = randomAId();
    await stack.put('marketplace_a', id, page(null));
    const workflowId = trackingWorkflowId('marketplace_a', id);
    await stack.db('tracked_events').insert({ marketplace: 'marketplace_a', external_id: id, workflow_id: workflowId });
    const state: TrackEventState = { marketplace: 'marketplace_a', externalId: id, scrapeQueue: stack.config.SCRAPE_TASK_QUEUE, intervalMs: INTERVAL_MS, ticks: 0, failures: 0 };
    await stack.client.workflow.start('trackEvent', { taskQueue: stack.config.MONITOR_TASK_QUEUE, workflowId, args: [state] });
    expect(await ended(id)).toMatchObject({ end_reason: 'untracked', scrape_count: 0 });
    await completedCleanly(id);
    expect(await fetches(id)).toBe(0);
  });
});

describe('only served accounts consume', { timeout: 120_000 }, () => {
  const setServed = async (account: TestAccount, how: 'canceled' | 'no billing account' | 'active') => {
    if (how === 'no billing account') await stack.db('accounts').where({ id: account.accountId }).update({ customer_id: null });
    else await stack.db('subscriptions').where({ account_id: account.accountId }).update({ status: how });
  };

  // The sweep records the changes; the signal relay wakes the trackings afterwards (as the worker runs them).
  const sweepHooks = () => [];
  const signals = () => startServiceSignalRelay({ db: stack.db, signals: [trackingServiceSignals({ db: stack.db, client: stack.client })], log: createLogger('silent'), pollMs: 60_000 });

  it('an unserved account’s trackings stop at their next tick and keep everything; a shared one runs while one of its accounts is served; served again, they resume', async () => {
    const x = await newAccount(stack.db);
    const y = await newAccount(stack.db);
    const own = randomAId();
    const shared = randomAId();
    for (const id of [own, shared]) await stack.put('marketplace_a', id, page(new Date(Date.now() + 3_600_000).toISOString()));
    expect((await addAs(x, own)).status).toBe(201);
    expect((await addAs(x, shared)).status).toBe(201);
    expect((await addAs(y, shared)).status).toBe(200);
    await stack.scraped('marketplace_a', own, 2);
    await stack.scraped('marketplace_a', shared, 2);

    // X's subscription is canceled: its own event is no longer fetched; the shared one is (Y).
    await setServed(x, 'canceled');
    const ownStopped = await notFetched(own);
    await fetchedAgain(shared, await fetches(shared));
    const ownHandle = stack.client.workflow.getHandle(trackingWorkflowId('marketplace_a', own));
    expect((await ownHandle.query(trackStatusQuery)).paused).toBe(true);
    // Nothing deleted or ended: the tracking waits for its account.
    expect(await stack.record('marketplace_a', own)).toMatchObject({ status: 'active', ended_at: null });
    expect((await links(own)).map((l) => l.ended_at)).toEqual([null]);
    expect((await ownHandle.describe()).status.name).toBe('RUNNING');

    // Y loses its billing account: nobody tracking the shared event is served any more.
    await setServed(y, 'no billing account');
    const sharedStopped = await notFetched(shared);

    // The sweep has recorded both lapses (the gate paused them on its own, at their next tick).
    expect((await sweepServiceState(stack.db, sweepHooks())).suspended).toEqual(expect.arrayContaining([x.accountId, y.accountId]));
    // Paused trackings wait for the sweep's signal (the backstop check is 15 min away): X is
    // served again, the sweep sees it and wakes both, which resume at once.
    await setServed(x, 'active');
    const resumed = Date.now();
    expect((await sweepServiceState(stack.db, sweepHooks())).resumed).toEqual([x.accountId]);
    const relay = signals();
    try {
      expect(await relay.drain()).toMatchObject({ failed: 0 });
    } finally {
      await relay.stop();
    }
    await fetchedAgain(own, ownStopped);
    await fetchedAgain(shared, sharedStopped);
    expect(Date.now() - resumed).toBeLessThan(5_000);
    await eventually(async () => ((await ownHandle.query(trackStatusQuery)).paused ? undefined : true));
    const before = (await stack.record('marketplace_a', own))!.scrape_count;
    await stack.scraped('marketplace_a', own, before + 2);
  });
});
