// Only served accounts consume (issue 25): the whole path, all real (worker, Temporal, PostgreSQL,
// the simulator, a stream node and `ws` clients). When an account's subscription stops being
// served, its targets stop being polled unless another served account watches them, nothing is
// notified for it, its stream connections close with 1008 not_served and a reconnect gets 402;
// its watchlist stays readable and editable. Served again, it is polled and notified again, from
// fresh baselines: nothing that changed while it was not served is notified. What was polled is
// read from the simulator's own request counts, not from the service.
import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServiceSignalRelay, type SignalRelay } from '../../src/accounts/service-signals.ts';
import { startServiceSweep, type ServiceSweep } from '../../src/accounts/service-state.ts';
import { createLogger } from '../../src/logger.ts';
import { memberServiceHooks, memberServiceSignals } from '../../src/monitors/membership.ts';
import { STREAM_PATH } from '../../src/stream/protocol.ts';
import { startStreamNode, type StreamNode } from '../../src/stream/start.ts';
import { call, testConfig } from '../support/harness.ts';
import { baselined, eventually, notificationsOf, notPolled, polledAgain, useMonitorStack } from '../support/monitor-stack.ts';
import { putEvent, section } from '../support/scrape-stack.ts';
import { hits } from '../support/simulator.ts';
import { connect, refusal, sleep, STREAM_ENV } from '../stream/helpers.ts';

const INTERVAL_MS = 300;
const stack = useMonitorStack({ intervalMs: INTERVAL_MS });
let node: StreamNode;
let url: string;
let sweep: ServiceSweep;
let signals: SignalRelay;

beforeAll(async () => {
  const config = testConfig({ ...STREAM_ENV, DATABASE_URL: stack.databaseUrl });
  node = await startStreamNode({ config, db: stack.db, connectionString: stack.databaseUrl, log: createLogger('silent'), registry: new Registry(), keyRecheckMs: 500 });
  url = `ws://127.0.0.1:${node.server.port}${STREAM_PATH}`;
  // As the worker runs it (temporal/runtime.ts), on a short period.
  const relays = { client: stack.client, taskQueue: stack.config.MONITOR_TASK_QUEUE, shardsPerPlatform: stack.config.MONITOR_SHARDS_PER_PLATFORM };
  signals = startServiceSignalRelay({ db: stack.db, signals: [memberServiceSignals({ ...relays, db: stack.db })], log: createLogger('silent') });
  sweep = startServiceSweep({ db: stack.db, hooks: [memberServiceHooks(relays)], everyMs: 250, log: createLogger('silent'), onChange: () => signals.kick() });
}, 60_000);
afterAll(async () => {
  await sweep?.stop();
  await signals?.stop();
  await node?.close();
});

const stalls = (stock: number) => ({ region: 'fr', sections: [section('Stalls', 80, stock)] });

async function newEvent(stock: number): Promise<string> {
  const event = `https://pf03.example/e/lapse-${randomUUID().slice(0, 8)}`;
  await putEvent(stack.sim, 'pf_03', event, stalls(stock));
  return event;
}

async function watch(key: string, event: string): Promise<number> {
  const res = await call(stack.gateway.url, 'POST', '/watchlist', { key, body: { website: 'pf_03', event, region: 'fr' } });
  expect(res.status).toBe(201);
  const id = res.body.id as number;
  await baselined(stack, id);
  return id;
}

const setStatus = (accountId: number, status: string) => stack.db('subscriptions').where({ account_id: accountId }).update({ status, updated_at: new Date() });

describe('an account that is not served consumes nothing', { timeout: 180_000 }, () => {
  it('stops its polls, notifications and stream; keeps its watchlist; resumes from fresh baselines', async () => {
    const keeper = await stack.account();
    const lapsing = await stack.account();
    const shared = await newEvent(2);
    const alone = await newEvent(2);
    const keeperItem = await watch(keeper.key, shared);
    const sharedItem = await watch(lapsing.key, shared);
    const aloneItem = await watch(lapsing.key, alone);
    const ws = await connect(url, { key: lapsing.key });

    // --- The subscription is canceled.
    const canceledAt = performance.now();
    await setStatus(lapsing.accountId, 'canceled');
    await notPolled(stack, aloneItem, 60_000);
    await notPolled(stack, sharedItem, 60_000);
    const stoppedMs = performance.now() - canceledAt;
    const closed = await Promise.race([ws.closed, sleep(60_000).then(() => null)]);
    expect(closed).toEqual({ code: 1008, reason: 'not_served' });
    const closedMs = performance.now() - canceledAt;
    const again = await refusal(url, { apikey: lapsing.key });
    expect(again.status).toBe(402);
    expect(again.body).toEqual({ error: { code: 'no_subscription', message: expect.any(String) } });

    // Its own target is no longer requested at all; the shared one still is, for the keeper.
    // A poll in flight when its members left may still land: count from after one interval more.
    await sleep(INTERVAL_MS * 3);
    const aloneFrom = await hits(stack.sim, 'pf_03', alone);
    await putEvent(stack.sim, 'pf_03', shared, stalls(5));
    await putEvent(stack.sim, 'pf_03', alone, stalls(5));
    await eventually(async () => ((await notificationsOf(stack, keeper.accountId)).some((n) => n.itemId === keeperItem) ? true : undefined), 30_000);
    await polledAgain(stack, 'pf_03', shared, 3);
    await sleep(INTERVAL_MS * 5);
    expect(await hits(stack.sim, 'pf_03', alone)).toBe(aloneFrom);
    expect(await notificationsOf(stack, lapsing.accountId)).toEqual([]);

    // The watchlist stays readable and editable, and an edit does not bring the item back.
    const list = await call(stack.gateway.url, 'GET', '/watchlist', { key: lapsing.key });
    expect(list.status).toBe(200);
    const patched = await call(stack.gateway.url, 'PATCH', `/watchlist/${aloneItem}`, { key: lapsing.key, body: { notes: 'still here' } });
    expect(patched.status).toBe(200);
    await eventually(async () => {
      const last = await stack.db('watchlist_changes').where({ item_id: aloneItem }).max('id as max').first();
      const cursor = await stack.db('relay_cursors').where({ name: 'monitor-members' }).first('last_id');
      return Number(cursor?.last_id ?? 0) >= Number(last?.max) ? true : undefined;
    });
    expect(await stack.db('monitor_members').where({ account_id: lapsing.accountId }).select('item_id')).toEqual([]);

    // --- Served again: both items come back, baselined on what is on sale now (5), not on 2.
    const resumedAt = performance.now();
    await setStatus(lapsing.accountId, 'active');
    await baselined(stack, aloneItem, 60_000);
    await baselined(stack, sharedItem, 60_000);
    const resumedMs = performance.now() - resumedAt;
    const back = await connect(url, { key: lapsing.key });
    await polledAgain(stack, 'pf_03', alone, 3);
    expect(await notificationsOf(stack, lapsing.accountId)).toEqual([]);
    await putEvent(stack.sim, 'pf_03', alone, stalls(9));
    await back.until((c) => c.rows().some((m) => m.type === 'notification' && m.item_id === aloneItem), 30_000, 'the notification after resuming');
    const [n] = (await notificationsOf(stack, lapsing.accountId)).map((r) => r.payload);
    expect(n).toMatchObject({ item_id: aloneItem, before: { stock: 5 }, after: { stock: 9 } });
    back.close();
    process.stdout.write(`lapsed account: polls stopped ${Math.round(stoppedMs)} ms and the stream closed ${Math.round(closedMs)} ms after the cancel; resumed in ${Math.round(resumedMs)} ms\n`);
    // The bound is 60 s; here the sweep runs every 250 ms and keys are checked every 500 ms.
    expect(stoppedMs).toBeLessThan(60_000);
    expect(closedMs).toBeLessThan(60_000);
    expect(resumedMs).toBeLessThan(60_000);
  });

  it('an account with no billing account at all has no members and no stream', async () => {
    const none = await stack.account();
    const event = await newEvent(3);
    const item = await watch(none.key, event);
    await stack.db('accounts').where({ id: none.accountId }).update({ customer_id: null });
    await notPolled(stack, item, 60_000);
    // The key's cached principal (KEY_CACHE_TTL_MS) may still say served for a few seconds.
    const refused = await eventually(async () => {
      const r = await refusal(url, { apikey: none.key }).catch(() => undefined);
      return r?.status === 402 ? r : undefined;
    }, 30_000);
    expect(refused.body.error.code).toBe('no_billing_account');
  });
});
