// A Temporal outage cannot undo suspensions (issue 38), the whole path, all real: a worker with
// the real activities polling the simulator, the membership and monitor relays, the webhook
// dispatcher and its worker, a gateway, PostgreSQL, and the service sweep and its signal relay
// as the worker runs them (temporal/runtime.ts). The Temporal the sweep's consumers use is the
// run's server behind a Toxiproxy gate the test keeps closed (a real client that finds nobody
// listening); everything else reaches Temporal directly. One account is served again and ten
// lapse at the same moment:
// - the ten are recorded as not served in the same sweep as the resume, and their work stops
//   within 60 s: their members leave, the simulator stops receiving their targets' requests,
//   and a webhook delivery written for them parks instead of reaching the receiver;
// - the resumed account's tracking is not woken while Temporal is away (its signal waits in the
//   outbox), and is woken exactly once when the gate opens: its workflow's own history is the
//   record, the simulator's request count the proof that it scrapes again.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@temporalio/client';
import { createWebhookActivities } from '../../activities/webhooks.ts';
import { startServiceSignalRelay, type SignalRelay } from '../../src/accounts/service-signals.ts';
import { startServiceSweep, type ServiceSweep, type SweepResult } from '../../src/accounts/service-state.ts';
import { createLogger } from '../../src/logger.ts';
import { TemporalEventTracker } from '../../src/market-data/tracking-service.ts';
import { trackingServiceSignals } from '../../src/market-data/tracking-lifecycle.ts';
import { trackingWorkflowId } from '../../src/market-data/tracking-ref.ts';
import { memberServiceHooks, memberServiceSignals, startMembershipRelay } from '../../src/monitors/membership.ts';
import { startMonitorRelay } from '../../src/monitors/relay.ts';
import type { Simulator } from '../../src/simulator/server.ts';
import { createDeliveryAttempts } from '../../src/webhooks/attempt.ts';
import { startDispatcher } from '../../src/webhooks/dispatcher.ts';
import { deliveryServiceHooks } from '../../src/webhooks/parking.ts';
import { SecretBox } from '../../src/webhooks/secret-box.ts';
import { openTemporal } from '../../temporal/client.ts';
import { WORKFLOWS_PATH } from '../../temporal/runtime.ts';
import { startWorkers } from '../../temporal/worker.ts';
import { trackStatusQuery } from '../../workflows/track-event-messages.ts';
import { createWebhook } from '../apis/webhooks/helpers.ts';
import { call, eventually, newAccount, TEST_WEBHOOK_KEY, type TestAccount } from '../support/harness.ts';
import { randomAId } from '../support/market-data-fixtures.ts';
import { putEvent, section } from '../support/scrape-stack.ts';
import { hits } from '../support/simulator.ts';
import { startGate, type TcpGate } from '../support/toxiproxy.ts';
import { cachedBundle, temporalAddress, TEST_NAMESPACE, uniqueTaskQueue } from '../support/temporal.ts';
import { writeNotification } from '../support/webhook-stack.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';
import { useWorkerStack, type WorkerStack } from '../support/worker-stack.ts';

const INTERVAL_MS = 300;
const LAPSING = 10;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const marketplaceUrls = (sim: Simulator) => ({ marketplace_a: sim.marketplaceUrls.marketplace_a, marketplace_b: sim.marketplaceUrls.marketplace_b });

// The monitors' stack (monitor-stack.ts) and the tracking stack's marketplaces (test/tracking/tracking-stack.ts)
// on one worker, with webhook delivery (webhook-stack.ts) beside them.
const stack = useWorkerStack<WorkerStack>({
  database: 'tm_outage_sweep',
  env: {
    MONITOR_INTERVAL_MS: String(INTERVAL_MS),
    MONITOR_JITTER_RATIO: '0.1',
    MONITOR_POLL_RUN_MS: String(10 * 60_000),
    TRACK_INTERVAL_MS: String(INTERVAL_MS),
    SCRAPE_TASK_QUEUE: uniqueTaskQueue('scrapes'),
    MONITOR_TASK_QUEUE: uniqueTaskQueue('monitors'),
    BROWSER_PAGES: '1',
  },
  queues: (config) => [config.SCRAPE_TASK_QUEUE, config.MONITOR_TASK_QUEUE],
  activities: ({ sim }) => ({ marketplaceBaseUrls: marketplaceUrls(sim) }),
  childEnv: () => ({}),
  gatewayEnv: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' },
  services: ({ db, client, sim, config }) => ({
    tracking: new TemporalEventTracker(db, client, marketplaceUrls(sim), { taskQueue: config.MONITOR_TASK_QUEUE, scrapeQueue: config.SCRAPE_TASK_QUEUE, intervalMs: config.TRACK_INTERVAL_MS }),
  }),
  build: async (stack, { log, onClose }) => {
    const { db, databaseUrl, config, client } = stack;
    // Workflow ids name items and webhooks, and every file shares the run's namespace.
    await db.raw(`ALTER SEQUENCE watchlist_items_id_seq RESTART WITH ${1 + Math.floor(Math.random() * 2 ** 40)}`);
    await db.raw(`ALTER SEQUENCE webhooks_id_seq RESTART WITH ${1 + Math.floor(Math.random() * 2 ** 40)}`);
    const relays = { db, connectionString: databaseUrl, client, taskQueue: config.MONITOR_TASK_QUEUE, shardsPerPlatform: config.MONITOR_SHARDS_PER_PLATFORM, log };
    const membership = startMembershipRelay(relays);
    onClose(() => membership.stop());
    const monitors = startMonitorRelay(relays);
    onClose(() => monitors.stop());
    const attempts = createDeliveryAttempts({ db, box: new SecretBox(TEST_WEBHOOK_KEY), log, allowPrivateNetworks: true, scheduleMs: [300, 600, 1_200], timeoutMs: 5_000, perEndpointConcurrency: 4 });
    const webhookQueue = uniqueTaskQueue('webhooks');
    const workers = await startWorkers({
      connection: { address: temporalAddress() },
      namespace: TEST_NAMESPACE,
      queues: [{ taskQueue: webhookQueue, workflowsPath: WORKFLOWS_PATH, activities: createWebhookActivities(db, attempts, { roundMaxMs: 200 }), workflowBundle: await cachedBundle(WORKFLOWS_PATH) }],
      log,
      shutdownGraceMs: 1_000,
    });
    onClose(() => workers.stop());
    const dispatcher = startDispatcher({ db, connectionString: databaseUrl, client, attempts, taskQueue: webhookQueue, log });
    onClose(() => dispatcher.stop());
    return stack;
  },
});

const log = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
let gate: TcpGate;
/** The client of the sweep's consumers: through the gate. */
let gated: Client;
let closeGated: () => Promise<void>;
const abort = new AbortController();
let relay: SignalRelay;
let sweep: ServiceSweep;
const sweeps: SweepResult[] = [];
let receiver: Receiver;

beforeAll(async () => {
  gate = await startGate(temporalAddress(), { open: false });
  const opened = openTemporal({ address: gate.address, namespace: TEST_NAMESPACE, waitFor: { log, signal: abort.signal } });
  gated = opened.client;
  closeGated = opened.close;
  receiver = await startReceiver();
  const { db, config } = stack;
  // As the worker runs them (temporal/runtime.ts), with the consumers' Temporal through the gate.
  relay = startServiceSignalRelay({
    db,
    signals: [memberServiceSignals({ db, client: gated, taskQueue: config.MONITOR_TASK_QUEUE }), trackingServiceSignals({ db, client: gated })],
    log,
    backoff: { baseMs: 500, maxMs: 3_000 },
  });
  sweep = startServiceSweep({
    db,
    hooks: [memberServiceHooks({ shardsPerPlatform: config.MONITOR_SHARDS_PER_PLATFORM }), deliveryServiceHooks({ expireAfterMs: 3_600_000 })],
    everyMs: 250,
    log,
    onChange: (r) => {
      sweeps.push(r);
      relay.kick();
    },
  });
}, 60_000);
afterAll(async () => {
  await sweep?.stop();
  await relay?.stop();
  abort.abort();
  await closeGated?.();
  await gate?.stop();
  await receiver?.close();
});

const stalls = (stock: number) => ({ region: 'fr', sections: [section('Stalls', 80, stock)] });
const setStatus = (accountId: number, status: string) => stack.db('subscriptions').where({ account_id: accountId }).update({ status });
const member = (itemId: number) => stack.db('monitor_members').where({ item_id: itemId }).first();
const delivery = (nid: number) => stack.db('webhook_deliveries').where({ notification_id: nid }).first();

async function newEvent(): Promise<string> {
  const event = `https://pf03.example/e/outage-${randomUUID().slice(0, 8)}`;
  await putEvent(stack.sim, 'pf_03', event, stalls(2));
  return event;
}

/** A watched item of the account (with its webhook when given), once its first poll set a baseline. */
async function watch(account: TestAccount, event: string, webhookId?: number): Promise<number> {
  const res = await call(stack.gateway.url, 'POST', '/watchlist', { key: account.key, body: { website: 'pf_03', event, region: 'fr', ...(webhookId ? { webhook_setting_id: webhookId } : {}) } });
  expect(res.status, res.text).toBe(201);
  const id = res.body.id as number;
  await eventually(async () => ((await member(id))?.baseline_snapshot_id != null ? true : undefined), 60_000);
  return id;
}

/** resumeTracking signals in the workflow's history, read directly from the server. */
async function resumeSignals(workflowId: string): Promise<number> {
  const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'resumeTracking').length;
}

describe('a Temporal outage cannot undo suspensions', { timeout: 300_000 }, () => {
  it('one account resumed and ten lapsed in one sweep, Temporal away: the ten stop within 60 s; the resume reaches Temporal once it is back, once', async () => {
    // Ten accounts, each watching an event of its own, with a webhook on the item.
    const lapsing: { account: TestAccount; event: string; item: number }[] = [];
    for (let i = 0; i < LAPSING; i++) {
      const account = await newAccount(stack.db);
      const hook = await createWebhook(stack.gateway.url, account.key, { url: receiver.url });
      receiver.secrets.push(hook.secret as string);
      const event = await newEvent();
      lapsing.push({ account, event, item: await watch(account, event, hook.id as number) });
    }
    const lapsingIds = lapsing.map((l) => l.account.accountId).sort((a, b) => a - b);
    // Their webhooks work: a notification of the first is delivered.
    const sent = await writeNotification(stack.db, lapsing[0]!.account.accountId, lapsing[0]!.item);
    await eventually(async () => ((await delivery(sent))?.state === 'delivered' ? true : undefined), 30_000);

    // The account to resume: it watches an event and tracks one, then lapses (recorded with Temporal away too).
    const resuming = await newAccount(stack.db);
    const ownItem = await watch(resuming, await newEvent());
    const tracked = randomAId();
    await putEvent(stack.sim, 'marketplace_a', tracked, { starts_at: new Date(Date.now() + 3_600_000).toISOString(), listings: [{ section: 'S', quantity: 2, price: 10 }] });
    const added = await call(stack.gateway.url, 'POST', '/svc/data/events/add', { key: resuming.key, body: { marketplace: 'marketplace_a', event_id: tracked } });
    expect(added.status, added.text).toBe(201);
    const workflowId = trackingWorkflowId('marketplace_a', tracked);
    const tracking = stack.client.workflow.getHandle(workflowId);
    await eventually(async () => ((await stack.db('tracked_events').where({ workflow_id: workflowId }).first())?.scrape_count >= 2 ? true : undefined), 60_000);
    await setStatus(resuming.accountId, 'canceled');
    await eventually(async () => ((await member(ownItem)) ? undefined : true), 60_000);
    await eventually(async () => ((await tracking.query(trackStatusQuery)).paused ? true : undefined), 60_000);
    await eventually(async () => ((await stack.db('account_service_signals').where({ account_id: resuming.accountId }).first()) ? undefined : true));

    // At one moment: the account is served again and the ten lapse.
    const from = sweeps.length;
    await stack.db.transaction(async (trx) => {
      await trx('subscriptions').where({ account_id: resuming.accountId }).update({ status: 'active' });
      await trx('subscriptions').whereIn('account_id', lapsingIds).update({ status: 'canceled' });
    });
    const changedAt = performance.now();
    await eventually(async () => {
      const n = await stack.db('account_service').whereIn('account_id', lapsingIds).where({ served: false }).count<{ n: number }[]>('* as n').first();
      return Number(n?.n) === LAPSING ? true : undefined;
    }, 60_000);
    const recordedMs = performance.now() - changedAt;
    for (const l of lapsing) await eventually(async () => ((await member(l.item)) ? undefined : true), 60_000);
    const membersGoneMs = performance.now() - changedAt;
    // In the same sweep as the resume.
    expect(sweeps.slice(from)).toContainEqual({ suspended: lapsingIds, resumed: [resuming.accountId] });
    expect(await member(ownItem)).toBeDefined();

    // Their targets are no longer requested (a poll in flight at the change may still land: count from an interval later).
    await sleep(INTERVAL_MS * 3);
    const polled = await Promise.all(lapsing.map((l) => hits(stack.sim, 'pf_03', l.event)));
    // Their webhook deliveries park: one notification each, as a poll in flight at the lapse would write it.
    const parked = await Promise.all(lapsing.map((l) => writeNotification(stack.db, l.account.accountId, l.item)));
    await eventually(async () => ((await Promise.all(parked.map(delivery))).every((d) => d.parked_at !== null) ? true : undefined), 60_000);
    const parkedMs = performance.now() - changedAt;
    await sleep(INTERVAL_MS * 6);
    expect(await Promise.all(lapsing.map((l) => hits(stack.sim, 'pf_03', l.event)))).toEqual(polled);
    const parkedRows = await Promise.all(parked.map(delivery));
    expect(parkedRows.map((d) => d.state)).toEqual(parked.map(() => 'pending'));
    const parkedIds = new Set(parkedRows.map((d) => d.message_id as string));
    expect(receiver.received.filter((r) => parkedIds.has(String(r.headers['webhook-id'])))).toEqual([]);

    // The resumed account: its state is recorded; what Temporal must be told waits, retried.
    expect((await stack.db('account_service').where({ account_id: resuming.accountId }).first()).served).toBe(true);
    await eventually(async () => ((await stack.db('account_service_signals').where({ account_id: resuming.accountId }).first())?.attempts >= 2 ? true : undefined), 30_000);
    expect(await stack.db('account_service_signals').where({ account_id: resuming.accountId }).first()).toMatchObject({ served: true, last_error: expect.any(String) });
    expect(await resumeSignals(workflowId)).toBe(0);
    expect((await tracking.query(trackStatusQuery)).paused).toBe(true);
    const trackedFetches = await hits(stack.sim, 'marketplace_a', tracked);

    // Temporal reachable again: the relay's retry delivers the wake-up, once, and the tracking scrapes again.
    await gate.open();
    const openedAt = performance.now();
    await eventually(async () => ((await resumeSignals(workflowId)) >= 1 ? true : undefined), 60_000);
    const deliveredMs = performance.now() - openedAt;
    await eventually(async () => ((await stack.db('account_service_signals').where({ account_id: resuming.accountId }).first()) ? undefined : true), 30_000);
    await eventually(async () => ((await hits(stack.sim, 'marketplace_a', tracked)) > trackedFetches ? true : undefined), 30_000);
    await sleep(3_000);
    expect(await resumeSignals(workflowId)).toBe(1);
    expect(await stack.db('account_service_signals').count<{ n: number }[]>('* as n').first()).toEqual({ n: 0 });

    process.stdout.write(
      `temporal outage sweep: ten lapses recorded ${Math.round(recordedMs)} ms, members gone ${Math.round(membersGoneMs)} ms, deliveries parked ${Math.round(parkedMs)} ms after the change; the resume delivered ${Math.round(deliveredMs)} ms after Temporal was back\n`,
    );
    expect(membersGoneMs).toBeLessThan(60_000);
    expect(parkedMs).toBeLessThan(60_000);
  });
});
