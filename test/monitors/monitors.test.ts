// Watchlist monitors end to end on real parts: items created through the Watchlist API, the
// relays turning them into shard poller members and per-item monitors on the run's Temporal
// server, the shard pollers' activity scraping the simulator, and notifications landing in the
// durable log. The stream's delivery of those rows to WebSocket clients is covered in
// test/stream; here the log is read directly.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { inspectSignal, monitorStatusQuery } from '../../workflows/monitor-messages.ts';
import { monitorWorkflowId } from '../../workflows/watchlist-monitor.ts';
import { parseEventRef, targetKey } from '../../src/platform/event-ref.ts';
import { call } from '../support/harness.ts';
import { baselined, eventually, notificationsOf, notPolled, polledAgain, useMonitorStack, type MonitorStack } from '../support/monitor-stack.ts';
import { hits, putEvent, section } from '../support/scrape-stack.ts';

const stack: MonitorStack = useMonitorStack({ intervalMs: 300 });

/** A pf_03 event nobody else uses, set up on the simulator with these sections. */
async function newEvent(sections: ReturnType<typeof section>[]): Promise<string> {
  const url = `https://pf03.example/e/mon-${randomUUID().slice(0, 8)}`;
  await putEvent(stack.sim, 'pf_03', url, { region: 'fr', sections });
  return url;
}

async function createItem(key: string, body: Record<string, unknown>): Promise<{ id: number; ms: number }> {
  const started = performance.now();
  const res = await call(stack.gateway.url, 'POST', '/watchlist', { key, body: { website: 'pf_03', region: 'fr', ...body } });
  expect(res.status).toBe(201);
  const id = res.body.id as number;
  await baselined(stack, id);
  return { id, ms: performance.now() - started };
}

async function patch(key: string, id: number, body: Record<string, unknown>): Promise<void> {
  const res = await call(stack.gateway.url, 'PATCH', `/watchlist/${id}`, { key, body });
  expect(res.status).toBe(200);
}

function status(id: number) {
  return stack.client.workflow.getHandle(monitorWorkflowId(id)).query(monitorStatusQuery);
}

/** Until the pollers' member row carries the item's newest watchlist change (its config version). */
async function configApplied(id: number): Promise<void> {
  const row = await stack.db('watchlist_changes').where({ item_id: id }).max('id as max').first();
  const max = Number(row?.max);
  await eventually(async () => {
    const m = await stack.db('monitor_members').where({ item_id: id }).first('version');
    return m && Number(m.version) >= max ? true : undefined;
  });
}

/** Until the item's monitor workflow shows the item's newest watchlist change. */
async function monitorApplied(id: number): Promise<void> {
  const row = await stack.db('watchlist_changes').where({ item_id: id }).max('id as max').first();
  const max = Number(row?.max);
  await eventually(async () => {
    const s = await status(id).catch(() => null);
    return s && s.version >= max ? s : undefined;
  });
}

function targetOf(event: string): string {
  const ref = parseEventRef('pf_03', event, 'fr');
  if (!ref.ok) throw new Error(ref.message);
  return targetKey(ref.ref);
}

/**
 * Until the item has `n` notifications; then a little longer, to catch any extra: at least 900 ms
 * and, whatever the machine's speed, until the event's target has been polled again after them.
 */
async function notificationsFor(accountId: number, itemId: number, n: number, event: string) {
  const rows = await eventually(async () => {
    const all = (await notificationsOf(stack, accountId)).filter((r) => r.itemId === itemId);
    return all.length >= n ? all : undefined;
  });
  await Promise.all([new Promise((r) => setTimeout(r, 900)), polledAgain(stack, 'pf_03', event)]);
  const after = (await notificationsOf(stack, accountId)).filter((r) => r.itemId === itemId);
  expect(after).toHaveLength(rows.length);
  return after.map((r) => r.payload);
}

/** Waits three poll intervals: long enough for a change to have been seen if it were to be. */
const quiet = () => new Promise((r) => setTimeout(r, 1_500));

/**
 * No notification for the item after a change to `event`: checked once the quiet time has passed
 * and the event's target has been polled since the change (so a loaded machine, polling late,
 * cannot make the check pass for want of a poll). The target must still be polled: an item that
 * left the pollers needs another item on its event to keep it polled (canary).
 */
async function noNotifications(accountId: number, itemId: number, event: string): Promise<void> {
  await Promise.all([quiet(), polledAgain(stack, 'pf_03', event)]);
  expect((await notificationsOf(stack, accountId)).filter((r) => r.itemId === itemId)).toHaveLength(0);
}

// Real workflows, scrapes and a worker per file: minutes of slack under a full parallel run.
describe('watchlist monitors', { timeout: 120_000 }, () => {
  it('notifies a stock increase with the item, the event and the before and after values', async () => {
    const acct = await stack.account();
    const event = await newEvent([section('Stalls', 80, 2)]);
    const { id } = await createItem(acct.key, { event });
    await putEvent(stack.sim, 'pf_03', event, { region: 'fr', sections: [section('Stalls', 80, 5)] });
    const [n] = await notificationsFor(acct.accountId, id, 1, event);
    expect(n).toMatchObject({
      item_id: id,
      change_type: 'stock_increase',
      platform: 'pf_03',
      event,
      region: 'fr',
      section: 'Stalls',
      before: { stock: 2, min_price: 80, avg_price: 80 },
      after: { stock: 5, min_price: 80, avg_price: 80 },
    });
    expect(Date.parse(n!.detected_at as string)).toBeGreaterThan(Date.now() - 30_000);
  });

  it('price_decrease and price_increase each notify only their direction; null notifies every kind', async () => {
    const acct = await stack.account();
    const event = await newEvent([section('Stalls', 100, 3)]);
    const down = await createItem(acct.key, { event, change_type: 'price_decrease' });
    const up = await createItem(acct.key, { event, change_type: 'price_increase' });
    const any = await createItem(acct.key, { event, change_type: null });
    await putEvent(stack.sim, 'pf_03', event, { region: 'fr', sections: [section('Stalls', 80, 3)] });
    expect((await notificationsFor(acct.accountId, down.id, 1, event))[0]).toMatchObject({ change_type: 'price_decrease', before: { min_price: 100 }, after: { min_price: 80 } });
    await putEvent(stack.sim, 'pf_03', event, { region: 'fr', sections: [section('Stalls', 90, 4)] });
    expect((await notificationsFor(acct.accountId, up.id, 1, event))[0]).toMatchObject({ change_type: 'price_increase', before: { min_price: 80 }, after: { min_price: 90 } });
    expect(await notificationsFor(acct.accountId, down.id, 1, event)).toHaveLength(1);
    const kinds = (await notificationsFor(acct.accountId, any.id, 3, event)).map((n) => n.change_type);
    expect(kinds.sort()).toEqual(['price_decrease', 'price_increase', 'stock_increase']);
  });

  it('section and price filters narrow what counts', async () => {
    const acct = await stack.account();
    const event = await newEvent([section('Stalls', 100, 1), section('Circle', 60, 1)]);
    const stalls = await createItem(acct.key, { event, section: 'stalls' });
    const cheap = await createItem(acct.key, { event, max_price_filter: 70 });
    await putEvent(stack.sim, 'pf_03', event, { region: 'fr', sections: [section('Stalls', 100, 1), section('Circle', 60, 4)] });
    expect((await notificationsFor(acct.accountId, cheap.id, 1, event))[0]).toMatchObject({ section: 'Circle', after: { stock: 4 } });
    await noNotifications(acct.accountId, stalls.id, event);
    await putEvent(stack.sim, 'pf_03', event, { region: 'fr', sections: [section('Stalls', 100, 3), section('Circle', 60, 4)] });
    expect((await notificationsFor(acct.accountId, stalls.id, 1, event))[0]).toMatchObject({ section: 'Stalls', after: { stock: 3 } });
    expect(await notificationsFor(acct.accountId, cheap.id, 1, event)).toHaveLength(1);
  });

  it('muted_until suppresses notifications until then; clearing it lets them through', async () => {
    const acct = await stack.account();
    const event = await newEvent([section('Stalls', 80, 1)]);
    const { id } = await createItem(acct.key, { event, muted_until: new Date(Date.now() + 3_600_000).toISOString() });
    await putEvent(stack.sim, 'pf_03', event, { region: 'fr', sections: [section('Stalls', 80, 4)] });
    await noNotifications(acct.accountId, id, event);
    await patch(acct.key, id, { muted_until: null });
    await configApplied(id);
    await putEvent(stack.sim, 'pf_03', event, { region: 'fr', sections: [section('Stalls', 80, 6)] });
    // Measured from the last state seen while muted (4), not from before the mute.
    expect((await notificationsFor(acct.accountId, id, 1, event))[0]).toMatchObject({ before: { stock: 4 }, after: { stock: 6 } });
  });

  it('task_active false pauses the monitor and leaves the poller; true resumes from what is on sale then', async () => {
    const acct = await stack.account();
    const event = await newEvent([section('Stalls', 80, 1)]);
    const { id } = await createItem(acct.key, { event });
    expect((await stack.db('monitor_members').where({ target: targetOf(event) }).pluck('item_id')).map(Number)).toEqual([id]);

    // Another item on the event keeps its target polled while this one is paused.
    const canary = await createItem(acct.key, { event });
    await patch(acct.key, id, { task_active: false });
    await notPolled(stack, id);
    await monitorApplied(id);
    expect((await status(id)).state).toBe('paused');
    await putEvent(stack.sim, 'pf_03', event, { region: 'fr', sections: [section('Stalls', 80, 5)] });
    await noNotifications(acct.accountId, id, event);
    expect(await notificationsFor(acct.accountId, canary.id, 1, event)).toHaveLength(1);

    await patch(acct.key, id, { task_active: true });
    await baselined(stack, id);
    await putEvent(stack.sim, 'pf_03', event, { region: 'fr', sections: [section('Stalls', 80, 7)] });
    expect((await notificationsFor(acct.accountId, id, 1, event))[0]).toMatchObject({ before: { stock: 5 }, after: { stock: 7 } });
  });

  it('a PATCH of change_type takes effect on the running monitor', async () => {
    const acct = await stack.account();
    const event = await newEvent([section('Stalls', 100, 2)]);
    const { id } = await createItem(acct.key, { event });
    await patch(acct.key, id, { change_type: 'price_decrease' });
    await configApplied(id);
    await putEvent(stack.sim, 'pf_03', event, { region: 'fr', sections: [section('Stalls', 90, 5)] });
    const rows = await notificationsFor(acct.accountId, id, 1, event);
    expect(rows.map((r) => r.change_type)).toEqual(['price_decrease']);
  });

  it('delete ends the monitor workflow and the item leaves the pollers', async () => {
    const acct = await stack.account();
    const event = await newEvent([section('Stalls', 80, 1)]);
    const { id } = await createItem(acct.key, { event });
    // Another item on the event keeps its target polled after this one is deleted.
    const canary = await createItem(acct.key, { event });
    expect((await call(stack.gateway.url, 'DELETE', `/watchlist/${id}`, { key: acct.key })).status).toBe(204);
    const handle = stack.client.workflow.getHandle(monitorWorkflowId(id));
    await eventually(async () => ((await handle.describe()).status.name === 'COMPLETED' ? true : undefined));
    await notPolled(stack, id);
    await putEvent(stack.sim, 'pf_03', event, { region: 'fr', sections: [section('Stalls', 80, 9)] });
    await noNotifications(acct.accountId, id, event);
    expect(await notificationsFor(acct.accountId, canary.id, 1, event)).toHaveLength(1);
  });

  it('items on one target share its polls: scrapes follow the interval, not the number of items', async () => {
    const acct = await stack.account();
    const other = await stack.account();
    const event = await newEvent([section('Stalls', 80, 1)]);
    const ids: number[] = [];
    for (let i = 0; i < 6; i++) ids.push((await createItem(i % 2 ? other.key : acct.key, { event })).id);
    const members = await stack.db('monitor_members').where({ target: targetOf(event) }).select('item_id', 'baseline_snapshot_id');
    expect(members.map((m) => Number(m.item_id)).sort()).toEqual([...ids].sort());
    // One baseline for all: the same snapshot row.
    expect(new Set(members.map((m) => m.baseline_snapshot_id)).size).toBe(1);
    const opened = performance.now();
    const before = await hits(stack.sim, 'pf_03', event);
    await new Promise((r) => setTimeout(r, 3_000));
    const scrapes = (await hits(stack.sim, 'pf_03', event)) - before;
    // The scrapes counted happened between the first count's start and the second's end: 3 s,
    // or longer when a loaded machine ran the timer or the counts late.
    const windowS = (performance.now() - opened) / 1000;
    // 3 s at a 300 ms interval (±10% jitter, plus the scrape itself): about 8 on a quiet machine
    // (fewer on a loaded one), never the ~60 of six items polling on their own.
    expect(scrapes).toBeGreaterThanOrEqual(1);
    expect(scrapes).toBeLessThanOrEqual(4 * windowS);
    await putEvent(stack.sim, 'pf_03', event, { region: 'fr', sections: [section('Stalls', 80, 3)] });
    // Each item notifies once, into its own account's log only.
    for (const [i, id] of ids.entries()) {
      const owner = i % 2 ? other : acct;
      expect(await notificationsFor(owner.accountId, id, 1, event)).toHaveLength(1);
      const stranger = i % 2 ? acct : other;
      expect((await notificationsOf(stack, stranger.accountId)).filter((r) => r.itemId === id)).toHaveLength(0);
    }
  });

  it('create, update and delete reach the monitor well within the 60 s contract', async () => {
    const acct = await stack.account();
    const event = await newEvent([section('Stalls', 80, 1)]);
    const created = await createItem(acct.key, { event });
    const started = performance.now();
    await patch(acct.key, created.id, { change_type: 'price_increase' });
    await configApplied(created.id);
    const updateMs = performance.now() - started;
    // The contract is 60 s and the aim 2 s; `npm run bench:monitors` reports the figures. The
    // bounds leave room for a loaded machine and still catch an update that waits for the
    // pollers' half-minute reload instead of reaching them at once.
    expect(created.ms).toBeLessThan(10_000);
    expect(updateMs).toBeLessThan(10_000);
  });
  it('a change that notifies ten items costs none of their monitors a workflow task', async () => {
    const acct = await stack.account();
    const event = await newEvent([section('Stalls', 80, 1)]);
    const ids: number[] = [];
    for (let i = 0; i < 10; i++) ids.push((await createItem(acct.key, { event })).id);
    for (const id of ids) await monitorApplied(id);
    const historyLength = async (id: number) => (await stack.client.workflow.getHandle(monitorWorkflowId(id)).fetchHistory()).events?.length ?? 0;
    const before = await Promise.all(ids.map(historyLength));
    await putEvent(stack.sim, 'pf_03', event, { region: 'fr', sections: [section('Stalls', 80, 4)] });
    for (const id of ids) expect(await notificationsFor(acct.accountId, id, 1, event)).toHaveLength(1);
    expect(await Promise.all(ids.map(historyLength))).toEqual(before);
  });

  it('an inspect signal makes the status query show the last notification, baseline and state', async () => {
    const acct = await stack.account();
    const event = await newEvent([section('Stalls', 80, 1)]);
    const { id } = await createItem(acct.key, { event, muted_until: null });
    await putEvent(stack.sim, 'pf_03', event, { region: 'fr', sections: [section('Stalls', 80, 3)] });
    const [n] = await notificationsFor(acct.accountId, id, 1, event);
    const baseline = await baselined(stack, id);
    await monitorApplied(id);
    const handle = stack.client.workflow.getHandle(monitorWorkflowId(id));
    expect((await handle.query(monitorStatusQuery)).inspection).toBeNull();
    await handle.signal(inspectSignal);
    const s = await eventually(async () => {
      const q = await handle.query(monitorStatusQuery);
      return q.inspection ? q : undefined;
    });
    const [row] = (await notificationsOf(stack, acct.accountId)).filter((r) => r.itemId === id);
    expect(s).toMatchObject({
      state: 'active',
      target: targetOf(event),
      inspection: { baselineSnapshotId: baseline, lastNotification: { id: row!.id, change_type: 'stock_increase', section: 'Stalls' } },
    });
    expect(n!.snapshot_id).toBe(baseline);
    expect(s.poller).toMatch(/^poller:.+:pf_03:\d+$/);
  });
});
