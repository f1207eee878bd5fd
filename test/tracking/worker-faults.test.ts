// Event tracking with the production worker entry point (`npm run worker`) in a child process,
// SIGKILLed mid-run and started again: the trackEvent workflows resume from Temporal's history,
// sales made while the worker was down are picked up, and no tick is written twice (each
// written tick is one snapshot and one scrape_count; tick numbers are applied exactly once).
// A short ticksPerRun makes the trackings continue as new along the way.
import { describe, expect, it } from 'vitest';
import { trackingWorkflowId } from '../../src/market-data/tracking-ref.ts';
import { trackStatusQuery } from '../../workflows/track-event-messages.ts';
import { randomAId, randomBId } from '../support/market-data-fixtures.ts';
import { eventually, useTrackingStack } from './tracking-stack.ts';

const stack = useTrackingStack({ intervalMs: 300, worker: 'child-process', ticksPerRun: 4 });

const HOUR = 3_600_000;
const sale = (n: number, hoursAgo: number, quantity: number, price: number) => ({
  id: `S-${n}`,
  sold_at: new Date(Date.now() - hoursAgo * HOUR).toISOString(),
  section: 'Floor',
  quantity,
  price,
});

/** Each tick number written once: as many snapshots as written ticks, numbered 1..n in one chain. */
async function writtenOnce(marketplace: string, id: string, table: 'ma_stats_snapshots' | 'mb_statistics_history') {
  // One statement, so a tick committing meanwhile cannot make the figures disagree.
  const { rows } = await stack.db.raw(
    `SELECT t.scrape_count, t.last_tick, (SELECT count(*) FROM ${table} x WHERE x.event_id = t.event_id) AS written
     FROM tracked_events t WHERE t.marketplace = ? AND t.external_id = ?`,
    [marketplace, id],
  );
  const [r] = rows;
  expect(r.last_tick).toBe(r.scrape_count);
  expect(r.written).toBe(r.scrape_count);
}

// Real workflows, child-process workers and restarts: minutes of slack under a full parallel run.
describe('tracking across a killed worker', { timeout: 180_000 }, () => {
  it('picks up what changed while the worker was dead, counts every sale once, and keeps going', async () => {
    const a = randomAId();
    const num = Number(a.slice(2));
    const b = randomBId();
    const listings = [{ section: 'Floor', quantity: 10, price: 50 }];
    const early = [sale(1, 30, 2, 40), sale(2, 3, 1, 55)];
    await stack.put('marketplace_a', a, { currency: 'EUR', listings, sales: early });
    await stack.put('marketplace_b', b, { sections: [{ name: 'Hall', capacity: 100, available: 40, sold: 60 }] });
    expect((await stack.add({ marketplace: 'marketplace_a', event_id: a })).status).toBe(201);
    expect((await stack.add({ marketplace: 'marketplace_b', event_id: b })).status).toBe(201);
    await stack.scraped('marketplace_a', a, 2);
    await stack.scraped('marketplace_b', b, 2);

    // SIGKILL: ticks and workflow tasks in flight are abandoned. Meanwhile tickets sell.
    await stack.restartWorker({
      downMs: 1_000,
      whileDown: async () => {
        await stack.put('marketplace_a', a, { currency: 'EUR', listings: [{ ...listings[0], quantity: 5 }], sales: [...early, sale(3, 0, 3, 60), sale(4, 0, 2, 65)] });
        await stack.put('marketplace_b', b, { sections: [{ name: 'Hall', capacity: 100, available: 30, sold: 70 }] });
      },
    });

    const latest = await eventually(async () => {
      const s = await stack.db('ma_stats_snapshots').where({ event_id: num }).orderBy('id', 'desc').first();
      return s?.tickets_sold === 8 ? s : undefined;
    });
    expect(latest).toMatchObject({ available_tickets: 5, tickets_sold_24h: 6, total_volume: '445.00', currency: 'EUR' });
    expect(await stack.db('ma_sales').where({ event_id: num }).orderBy('sale_ref').pluck('sale_ref')).toEqual(['S-1', 'S-2', 'S-3', 'S-4']);
    const bEvent = (await stack.record('marketplace_b', b))!.event_id;
    await eventually(async () => {
      const h = await stack.db('mb_statistics_history').where({ event_id: bEvent }).orderBy('id', 'desc').first();
      return h?.tickets_sold === 70 ? h : undefined;
    });

    // Another kill, then past a few continue-as-new boundaries (4 ticks per run).
    const before = (await stack.record('marketplace_a', a))!.scrape_count;
    const beforeB = (await stack.record('marketplace_b', b))!.scrape_count;
    await stack.restartWorker();
    await stack.scraped('marketplace_a', a, before + 6);
    await stack.scraped('marketplace_b', b, beforeB + 2);
    await writtenOnce('marketplace_a', a, 'ma_stats_snapshots');
    await writtenOnce('marketplace_b', b, 'mb_statistics_history');
    expect(await stack.db('ma_sales').where({ event_id: num }).sum({ q: 'quantity' }).first()).toEqual({ q: 8 });
    expect((await stack.db('ma_stats_snapshots').where({ event_id: num }).orderBy('id', 'desc').first()).tickets_sold).toBe(8);

    const handle = stack.client.workflow.getHandle(trackingWorkflowId('marketplace_a', a));
    const status = await handle.query(trackStatusQuery);
    expect(status.ticks).toBeGreaterThanOrEqual(before + 6);
    const runs = [];
    for await (const w of stack.client.workflow.list({ query: `WorkflowId = '${trackingWorkflowId('marketplace_a', a)}'` })) runs.push(w.status.name);
    expect(runs.filter((s) => s === 'RUNNING')).toHaveLength(1);
    expect(runs.filter((s) => s === 'CONTINUED_AS_NEW').length).toBeGreaterThanOrEqual(1);
  });

  it('a tracking added while the worker is dead starts once it is back', async () => {
    const a = randomAId();
    await stack.put('marketplace_a', a, { listings: [{ section: 'S', quantity: 1, price: 10 }], sales: [sale(1, 1, 1, 10)] });
    let added: Awaited<ReturnType<typeof stack.add>> | undefined;
    await stack.restartWorker({
      downMs: 500,
      whileDown: async () => {
        added = await stack.add({ marketplace: 'marketplace_a', event_id: a });
      },
    });
    expect(added!.status).toBe(201);
    expect(added!.body.status).toBe('pending');
    await stack.scraped('marketplace_a', a, 1);
    await writtenOnce('marketplace_a', a, 'ma_stats_snapshots');
  });
});
