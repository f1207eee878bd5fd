// The whole product path with real WebSocket clients: an item created through the Watchlist API,
// the shard poller polling its target, the simulator's inventory changed through its
// control API, and the notification delivered by a real stream node to the account's `ws`
// clients, with watchlist changes, PATCH without reconnecting, delete, and account isolation.
import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { STREAM_PATH } from '../../src/stream/protocol.ts';
import { startStreamNode, type StreamNode } from '../../src/stream/start.ts';
import { monitorWorkflowId } from '../../workflows/watchlist-monitor.ts';
import { call, testConfig } from '../support/harness.ts';
import { eventually, polledAgain, useMonitorStack } from '../support/monitor-stack.ts';
import { putEvent, section } from '../support/scrape-stack.ts';
import { append, checkSchemas, connect, sleep, STREAM_ENV, type Client } from '../stream/helpers.ts';

const stack = useMonitorStack({ intervalMs: 300 });
let node: StreamNode;
let url: string;

beforeAll(async () => {
  const config = testConfig({ ...STREAM_ENV, DATABASE_URL: stack.databaseUrl });
  node = await startStreamNode({ config, db: stack.db, connectionString: stack.databaseUrl, log: createLogger('silent'), registry: new Registry() });
  url = `ws://127.0.0.1:${node.server.port}${STREAM_PATH}`;
}, 60_000);
afterAll(() => node?.close());

const stalls = (stock: number, price = 80) => ({ region: 'fr', sections: [section('Stalls', price, stock)] });

async function newEvent(stock: number, price = 80): Promise<string> {
  const event = `https://pf03.example/e/ws-${randomUUID().slice(0, 8)}`;
  await putEvent(stack.sim, 'pf_03', event, stalls(stock, price));
  return event;
}

/** Until the pollers hold config version `minVersion` of the item and, when active, a baseline. */
async function ready(id: number, minVersion = 0): Promise<void> {
  await eventually(async () => {
    const m = await stack.db('monitor_members').where({ item_id: id }).first('version', 'baseline_snapshot_id');
    if (!m) {
      // Paused: no member row; wait until the pause itself has been applied.
      const item = await stack.db('watchlist_items').where({ id }).first('task_active');
      const cursor = await stack.db('relay_cursors').where({ name: 'monitor-members' }).first('last_id');
      return item && !item.task_active && Number(cursor?.last_id ?? 0) >= minVersion ? true : undefined;
    }
    return Number(m.version) >= minVersion && m.baseline_snapshot_id !== null ? true : undefined;
  });
}

const notifications = (c: Client, itemId: number) => c.rows().filter((m) => m.type === 'notification' && m.item_id === itemId);

/** Long enough for a notification to have come if one were coming: 1.5 s, and two polls of the event since. */
const quiet = (event: string) => Promise.all([sleep(1_500), polledAgain(stack, 'pf_03', event)]);

// Real workflows, scrapes and a worker per file: minutes of slack under a full parallel run.
describe('monitors to WebSocket clients', { timeout: 120_000 }, () => {
  it('a simulator change reaches every connection of the account, and only that account', async () => {
    const acct = await stack.account();
    const other = await stack.account();
    const [a1, a2, b] = await Promise.all([connect(url, { key: acct.key }), connect(url, { key: acct.key }), connect(url, { key: other.key })]);
    const event = await newEvent(2);
    const created = await call(stack.gateway.url, 'POST', '/watchlist', { key: acct.key, body: { website: 'pf_03', event, region: 'fr' } });
    expect(created.status).toBe(201);
    const id = created.body.id as number;
    // The create itself arrives as a watchlist message, at once.
    await a1.until((c) => c.rows().some((m) => m.type === 'watchlist' && m.op === 'create' && m.item_id === id), 20_000, 'watchlist create');
    await ready(id);
    const changed = performance.now();
    await putEvent(stack.sim, 'pf_03', event, stalls(5));
    for (const c of [a1, a2]) await c.until((x) => notifications(x, id).length === 1, 30_000, 'notification');
    const latencyMs = performance.now() - changed;
    const [n] = notifications(a1, id);
    expect(n).toMatchObject({ type: 'notification', item_id: id, change_type: 'stock_increase', platform: 'pf_03', event, region: 'fr', section: 'Stalls', before: { stock: 2 }, after: { stock: 5 } });
    expect(notifications(a2, id)).toEqual([n]);
    // One interval (300 ms ± jitter) plus a scrape, an evaluation and the fan-out: well under a
    // second here; the bound leaves room for a loaded machine.
    expect(latencyMs).toBeLessThan(10_000);
    // The other account's connection is sent a row of its own written after the notification:
    // once it has it, the node has handed out the log past the notification, in log order.
    const [marker] = await append(stack.db, other.accountId, 1);
    await b.until((x) => x.ids().includes(marker!), 20_000, 'the marker row');
    expect(b.rows().filter((m) => m.id !== marker)).toEqual([]);
    for (const c of [a1, a2, b]) checkSchemas(c.messages);
    for (const c of [a1, a2, b]) c.close();
  });

  it('PATCH of change_type takes effect on an open connection; pause, mute and delete stop delivery', async () => {
    const acct = await stack.account();
    const ws = await connect(url, { key: acct.key });
    const event = await newEvent(2, 100);
    const created = await call(stack.gateway.url, 'POST', '/watchlist', { key: acct.key, body: { website: 'pf_03', event, region: 'fr' } });
    const id = created.body.id as number;
    await ready(id);
    // Another account's item on the event keeps its target polled while this one is paused and
    // after it is deleted, so the quiet checks below come after polls that would have notified.
    const canaryOwner = await stack.account();
    const canary = await call(stack.gateway.url, 'POST', '/watchlist', { key: canaryOwner.key, body: { website: 'pf_03', event, region: 'fr' } });
    expect(canary.status).toBe(201);
    await ready(canary.body.id as number);

    const patch = async (body: Record<string, unknown>) => {
      const res = await call(stack.gateway.url, 'PATCH', `/watchlist/${id}`, { key: acct.key, body });
      expect(res.status).toBe(200);
      const row = await stack.db('watchlist_changes').where({ item_id: id }).max('id as max').first();
      await ready(id, Number(row?.max));
    };

    await patch({ change_type: 'price_decrease' });
    await putEvent(stack.sim, 'pf_03', event, stalls(4, 90));
    await ws.until((c) => notifications(c, id).length === 1, 30_000, 'price_decrease');
    expect(notifications(ws, id)[0]).toMatchObject({ change_type: 'price_decrease', before: { min_price: 100 }, after: { min_price: 90 } });

    await patch({ muted_until: new Date(Date.now() + 3_600_000).toISOString() });
    await putEvent(stack.sim, 'pf_03', event, stalls(4, 70));
    await quiet(event);
    expect(notifications(ws, id)).toHaveLength(1);

    await patch({ muted_until: null, task_active: false });
    await putEvent(stack.sim, 'pf_03', event, stalls(4, 60));
    await quiet(event);
    expect(notifications(ws, id)).toHaveLength(1);

    await patch({ task_active: true });
    await putEvent(stack.sim, 'pf_03', event, stalls(4, 50));
    await ws.until((c) => notifications(c, id).length === 2, 30_000, 'after resume');
    expect(notifications(ws, id)[1]).toMatchObject({ before: { min_price: 60 }, after: { min_price: 50 } });

    expect((await call(stack.gateway.url, 'DELETE', `/watchlist/${id}`, { key: acct.key })).status).toBe(204);
    await ws.until((c) => c.rows().some((m) => m.type === 'watchlist' && m.op === 'delete' && m.item_id === id), 20_000, 'delete message');
    await eventually(async () => ((await stack.client.workflow.getHandle(monitorWorkflowId(id)).describe()).status.name === 'COMPLETED' ? true : undefined));
    await putEvent(stack.sim, 'pf_03', event, stalls(4, 40));
    await quiet(event);
    expect(notifications(ws, id)).toHaveLength(2);
    // Every watchlist change of the item came through too, in log order.
    expect(ws.rows().filter((m) => m.type === 'watchlist').map((m) => m.op)).toEqual(['create', 'update', 'update', 'update', 'update', 'delete']);
    const ids = ws.ids();
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    checkSchemas(ws.messages);
    ws.close();
  });
});
