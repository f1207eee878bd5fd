// cooldown_seconds end to end (issue 24): items created through the Watchlist API, stock set
// exactly through the simulator, the production worker entry as a child process SIGKILLed while
// a change is held. The ground truth is the script each test writes down before it runs; the
// database's cooldown rows are read only to know when a poll has seen a step.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { call } from '../support/harness.ts';
import { baselined, eventually, notificationsOf, polledAgain, useMonitorStack, type MonitorStack } from '../support/monitor-stack.ts';
import { putEvent, section } from '../support/scrape-stack.ts';

const stack: MonitorStack = useMonitorStack({ intervalMs: 300, worker: 'child-process' });

const COOLDOWN_S = 5;

async function newItem(acct: { key: string }, event: string): Promise<number> {
  const res = await call(stack.gateway.url, 'POST', '/watchlist', { key: acct.key, body: { website: 'pf_03', event, region: 'fr', cooldown_seconds: COOLDOWN_S } });
  expect(res.status).toBe(201);
  expect(res.body.cooldown_seconds).toBe(COOLDOWN_S);
  const id = res.body.id as number;
  await baselined(stack, id, 60_000);
  return id;
}

const stalls = (stock: number) => ({ region: 'fr', sections: [section('Stalls', 80, stock)] });

async function held(itemId: number): Promise<void> {
  await eventually(async () => ((await stack.db('monitor_cooldowns').where({ item_id: itemId, held: true }).first()) ? true : undefined), 30_000);
}

function brief(rows: Awaited<ReturnType<typeof notificationsOf>>) {
  return rows.map((r) => [r.payload.change_type, (r.payload.before as { stock: number }).stock, (r.payload.after as { stock: number }).stock]);
}

describe('cooldown_seconds', { timeout: 150_000 }, () => {
  it('holds the changes after a notification and sends one at the end, across a worker SIGKILL in the middle', async () => {
    const acct = await stack.account();
    const event = `https://pf03.example/e/cool-${randomUUID().slice(0, 8)}`;
    await putEvent(stack.sim, 'pf_03', event, stalls(10));
    const id = await newItem(acct, event);
    // The script: 10 -> 12 notifies; 14 is held; the worker dies; 16 is set while it is down;
    // one notification 12 -> 16 after the cooldown, none before it, none twice.
    await putEvent(stack.sim, 'pf_03', event, stalls(12));
    const [first] = await eventually(async () => {
      const rows = (await notificationsOf(stack, acct.accountId)).filter((r) => r.itemId === id);
      return rows.length ? rows : undefined;
    });
    await putEvent(stack.sim, 'pf_03', event, stalls(14));
    await held(id);
    await stack.restartWorker({ downMs: 500, whileDown: () => putEvent(stack.sim, 'pf_03', event, stalls(16)) });
    const rows = await eventually(async () => {
      const mine = (await notificationsOf(stack, acct.accountId)).filter((r) => r.itemId === id);
      return mine.length >= 2 ? mine : undefined;
    }, 90_000);
    // Two polls more, then the log is what the script said, and nothing is left held.
    await polledAgain(stack, 'pf_03', event);
    await polledAgain(stack, 'pf_03', event);
    const mine = (await notificationsOf(stack, acct.accountId)).filter((r) => r.itemId === id);
    expect(mine).toHaveLength(rows.length);
    expect(brief(mine)).toEqual([
      ['stock_increase', 10, 12],
      ['stock_increase', 12, 16],
    ]);
    const gap = Date.parse(mine[1]!.payload.detected_at as string) - Date.parse(first!.payload.detected_at as string);
    expect(gap).toBeGreaterThanOrEqual(COOLDOWN_S * 1000);
    expect(await stack.db('monitor_cooldowns').where({ item_id: id, held: true }).first()).toBeUndefined();
  });

  it('a cart hold released within the cooldown (the held rise gone again) sends nothing more', async () => {
    const acct = await stack.account();
    const event = `https://pf03.example/e/cart-${randomUUID().slice(0, 8)}`;
    await putEvent(stack.sim, 'pf_03', event, stalls(10));
    const id = await newItem(acct, event);
    await putEvent(stack.sim, 'pf_03', event, stalls(12));
    await eventually(async () => ((await notificationsOf(stack, acct.accountId)).some((r) => r.itemId === id) ? true : undefined));
    await putEvent(stack.sim, 'pf_03', event, stalls(8));
    await polledAgain(stack, 'pf_03', event);
    await putEvent(stack.sim, 'pf_03', event, stalls(12)); // held, detected from 8
    await held(id);
    await putEvent(stack.sim, 'pf_03', event, stalls(8)); // and gone again before the end
    // Past the cooldown's end and its release poll: the hold ends without a notification.
    await eventually(async () => ((await stack.db('monitor_cooldowns').where({ item_id: id }).first()) ? undefined : true), 30_000);
    await polledAgain(stack, 'pf_03', event);
    expect(brief((await notificationsOf(stack, acct.accountId)).filter((r) => r.itemId === id))).toEqual([['stock_increase', 10, 12]]);
  });

  it('a rise held after a fall is sent at the end even below the state last notified (issue 38: 10, then 2, then 5)', async () => {
    const acct = await stack.account();
    const event = `https://pf03.example/e/fall-rise-${randomUUID().slice(0, 8)}`;
    await putEvent(stack.sim, 'pf_03', event, stalls(4));
    const id = await newItem(acct, event);
    await putEvent(stack.sim, 'pf_03', event, stalls(10));
    await eventually(async () => ((await notificationsOf(stack, acct.accountId)).some((r) => r.itemId === id) ? true : undefined));
    await putEvent(stack.sim, 'pf_03', event, stalls(2));
    await polledAgain(stack, 'pf_03', event);
    await putEvent(stack.sim, 'pf_03', event, stalls(5)); // held, detected from 2
    await held(id);
    const rows = await eventually(async () => {
      const mine = (await notificationsOf(stack, acct.accountId)).filter((r) => r.itemId === id);
      return mine.length >= 2 ? mine : undefined;
    }, 30_000);
    await polledAgain(stack, 'pf_03', event);
    await polledAgain(stack, 'pf_03', event);
    const mine = (await notificationsOf(stack, acct.accountId)).filter((r) => r.itemId === id);
    expect(mine).toHaveLength(rows.length);
    expect(brief(mine)).toEqual([
      ['stock_increase', 4, 10],
      ['stock_increase', 2, 5],
    ]);
  });
});
