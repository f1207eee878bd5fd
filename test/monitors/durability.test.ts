// Bounded histories and exactly-once writes: pollers and monitors continue as new (limits made
// small here) without losing their subscribers, baselines or config; an evaluation run again,
// or several at once, writes each notification once.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createMonitorActivities, pollerWorkflowId } from '../../activities/monitors.ts';
import { monitorConfig } from '../../src/monitors/changes.ts';
import { snapshotHash, toSnapshot } from '../../src/monitors/snapshot.ts';
import { ITEM_DEFAULTS } from '../../src/apis/watchlist/schema.ts';
import { createLogger } from '../../src/logger.ts';
import { parseEventRef } from '../../src/platform/event-ref.ts';
import { createScrapers } from '../../src/scrapers/index.ts';
import { monitorStatusQuery } from '../../workflows/monitor-messages.ts';
import { monitorWorkflowId } from '../../workflows/watchlist-monitor.ts';
import { call } from '../support/harness.ts';
import { eventually, notificationsOf, useMonitorStack } from '../support/monitor-stack.ts';
import { putEvent, section } from '../support/scrape-stack.ts';

const stack = useMonitorStack({ intervalMs: 250, pollsPerRun: 3, evaluationsPerRun: 2 });

const stalls = (stock: number, price = 80) => ({ region: 'fr', sections: [section('Stalls', price, stock)] });

// Real workflows, scrapes and a worker per file: minutes of slack under a full parallel run.
describe('bounded histories', { timeout: 120_000 }, () => {
  it('pollers and monitors continue as new and keep notifying in order, without gaps or repeats', async () => {
    const acct = await stack.account();
    const event = `https://pf03.example/e/can-${randomUUID().slice(0, 8)}`;
    await putEvent(stack.sim, 'pf_03', event, stalls(1));
    const res = await call(stack.gateway.url, 'POST', '/watchlist', { key: acct.key, body: { website: 'pf_03', event, region: 'fr' } });
    expect(res.status).toBe(201);
    const id = res.body.id as number;
    const monitor = stack.client.workflow.getHandle(monitorWorkflowId(id));
    await eventually(async () => {
      const s = await monitor.query(monitorStatusQuery).catch(() => null);
      return s?.baseline != null ? s : undefined;
    });
    const ref = parseEventRef('pf_03', event, 'fr');
    if (!ref.ok) throw new Error(ref.message);
    const poller = stack.client.workflow.getHandle(pollerWorkflowId(ref.ref));
    const firstPollerRun = (await poller.describe()).runId;
    const firstMonitorRun = (await monitor.describe()).runId;

    for (const stock of [2, 3, 4, 5, 6]) {
      await putEvent(stack.sim, 'pf_03', event, stalls(stock));
      await eventually(async () => ((await notificationsOf(stack, acct.accountId)).length >= stock - 1 ? true : undefined));
    }
    await new Promise((r) => setTimeout(r, 1_000));
    const rows = await notificationsOf(stack, acct.accountId);
    expect(rows.map((r) => [(r.payload.before as { stock: number }).stock, (r.payload.after as { stock: number }).stock])).toEqual([
      [1, 2],
      [2, 3],
      [3, 4],
      [4, 5],
      [5, 6],
    ]);
    expect((await poller.describe()).runId).not.toBe(firstPollerRun);
    expect((await monitor.describe()).runId).not.toBe(firstMonitorRun);
    // Each run's history stays small: a few events per poll or evaluation, never the whole past.
    const { events } = await stack.client.workflow.getHandle(pollerWorkflowId(ref.ref)).fetchHistory();
    expect(events?.length ?? 0).toBeLessThan(80);
  });
});

describe('evaluateChange', () => {
  it('writes each notification once, however often and however concurrently it runs', async () => {
    const acct = await stack.account();
    const target = `pf_03:fr:dedupe-${randomUUID().slice(0, 8)}`;
    const snap = (stock: number) => toSnapshot({ event_info: null, sections: { Stalls: { name: 'Stalls', currency: 'EUR', min_price: 50, max_price: 50, stock, offers: [{ id: 'a', price: 50, quantity: stock, ticket_type: 'standard', restricted_view: false, accessible: false, presale: false }] } } });
    const ids: number[] = [];
    for (const stock of [1, 4]) {
      const s = snap(stock);
      const [row] = await stack.db('target_snapshots').insert({ target, hash: snapshotHash(s), data: JSON.stringify(s), scraped_at: new Date() }).returning('id');
      ids.push(Number(row.id));
    }
    const scrapers = createScrapers({ baseUrls: stack.sim.baseUrls, concurrency: 1, browserPages: 1, chromiumPath: stack.config.CHROMIUM_PATH, attemptTimeoutMs: 5_000 });
    const activities = createMonitorActivities({
      db: stack.db,
      client: stack.client,
      scrapers,
      log: createLogger('silent'),
      monitorQueue: stack.config.MONITOR_TASK_QUEUE,
      scrapeQueue: stack.config.SCRAPE_TASK_QUEUE,
      intervalMs: 1_000,
      jitterRatio: 0,
    });
    const input = {
      itemId: 987_654,
      accountId: acct.accountId,
      item: { website: 'pf_03', event: 'https://pf03.example/e/x', region: 'fr' },
      config: monitorConfig({ ...ITEM_DEFAULTS }),
      fromSnapshotId: ids[0]!,
      toSnapshotId: ids[1]!,
    };
    const results = await Promise.all(Array.from({ length: 5 }, () => activities.evaluateChange(input)));
    expect(results.map((r) => r.notified).sort()).toEqual([0, 0, 0, 0, 1]);
    expect((await activities.evaluateChange(input)).notified).toBe(0);
    const rows = await notificationsOf(stack, acct.accountId);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.payload).toMatchObject({ change_type: 'stock_increase', before: { stock: 1 }, after: { stock: 4 } });

    // Muted at the time the change was seen: nothing written. A missing baseline: reported, nothing written.
    const muted = await activities.evaluateChange({ ...input, itemId: 987_655, config: { ...input.config, muted_until: new Date(Date.now() + 60_000).toISOString() } });
    expect(muted).toEqual({ notified: 0, muted: true, missing: false });
    const missing = await activities.evaluateChange({ ...input, itemId: 987_656, fromSnapshotId: 1e12 });
    expect(missing).toEqual({ notified: 0, muted: false, missing: true });
    expect(await notificationsOf(stack, acct.accountId)).toHaveLength(1);
    await scrapers.close();
  });
});
