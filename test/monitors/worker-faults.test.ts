// Fault tests for the monitors with the production worker entry point (`npm run worker`, which
// also runs the relays) in a child process: SIGKILLed mid-run and started again, the shard
// pollers' activities are taken over after their heartbeat timeout and resume from the
// baselines in the database: nothing is lost and nothing is written twice.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { call } from '../support/harness.ts';
import { baselined, eventually, notificationsOf, polledAgain, useMonitorStack } from '../support/monitor-stack.ts';
import { putEvent, section } from '../support/scrape-stack.ts';

const stack = useMonitorStack({ intervalMs: 300, worker: 'child-process' });

const stalls = (stock: number) => ({ region: 'fr', sections: [section('Stalls', 80, stock)] });

// A killed worker's shard polls are taken over after their 15 s heartbeat time-out: the default wait, with room for a loaded machine.
const ready = (id: number) => baselined(stack, id);

async function changes(accountId: number, n: number, event: string) {
  const rows = await eventually(async () => {
    const all = await notificationsOf(stack, accountId);
    return all.length >= n ? all : undefined;
  });
  // Long enough for a duplicate to show if one were coming: 1.5 s, and two polls of the event after it.
  await Promise.all([new Promise((r) => setTimeout(r, 1_500)), polledAgain(stack, 'pf_03', event)]);
  expect(await notificationsOf(stack, accountId)).toHaveLength(rows.length);
  return rows.map((r) => [r.payload.before, r.payload.after].map((v) => (v as { stock: number }).stock));
}

// Real workflows, scrapes and a worker per file: minutes of slack under a full parallel run.
describe('monitors across a killed worker', { timeout: 120_000 }, () => {
  it('changes made while the worker is dead are notified once after it restarts', async () => {
    const acct = await stack.account();
    const event = `https://pf03.example/e/kill-${randomUUID().slice(0, 8)}`;
    await putEvent(stack.sim, 'pf_03', event, stalls(1));
    const res = await call(stack.gateway.url, 'POST', '/watchlist', { key: acct.key, body: { website: 'pf_03', event, region: 'fr' } });
    expect(res.status).toBe(201);
    await ready(res.body.id);
    await putEvent(stack.sim, 'pf_03', event, stalls(2));
    expect(await changes(acct.accountId, 1, event)).toEqual([[1, 2]]);

    // SIGKILL: no graceful shutdown, activities and workflow tasks in flight are abandoned. The
    // change is made once the worker is dead (not after a guess at how long killing it takes).
    await stack.restartWorker({ downMs: 1_000, whileDown: () => putEvent(stack.sim, 'pf_03', event, stalls(6)) });
    expect(await changes(acct.accountId, 2, event)).toEqual([
      [1, 2],
      [2, 6],
    ]);
  });

  it('an item created while the worker is dead is monitored once it is back', async () => {
    const acct = await stack.account();
    const event = `https://pf03.example/e/kill-${randomUUID().slice(0, 8)}`;
    await putEvent(stack.sim, 'pf_03', event, stalls(1));
    let res: Awaited<ReturnType<typeof call>> | undefined;
    await stack.restartWorker({
      downMs: 1_500,
      // The relay is down with the worker (dead by now): the change row waits in watchlist_changes.
      whileDown: async () => {
        res = await call(stack.gateway.url, 'POST', '/watchlist', { key: acct.key, body: { website: 'pf_03', event, region: 'fr' } });
      },
    });
    expect(res!.status).toBe(201);
    await ready(res!.body.id);
    await putEvent(stack.sim, 'pf_03', event, stalls(3));
    expect(await changes(acct.accountId, 1, event)).toEqual([[1, 3]]);
  });
});
