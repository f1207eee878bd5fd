// The shard pollers as operators and platforms see them: found through their search attributes
// (and the monitors through theirs), a shard's chain ending when its last member leaves and
// starting again with the next, a platform's 429 backed off until its Retry-After and shown by
// the ops commands, and the per-platform request budget holding however many targets are due.
// One shard per platform here, so every item of this file lands in the same pf_03 poller.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { listPollers, showMonitor, troubledTargets } from '../../src/ops/monitors.ts';
import { shardPollerId } from '../../src/monitors/shards.ts';
import { pollerSearchAttributes } from '../../temporal/search-attributes.ts';
import { uniqueTaskQueue } from '../support/temporal.ts';
import { call } from '../support/harness.ts';
import { baselined, eventually, notificationsOf, notPolled, useMonitorStack } from '../support/monitor-stack.ts';
import { hits, putEvent, section } from '../support/scrape-stack.ts';

const RPS = 5;
/** A worker's stop lets on-demand scrapes finish for this long; the shard polls do not wait for it. */
const GRACE_MS = 10_000;
const stack = useMonitorStack({ intervalMs: 300, shutdownGraceMs: GRACE_MS, env: { MONITOR_SHARDS_PER_PLATFORM: '1', SCRAPE_RPS_PER_PLATFORM: `pf_03=${RPS}` } });

const stalls = (stock: number, extra: Record<string, unknown> = {}) => ({ region: 'fr', sections: [section('Stalls', 80, stock)], ...extra });

async function watch(key: string, extra: Record<string, unknown> = {}): Promise<{ id: number; event: string }> {
  const event = `https://pf03.example/e/poll-${randomUUID().slice(0, 8)}`;
  await putEvent(stack.sim, 'pf_03', event, stalls(1, extra));
  const res = await call(stack.gateway.url, 'POST', '/watchlist', { key, body: { website: 'pf_03', event, region: 'fr' } });
  expect(res.status).toBe(201);
  return { id: res.body.id as number, event };
}

const remove = async (key: string, id: number) => expect((await call(stack.gateway.url, 'DELETE', `/watchlist/${id}`, { key })).status).toBe(204);

const pollerId = () => shardPollerId(stack.config.MONITOR_TASK_QUEUE, 'pf_03', 0);

// Real workflows, scrapes and a worker per file: minutes of slack under a full parallel run.
describe('shard pollers', { timeout: 120_000 }, () => {
  it('monitors and pollers are found by their search attributes', async () => {
    const acct = await stack.account();
    const { id } = await watch(acct.key);
    await baselined(stack, id);
    const monitors = await eventually(async () => {
      const found = [];
      // Every test file numbers its accounts from 1 in its own database but shares the run's
      // namespace: this file's monitors are the ones on its own task queue.
      const query = `WorkflowType = 'watchlistMonitor' AND AccountId = ${acct.accountId} AND TaskQueue = '${stack.config.MONITOR_TASK_QUEUE}'`;
      for await (const w of stack.client.workflow.list({ query })) found.push(w.workflowId);
      return found.length ? found : undefined;
    });
    expect(monitors).toEqual([`watchlist-monitor:${id}`]);
    const pollers = await eventually(async () => {
      const found = await listPollers(stack.client, { platform: 'pf_03', taskQueue: stack.config.MONITOR_TASK_QUEUE });
      return found.length ? found : undefined;
    });
    expect(pollers).toEqual([expect.objectContaining({ workflow_id: pollerId(), platform: 'pf_03', shard: 0 })]);
    const status = await showMonitor(stack.client, id);
    expect(status).toMatchObject({ state: 'active', poller: pollerId(), inspection: { lastNotification: null } });
    await remove(acct.key, id);
  });

  it('monitors:pollers lists a poller whose worker is down with the reason, instead of failing', async () => {
    const taskQueue = uniqueTaskQueue('no-worker');
    const handle = await stack.client.workflow.start('shardPoller', {
      workflowId: shardPollerId(taskQueue, 'pf_03', 0),
      taskQueue,
      args: [{ platform: 'pf_03', shard: 0, runs: 0, lastRun: null, due: null }],
      typedSearchAttributes: pollerSearchAttributes({ platform: 'pf_03', shard: 0 }),
    });
    try {
      const listed = await eventually(async () => {
        const found = await listPollers(stack.client, { platform: 'pf_03', taskQueue });
        return found.length ? found : undefined;
      });
      expect(listed).toEqual([{ workflow_id: handle.workflowId, unanswered: expect.stringMatching(/worker|DEADLINE_EXCEEDED/i) }]);
    } finally {
      await handle.terminate('test over');
    }
  });

  it('a platform that answers 429 is backed off until its Retry-After, and shows in monitors:blocked', async () => {
    const acct = await stack.account();
    const { id, event } = await watch(acct.key);
    await baselined(stack, id);
    // A Retry-After long enough that the quiet window below ends well inside it, however late on a
    // loaded machine the block is seen.
    await putEvent(stack.sim, 'pf_03', event, stalls(3, { behaviour: 'blocked', blocked_status: 429, retry_after_s: 8 }));
    const blocked = await eventually(async () => (await troubledTargets(stack.db, { platform: 'pf_03' })).find((t) => t.target.endsWith(event.split('/').pop()!)));
    expect(blocked).toMatchObject({ kind: 'blocked', platform: 'pf_03', items: 1 });
    expect(Date.parse(blocked.blocked_until!)).toBeGreaterThan(Date.now() + 1_500);
    // Asked once, then left alone for the Retry-After (at a 300 ms interval it would be ~10 polls).
    const before = await hits(stack.sim, 'pf_03', event);
    await new Promise((r) => setTimeout(r, 2_500));
    expect((await hits(stack.sim, 'pf_03', event)) - before).toBe(0);
    // The platform lets us in again: the change made meanwhile is notified once, the status cleared.
    await putEvent(stack.sim, 'pf_03', event, stalls(3));
    const rows = await eventually(async () => {
      const all = (await notificationsOf(stack, acct.accountId)).filter((r) => r.itemId === id);
      return all.length ? all : undefined;
    });
    expect(rows.map((r) => [(r.payload.before as { stock: number }).stock, (r.payload.after as { stock: number }).stock])).toEqual([[1, 3]]);
    await eventually(async () => ((await troubledTargets(stack.db)).some((t) => t.target.endsWith(event.split('/').pop()!)) ? undefined : true));
    await remove(acct.key, id);
  });

  it('the per-platform budget holds when many targets are due at once', async () => {
    const acct = await stack.account();
    const items: { id: number; event: string }[] = [];
    for (let i = 0; i < 10; i++) items.push(await watch(acct.key));
    for (const { id } of items) await baselined(stack, id, 60_000);
    const count = async () => (await Promise.all(items.map((i) => hits(stack.sim, 'pf_03', i.event)))).reduce((a, b) => a + b, 0);
    const opened = performance.now();
    const before = await count();
    await new Promise((r) => setTimeout(r, 4_000));
    const polls = (await count()) - before;
    // The polls counted happened between the first count's start and the second's end: 4 s, or
    // longer when a loaded machine ran the timer or the counts late.
    const windowS = (performance.now() - opened) / 1000;
    // Ten targets at 300 ms would be ~130 polls in 4 s; the budget allows RPS a second (a
    // burst of one), shared with nothing else in this file now.
    expect(polls).toBeGreaterThanOrEqual(RPS * 4 * 0.6);
    expect(polls).toBeLessThanOrEqual(RPS * windowS + 2);
    for (const { id } of items) await remove(acct.key, id);
  });

  it('a worker stop ends its shard polls at once, paced ones too (none after it), and the next worker polls on', async () => {
    const acct = await stack.account();
    // 60 targets at 5 requests a second: the shard's paced slots reach 12 s ahead.
    const items: { id: number; event: string }[] = [];
    for (let i = 0; i < 60; i++) items.push(await watch(acct.key));
    for (const { id } of items) await baselined(stack, id, 60_000);
    const count = async () => (await Promise.all(items.map((i) => hits(stack.sim, 'pf_03', i.event)))).reduce((a, b) => a + b, 0);
    const stopping = Date.now();
    let stopMs = -1;
    let pollsWhileDown = -1;
    await stack.restartWorker({
      whileDown: async () => {
        stopMs = Date.now() - stopping;
        const before = await count();
        // A loop left running would poll ~7 of these targets meanwhile.
        await new Promise((r) => setTimeout(r, 1_500));
        pollsWhileDown = (await count()) - before;
      },
    });
    expect(pollsWhileDown).toBe(0);
    // Not the grace on-demand scrapes get (GRACE_MS, 10 s), nor the paced slots' 12 s; a stop
    // on a loaded machine has room below both.
    expect(stopMs).toBeLessThan(7_000);
    const [first] = items;
    await putEvent(stack.sim, 'pf_03', first!.event, stalls(4));
    const rows = await eventually(async () => {
      const all = (await notificationsOf(stack, acct.accountId)).filter((r) => r.itemId === first!.id);
      return all.length ? all : undefined;
    });
    expect(rows.map((r) => [(r.payload.before as { stock: number }).stock, (r.payload.after as { stock: number }).stock])).toEqual([[1, 4]]);
    for (const { id } of items) await remove(acct.key, id);
  });

  it("a shard's chain ends when its last member leaves and starts again with the next", async () => {
    const acct = await stack.account();
    const { id } = await watch(acct.key);
    await baselined(stack, id);
    const handle = stack.client.workflow.getHandle(pollerId());
    const first = (await handle.describe()).runId;
    await remove(acct.key, id);
    await notPolled(stack, id);
    await eventually(async () => ((await handle.describe()).status.name === 'COMPLETED' ? true : undefined), 30_000);
    const again = await watch(acct.key);
    await baselined(stack, again.id);
    const next = await handle.describe();
    expect(next.status.name).toBe('RUNNING');
    expect(next.runId).not.toBe(first);
  });
});
