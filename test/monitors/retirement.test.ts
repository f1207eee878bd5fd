// Issue 25: a target whose event answers not-found for MONITOR_RETIRE_AFTER_MS (3 s here) is
// retired, on the whole product path: the production worker (child process: pollers, relays and
// the webhook dispatcher), a stream node with a real WebSocket client, a loopback webhook
// receiver that verifies signatures. Each item on the event is told exactly once, on the stream
// and through its webhook, and the simulator (its own request log) is asked for the event no
// more. A PATCH of an item on it brings it back.
import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { STREAM_PATH } from '../../src/stream/protocol.ts';
import { startStreamNode, type StreamNode } from '../../src/stream/start.ts';
import { createWebhook, OPEN_ENV } from '../apis/webhooks/helpers.ts';
import { simRequests } from '../support/fairness.ts';
import { call, eventually, testConfig } from '../support/harness.ts';
import { baselined, useMonitorStack } from '../support/monitor-stack.ts';
import { putEvent, section } from '../support/scrape-stack.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';
import { checkSchemas, connect, sleep, STREAM_ENV } from '../stream/helpers.ts';

const RETIRE_AFTER_MS = 3_000;
const stack = useMonitorStack({
  intervalMs: 300,
  worker: 'child-process',
  env: { MONITOR_RETIRE_AFTER_MS: String(RETIRE_AFTER_MS), ...OPEN_ENV },
  gatewayEnv: OPEN_ENV,
});
let node: StreamNode;
let url: string;
let receiver: Receiver;

beforeAll(async () => {
  const config = testConfig({ ...STREAM_ENV, DATABASE_URL: stack.databaseUrl });
  node = await startStreamNode({ config, db: stack.db, connectionString: stack.databaseUrl, log: createLogger('silent'), registry: new Registry() });
  url = `ws://127.0.0.1:${node.server.port}${STREAM_PATH}`;
  receiver = await startReceiver();
}, 60_000);
afterAll(async () => {
  await node?.close();
  await receiver?.close();
});

const key = (event: string) => event.split('/').pop()!;

describe('a target whose event is gone', { timeout: 120_000 }, () => {
  it('is retired: each item told once on the stream and its webhook, and no longer polled; a PATCH brings it back', async () => {
    const acct = await stack.account();
    const client = await connect(url, { key: acct.key });
    const hook = await createWebhook(stack.gateway.url, acct.key, { url: receiver.url });
    receiver.secrets = [hook.secret as string];
    const event = `https://pf03.example/e/gone-${randomUUID().slice(0, 8)}`;
    await putEvent(stack.sim, 'pf_03', event, { region: 'fr', sections: [section('Stalls', 80, 2)] });
    const body = { website: 'pf_03', event, region: 'fr' };
    const withHook = await call(stack.gateway.url, 'POST', '/watchlist', { key: acct.key, body: { ...body, webhook_setting_id: hook.id } });
    const plain = await call(stack.gateway.url, 'POST', '/watchlist', { key: acct.key, body: { ...body, max_price_filter: 500 } });
    expect([withHook.status, plain.status]).toEqual([201, 201]);
    const ids = [withHook.body.id as number, plain.body.id as number];
    for (const id of ids) await baselined(stack, id);

    const goneAt = Date.now();
    await putEvent(stack.sim, 'pf_03', event, { region: 'fr', behaviour: 'not_found' });
    const retired = (id: number) => client.rows().filter((m) => m.type === 'target_retired' && m.item_id === id);
    await client.until(() => ids.every((id) => retired(id).length > 0), 60_000, 'target_retired on the stream');
    const tellAt = Date.now();
    // The webhook gets its item's message.
    await eventually(async () => (receiver.received.length > 0 ? true : undefined), 30_000);

    // Quiet: long enough for a second message, or a poll, to have come (a 300 ms interval, and
    // the longest back-off a failing target reaches, 16 intervals, is under 5 s).
    await sleep(6_000);
    for (const id of ids) expect(retired(id)).toHaveLength(1);
    checkSchemas(client.rows());
    const [m] = retired(ids[0]!);
    expect(m).toMatchObject({ type: 'target_retired', item_id: ids[0], platform: 'pf_03', event, region: 'fr', reason: 'not_found' });
    const since = Date.parse(String(m!.not_found_since));
    const at = Date.parse(String(m!.retired_at));
    expect(since).toBeGreaterThanOrEqual(goneAt - 1_000);
    expect(at - since).toBeGreaterThanOrEqual(RETIRE_AFTER_MS);

    // Exactly one delivery, of the item that names the webhook, signed, carrying the stream's message.
    expect(receiver.received).toHaveLength(1);
    const [d] = receiver.received;
    expect(d!.verified).toEqual([true]);
    const delivered = JSON.parse(d!.body) as { type: string; data: Record<string, unknown> };
    expect(delivered.type).toBe('target_retired');
    expect(delivered.data).toEqual(m);

    // The simulator was not asked for the event after the retirement (a poll already sent when it
    // was decided may land just after retired_at, none later).
    const asked = (await simRequests(stack.sim.url, 'pf_03', goneAt)).filter((r) => r.key === key(event));
    expect(asked.length).toBeGreaterThan(1);
    expect(asked.filter((r) => r.at > at + 1_000), JSON.stringify({ at, asked })).toEqual([]);
    expect(asked.filter((r) => r.at > tellAt)).toEqual([]);

    // Back on sale, and the client updates one item: the event is checked again.
    await putEvent(stack.sim, 'pf_03', event, { region: 'fr', sections: [section('Stalls', 80, 2)] });
    const patchedAt = Date.now();
    expect((await call(stack.gateway.url, 'PATCH', `/watchlist/${ids[1]}`, { key: acct.key, body: { max_price_filter: 400 } })).status).toBe(200);
    await eventually(async () => ((await simRequests(stack.sim.url, 'pf_03', patchedAt)).filter((r) => r.key === key(event)).length >= 2 ? true : undefined), 30_000);
    await eventually(async () => ((await stack.db('monitor_target_status').where('target', 'like', `%${key(event)}`).first()) ? undefined : true), 30_000);
    for (const id of ids) expect(retired(id)).toHaveLength(1);
    client.close();
  });

  it('a platform answering not-found for every event for longer than the retirement time retires nothing: its items are told once it fails and once it recovers, and polled on', async () => {
    // The trial: eight pf_07 events answer 404 together for several retirement times, then come back.
    const acct = await stack.account();
    const client = await connect(url, { key: acct.key });
    const run = 100_000 + Math.floor(Math.random() * 800_000);
    const events = Array.from({ length: 8 }, (_, i) => `https://www.pf07.example/event/wide-tour-${run + i}`);
    const onSale = { region: 'us', sections: [section('Block A', 45, 3)] };
    for (const e of events) await putEvent(stack.sim, 'pf_07', e, onSale);
    const ids: number[] = [];
    for (const e of events) {
      const res = await call(stack.gateway.url, 'POST', '/watchlist', { key: acct.key, body: { website: 'pf_07', event: e, region: 'us' } });
      expect(res.status).toBe(201);
      ids.push(res.body.id as number);
    }
    for (const id of ids) await baselined(stack, id);

    const goneAt = Date.now();
    for (const e of events) await putEvent(stack.sim, 'pf_07', e, { region: 'us', behaviour: 'not_found' });
    const incident = (id: number, state: string) => client.rows().filter((m) => m.type === 'platform_incident' && m.item_id === id && m.state === state);
    await client.until(() => ids.every((id) => incident(id, 'failing').length > 0), 30_000, 'platform_incident failing on the stream');
    // Four retirement times of 404s: without the incident each target would have been retired.
    await sleep(Math.max(0, goneAt + 4 * RETIRE_AFTER_MS - Date.now()));
    const recoveredAt = Date.now();
    for (const e of events) await putEvent(stack.sim, 'pf_07', e, onSale);
    await client.until(() => ids.every((id) => incident(id, 'recovered').length > 0), 30_000, 'platform_incident recovered on the stream');
    // Every event was asked for again within 10 s of coming back (none left unpolled).
    await eventually(async () => {
      const asked = await simRequests(stack.sim.url, 'pf_07', recoveredAt);
      return events.every((e) => asked.some((r) => r.key === key(e) && r.at <= recoveredAt + 10_000)) ? true : undefined;
    }, 15_000);
    await sleep(3_000);
    for (const id of ids) {
      expect(incident(id, 'failing'), `item ${id}`).toHaveLength(1);
      expect(incident(id, 'recovered'), `item ${id}`).toHaveLength(1);
    }
    expect(client.rows().filter((m) => m.type === 'target_retired' && ids.includes(m.item_id as number))).toEqual([]);
    expect(await stack.db('monitor_target_status').where('platform', 'pf_07').whereNotNull('retired_at').first()).toBeUndefined();
    const [failing] = incident(ids[0]!, 'failing');
    expect(failing).toMatchObject({ platform: 'pf_07', region: 'us', event: events[0], incident_id: expect.any(Number), ended_at: null });
    checkSchemas(client.rows());
    client.close();
  });
});

