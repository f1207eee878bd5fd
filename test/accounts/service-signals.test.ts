// Account state changes commit without Temporal (issue 38), against PostgreSQL and the run's
// Temporal server, reached by the code under test through a TCP gate the test opens and closes
// (Toxiproxy, test/support/toxiproxy.ts): a real client whose server is away, nothing of ours mocked.
// - The sweep's transaction makes no Temporal call: it commits a resume and a suspension at once
//   while the Temporal its consumers use is unreachable (it took the 5 s call deadline and then
//   rolled back both before).
// - The signal relay tells Temporal afterwards: it retries with backoff, delivers once Temporal is
//   back, and its signal arrives exactly once (the workflow's own history is the record).
// - A later change supersedes an undelivered one: resumed then lapsed before the relay delivered,
//   the resume is never sent; a relay that was delivering the earlier version leaves the later one.
// - The membership relay's poller starts run after its batch commits: a sweep never waits on its
//   account locks for a Temporal call.
import { WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { signalBackoffMs, signalBacklog, startServiceSignalRelay, type ServiceSignals, type SignalRelay } from '../../src/accounts/service-signals.ts';
import { sweepServiceState, type ServiceHooks } from '../../src/accounts/service-state.ts';
import { ITEM_DEFAULTS } from '../../src/apis/watchlist/schema.ts';
import { WatchlistStore } from '../../src/apis/watchlist/store.ts';
import { createLogger } from '../../src/logger.ts';
import { trackingServiceSignals } from '../../src/market-data/tracking-lifecycle.ts';
import { memberServiceHooks, memberServiceSignals, startMembershipRelay } from '../../src/monitors/membership.ts';
import { shardPollerId } from '../../src/monitors/shards.ts';
import { deliveryServiceHooks } from '../../src/webhooks/parking.ts';
import { connectTemporal, openTemporal } from '../../temporal/client.ts';
import type { TrackEventState } from '../../workflows/track-event.ts';
import { eventually, newAccount, databaseUrl } from '../support/harness.ts';
import { startGate, type TcpGate } from '../support/toxiproxy.ts';
import { temporalAddress, TEST_NAMESPACE, uniqueTaskQueue } from '../support/temporal.ts';

const log = createLogger('silent');
const SHARDS = 2;
const hooks: ServiceHooks[] = [memberServiceHooks({ shardsPerPlatform: SHARDS }), deliveryServiceHooks({ expireAfterMs: 60_000 })];

let scratch: ScratchDatabase;
let db: Db;
let store: WatchlistStore;
/** The run's server, reached directly: the test's own view of what Temporal received. */
let truth: Client;
/** The client the code under test uses, through the gate. */
let gated: Client;
let gate: TcpGate;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_service_signals', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 8 });
  store = new WatchlistStore(db);
  const t = await connectTemporal({ address: temporalAddress(), namespace: TEST_NAMESPACE });
  truth = t.client;
  closers.push(t.close);
  gate = await startGate(temporalAddress(), { open: false });
  closers.push(gate.stop);
  // As a worker with TEMPORAL_ADDRESS opens it (temporal/runtime.ts): returned at once, the server waited for.
  const abort = new AbortController();
  const opened = openTemporal({ address: gate.address, namespace: TEST_NAMESPACE, waitFor: { log, signal: abort.signal } });
  gated = opened.client;
  closers.push(async () => {
    abort.abort();
    await opened.close();
  });
}, 60_000);
afterAll(async () => {
  for (const c of closers.reverse()) await c().catch(() => {});
  await db?.destroy();
  await scratch?.drop();
});
beforeEach(async () => {
  await gate.close();
});

const setStatus = (accountId: number, status: string) => db('subscriptions').where({ account_id: accountId }).update({ status });
const signalRow = (accountId: number) => db('account_service_signals').where({ account_id: accountId }).first();
const served = async (accountId: number) => (await db('account_service').where({ account_id: accountId }).first('served'))?.served as boolean | undefined;

/** A watched pf_03 item of the account; returns its id. */
async function watch(accountId: number): Promise<number> {
  const item = await store.create(accountId, { ...ITEM_DEFAULTS, website: 'pf_03', event: `https://pf03.example/e/sig-${randomUUID().slice(0, 8)}`, region: 'fr' }, 1_000);
  return item.id;
}

/** A tracking of the account whose workflow runs on a queue no worker serves: its history records what it was sent. */
async function tracking(accountId: number, taskQueue: string): Promise<WorkflowHandle> {
  const externalId = `E-${Math.floor(Math.random() * 1e12)}`;
  const workflowId = `track-signals-test:${randomUUID()}`;
  const [row] = await db('tracked_events').insert({ marketplace: 'marketplace_a', external_id: externalId, workflow_id: workflowId, status: 'active' }).returning('id');
  await db('tracked_event_accounts').insert({ tracked_event_id: row.id, account_id: accountId });
  const state: TrackEventState = { marketplace: 'marketplace_a', externalId, intervalMs: 1_000, ticks: 0, failures: 0 };
  return truth.workflow.start('trackEvent', { taskQueue, workflowId, args: [state] });
}

/** Opens the gate and waits until a call through it gets an answer (the channel reconnects within 3 s). */
async function reopen(): Promise<void> {
  await gate.open();
  await eventually(() => gated.workflowService.getSystemInfo({}).then(
    () => true,
    () => undefined,
  ));
}

/** resumeTracking signals in the workflow's history. */
async function resumeSignals(handle: WorkflowHandle): Promise<number> {
  const history = await truth.workflow.getHandle(handle.workflowId).fetchHistory();
  return (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'resumeTracking').length;
}

async function pollerRuns(taskQueue: string, platform: string, shard: number): Promise<boolean> {
  try {
    await truth.workflow.getHandle(shardPollerId(taskQueue, platform, shard)).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

/** The production consumers on the gated client, on a queue of the test's own. */
function consumers(taskQueue: string): ServiceSignals[] {
  return [memberServiceSignals({ db, client: gated, taskQueue }), trackingServiceSignals({ db, client: gated })];
}

/** Relays of the running test, stopped after it: one left polling would deliver the next test's rows. */
const relays: SignalRelay[] = [];
afterEach(async () => {
  await Promise.all(relays.splice(0).map((r) => r.stop()));
});

function relay(signals: readonly ServiceSignals[], pollMs = 3_600_000, registry?: Registry): SignalRelay {
  const r = startServiceSignalRelay({ db, signals, log, pollMs, backoff: { baseMs: 200, maxMs: 1_000 }, registry });
  relays.push(r);
  return r;
}

/** An account that was served, then lapsed (recorded and its signal row delivered): ready to be resumed. */
async function lapsedAccount(signals: SignalRelay) {
  const acct = await newAccount(db);
  await sweepServiceState(db, hooks);
  await setStatus(acct.accountId, 'canceled');
  expect((await sweepServiceState(db, hooks)).suspended).toContain(acct.accountId);
  // A suspension asks nothing of Temporal: delivered at once, even with Temporal away.
  await signals.drain();
  expect(await signalRow(acct.accountId)).toBeUndefined();
  return acct;
}

describe('account state changes commit without Temporal', { timeout: 120_000 }, () => {
  it('the sweep commits a resume and a suspension while Temporal is unreachable; the relay tells Temporal once it is back, once', async () => {
    const queue = uniqueTaskQueue('signals');
    const registry = new Registry();
    const signals = relay(consumers(queue), undefined, registry);
    const resuming = await lapsedAccount(signals);
    const itemId = await watch(resuming.accountId);
    const wf = await tracking(resuming.accountId, queue);
    const lapsing = await newAccount(db);
    const lapsingItem = await watch(lapsing.accountId);
    // The lapsing account's item is a member, as the membership relay would have made it.
    await db('monitor_members').insert({ item_id: lapsingItem, account_id: lapsing.accountId, target: 'pf_03:fr:x', platform: 'pf_03', shard: 0, ref: '{}', item: '{}', config: '{}', version: 1 });
    await sweepServiceState(db, hooks);

    await db.transaction(async (trx) => {
      await trx('subscriptions').where({ account_id: resuming.accountId }).update({ status: 'active' });
      await trx('subscriptions').where({ account_id: lapsing.accountId }).update({ status: 'canceled' });
    });
    const t0 = performance.now();
    expect(await sweepServiceState(db, hooks)).toEqual({ suspended: [lapsing.accountId], resumed: [resuming.accountId] });
    const sweepMs = performance.now() - t0;
    // A call to Temporal would have waited out its 5 s deadline (temporal/client.ts).
    expect(sweepMs).toBeLessThan(2_000);
    // Committed: both states, the members, and the outbox rows.
    expect(await served(resuming.accountId)).toBe(true);
    expect(await served(lapsing.accountId)).toBe(false);
    const member = await db('monitor_members').where({ item_id: itemId }).first('platform', 'shard', 'baseline_snapshot_id');
    expect(member).toMatchObject({ platform: 'pf_03', baseline_snapshot_id: null });
    expect(await db('monitor_members').where({ item_id: lapsingItem }).first()).toBeUndefined();
    expect(await signalRow(resuming.accountId)).toMatchObject({ served: true, attempts: 0 });
    expect(await signalRow(lapsing.accountId)).toMatchObject({ served: false });

    // Temporal away: the resume fails and is put back with its error; the suspension goes through.
    expect(await signals.drain()).toEqual({ delivered: 1, failed: 1 });
    const failed = await signalRow(resuming.accountId);
    expect(failed).toMatchObject({ served: true, attempts: 1, claimed_until: null, last_error: expect.any(String) });
    expect(await signalRow(lapsing.accountId)).toBeUndefined();
    expect((await signalBacklog(db)).retrying).toEqual([expect.objectContaining({ account_id: resuming.accountId, served: true, attempts: 1 })]);
    expect(await resumeSignals(wf)).toBe(0);
    expect(await pollerRuns(queue, member.platform, member.shard)).toBe(false);
    expect(await registry.getSingleMetricAsString('account_service_signals_pending')).toMatch(/^account_service_signals_pending 1$/m);
    expect(await registry.getSingleMetricAsString('account_service_signals_oldest_seconds')).toMatch(/^account_service_signals_oldest_seconds \d/m);

    // Back: the relay's own retries deliver it.
    await gate.open();
    const retrying = relay(consumers(queue), 200);
    await eventually(async () => ((await signalRow(resuming.accountId)) ? undefined : true), 45_000);
    expect(await resumeSignals(wf)).toBe(1);
    expect(await pollerRuns(queue, member.platform, member.shard)).toBe(true);
    // Delivered once: nothing is left to send it again.
    await retrying.drain();
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await resumeSignals(wf)).toBe(1);
    expect((await signalBacklog(db)).pending).toBe(0);
  });

  it('resumed then lapsed before the relay delivered: the resume is never sent; resumed again, it is, once', async () => {
    const queue = uniqueTaskQueue('signals-flip');
    const signals = relay(consumers(queue));
    const acct = await lapsedAccount(signals);
    await watch(acct.accountId);
    const wf = await tracking(acct.accountId, queue);

    await setStatus(acct.accountId, 'active');
    expect((await sweepServiceState(db, hooks)).resumed).toEqual([acct.accountId]);
    const first = await signalRow(acct.accountId);
    expect(await signals.drain()).toMatchObject({ failed: 1 });
    expect(await signalRow(acct.accountId)).toMatchObject({ served: true, attempts: 1 });
    // Lapsed again before Temporal came back: the row now carries the suspension, from scratch.
    await setStatus(acct.accountId, 'past_due');
    expect((await sweepServiceState(db, hooks)).suspended).toEqual([acct.accountId]);
    const second = await signalRow(acct.accountId);
    expect(second).toMatchObject({ served: false, attempts: 0, last_error: null, claimed_until: null });
    expect(Number(second.version)).toBeGreaterThan(Number(first.version));
    expect(await db('monitor_members').where({ account_id: acct.accountId }).first()).toBeUndefined();

    await reopen();
    expect(await signals.drain()).toEqual({ delivered: 1, failed: 0 });
    expect(await signalRow(acct.accountId)).toBeUndefined();
    expect(await resumeSignals(wf)).toBe(0);
    expect(await pollerRuns(queue, 'pf_03', 0)).toBe(false);
    expect(await pollerRuns(queue, 'pf_03', 1)).toBe(false);

    // Served again: this resume is delivered, once.
    await setStatus(acct.accountId, 'active');
    expect((await sweepServiceState(db, hooks)).resumed).toEqual([acct.accountId]);
    expect(await signals.drain()).toEqual({ delivered: 1, failed: 0 });
    expect(await signals.drain()).toEqual({ delivered: 0, failed: 0 });
    expect(await resumeSignals(wf)).toBe(1);
  });

  it('a change committed while a relay delivers the one before it stays to be delivered; a second relay leaves a claimed row alone', async () => {
    // A consumer of the test's own that holds its delivery until told, to catch the relay in the middle.
    const calls: { state: 'resumed' | 'suspended'; ids: number[] }[] = [];
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    const holding: ServiceSignals = {
      name: 'held',
      resumed: async (ids) => {
        calls.push({ state: 'resumed', ids });
        await held;
      },
      suspended: async (ids) => {
        calls.push({ state: 'suspended', ids });
      },
    };
    const first = relay([holding]);
    const second = relay([holding]);
    const acct = await lapsedAccount(first);
    calls.length = 0;
    await setStatus(acct.accountId, 'active');
    await sweepServiceState(db, hooks);
    const resumedVersion = Number((await signalRow(acct.accountId)).version);

    const delivering = first.drain();
    await eventually(async () => (calls.length === 1 ? true : undefined));
    expect(await second.drain()).toEqual({ delivered: 0, failed: 0 });
    // The account lapses while the resume is being told: the sweep does not wait for the relay.
    await setStatus(acct.accountId, 'canceled');
    expect((await sweepServiceState(db, hooks)).suspended).toEqual([acct.accountId]);
    release();
    expect(await delivering).toEqual({ delivered: 1, failed: 0 });
    // The relay settled only the version it read: the suspension is still to be told.
    const row = await signalRow(acct.accountId);
    expect(row).toMatchObject({ served: false, attempts: 0 });
    expect(Number(row.version)).not.toBe(resumedVersion);
    expect(await second.drain()).toEqual({ delivered: 1, failed: 0 });
    expect(calls).toEqual([
      { state: 'resumed', ids: [acct.accountId] },
      { state: 'suspended', ids: [acct.accountId] },
    ]);
    expect(await signalRow(acct.accountId)).toBeUndefined();
  });

  it('the membership relay starts pollers after its batch commits: a sweep does not wait on its locks for Temporal', async () => {
    const queue = uniqueTaskQueue('signals-membership');
    const membership = startMembershipRelay({ db, connectionString: scratch.url, client: gated, taskQueue: queue, shardsPerPlatform: SHARDS, log });
    closers.push(membership.stop);
    const acct = await newAccount(db);
    await sweepServiceState(db, hooks);
    const itemId = await watch(acct.accountId);
    // Its batch reads the account's state under a share lock, then starts the item's poller (Temporal away: 5 s).
    const draining = membership.drain();
    await new Promise((r) => setTimeout(r, 500));
    await setStatus(acct.accountId, 'canceled');
    const t0 = performance.now();
    expect((await sweepServiceState(db, hooks)).suspended).toEqual([acct.accountId]);
    expect(performance.now() - t0).toBeLessThan(2_000);
    await draining;
    expect(await db('monitor_members').where({ item_id: itemId }).first()).toBeUndefined();
  });

  it('backs off 1 s, 2 s, 4 s … up to 15 s, ±20 %', () => {
    const mid = () => 0.5;
    expect([1, 2, 3, 4, 5, 6, 10].map((n) => signalBackoffMs(n, undefined, mid))).toEqual([1_000, 2_000, 4_000, 8_000, 15_000, 15_000, 15_000]);
    expect(signalBackoffMs(1, undefined, () => 0)).toBe(800);
    expect(signalBackoffMs(9, undefined, () => 1)).toBe(18_000);
  });
});
