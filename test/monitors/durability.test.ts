// Bounded histories and exactly-once writes: shard pollers hand their schedule on and continue
// as new after every run (runs made short here) without losing members, baselines or config;
// recording one poll again, or several times at once, writes each notification once.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ITEM_DEFAULTS } from '../../src/apis/watchlist/schema.ts';
import { monitorConfig } from '../../src/monitors/changes.ts';
import { recordPoll } from '../../src/monitors/record-poll.ts';
import { shardOf, shardPollerId } from '../../src/monitors/shards.ts';
import { snapshotHash, toSnapshot } from '../../src/monitors/snapshot.ts';
import { parseEventRef, targetKey } from '../../src/platform/event-ref.ts';
import { shardStatusQuery } from '../../workflows/monitor-messages.ts';
import { call } from '../support/harness.ts';
import { insertWatchlistItem } from '../support/watchlist-rows.ts';
import { baselined, eventually, notificationsOf, polledAgain, useMonitorStack } from '../support/monitor-stack.ts';
import { putEvent, section } from '../support/scrape-stack.ts';

const stack = useMonitorStack({ intervalMs: 250, pollRunMs: 1_500 });

const stalls = (stock: number, price = 80) => ({ region: 'fr', sections: [section('Stalls', price, stock)] });

// Real workflows, scrapes and a worker per file: minutes of slack under a full parallel run.
describe('bounded histories', { timeout: 120_000 }, () => {
  it('shard pollers continue as new after each run and keep notifying in order, without gaps or repeats', async () => {
    const acct = await stack.account();
    const event = `https://pf03.example/e/can-${randomUUID().slice(0, 8)}`;
    await putEvent(stack.sim, 'pf_03', event, stalls(1));
    const res = await call(stack.gateway.url, 'POST', '/watchlist', { key: acct.key, body: { website: 'pf_03', event, region: 'fr' } });
    expect(res.status).toBe(201);
    await baselined(stack, res.body.id as number);
    const ref = parseEventRef('pf_03', event, 'fr');
    if (!ref.ok) throw new Error(ref.message);
    const poller = stack.client.workflow.getHandle(shardPollerId(stack.config.MONITOR_TASK_QUEUE, 'pf_03', shardOf(targetKey(ref.ref), stack.config.MONITOR_SHARDS_PER_PLATFORM)));
    const firstRun = (await poller.describe()).runId;

    for (const stock of [2, 3, 4, 5, 6]) {
      await putEvent(stack.sim, 'pf_03', event, stalls(stock));
      await eventually(async () => ((await notificationsOf(stack, acct.accountId)).length >= stock - 1 ? true : undefined));
      // Changes land on both sides of the runs' hand-overs.
      await new Promise((r) => setTimeout(r, 400));
    }
    // Long enough for a repeat to show if one were coming: a second, and two polls after the last change.
    await Promise.all([new Promise((r) => setTimeout(r, 1_000)), polledAgain(stack, 'pf_03', event)]);
    const rows = await notificationsOf(stack, acct.accountId);
    expect(rows.map((r) => [(r.payload.before as { stock: number }).stock, (r.payload.after as { stock: number }).stock])).toEqual([
      [1, 2],
      [2, 3],
      [3, 4],
      [4, 5],
      [5, 6],
    ]);
    // Runs of 1.5 s: the chain has continued as new by now, or will shortly on a loaded machine.
    await eventually(async () => ((await poller.describe()).runId !== firstRun ? true : undefined));
    const status = await poller.query(shardStatusQuery);
    expect(status.runs).toBeGreaterThan(0);
    expect(status.lastRun?.polls).toBeGreaterThan(0);
    // Each run's history is a handful of events, never the whole past.
    const { events } = await poller.fetchHistory();
    expect(events?.length ?? 0).toBeLessThan(20);
  });
});

/** A pf_03 snapshot of one section, Stalls, with `stock` tickets at 50. */
const snap = (stock: number) =>
  toSnapshot({ event_info: null, sections: { Stalls: { name: 'Stalls', currency: 'EUR', min_price: 50, max_price: 50, stock, offers: [{ id: 'a', price: 50, quantity: stock, ticket_type: 'standard', restricted_view: false, accessible: false, presale: false }] } } });

/** A monitor_members row of a pf_03 item on `target`, with its baseline. */
const memberRow = (accountId: number, target: string, itemId: number, baseline: number | null, config = monitorConfig({ ...ITEM_DEFAULTS })) => ({
  item_id: itemId,
  account_id: accountId,
  target,
  platform: 'pf_03',
  shard: 0,
  ref: JSON.stringify({ platform: 'pf_03', eventId: 'x', key: 'x', region: 'fr', host: null }),
  item: JSON.stringify({ website: 'pf_03', event: 'https://pf03.example/e/x', region: 'fr' }),
  config: JSON.stringify(config),
  version: 1,
  baseline_snapshot_id: baseline,
});

/** A real item for memberRow's target (the database names a notification's recipient from it). */
const itemOf = async (accountId: number, website = 'pf_03', event = 'https://pf03.example/e/x', region = 'fr') => (await insertWatchlistItem(stack.db, { accountId, website, event, region })).id;

describe('recordPoll', () => {
  it('writes each notification once, however often and however concurrently it runs', async () => {
    const acct = await stack.account();
    const target = `pf_03:fr:dedupe-${randomUUID().slice(0, 8)}`;
    const first = snap(1);
    const [row] = await stack.db('target_snapshots').insert({ target, hash: snapshotHash(first), data: JSON.stringify(first), scraped_at: new Date() }).returning('id');
    const baseline = Number(row.id);
    const member = (itemId: number, config = monitorConfig({ ...ITEM_DEFAULTS })) => memberRow(acct.accountId, target, itemId, baseline, config);
    const [itemId, mutedId, newId] = [await itemOf(acct.accountId), await itemOf(acct.accountId), await itemOf(acct.accountId)];
    await stack.db('monitor_members').insert([
      member(itemId),
      // Muted at the time the change is seen: its baseline moves, nothing is written.
      member(mutedId, { ...monitorConfig({ ...ITEM_DEFAULTS }), muted_until: new Date(Date.now() + 60_000).toISOString() }),
      // No baseline yet: gets one, no notification.
      { ...member(newId), baseline_snapshot_id: null },
    ]);
    const next = snap(4);
    const poll = { target, snapshot: next, hash: snapshotHash(next), scrapedAt: new Date(), startedAt: new Date() };
    const results = await Promise.all(Array.from({ length: 5 }, () => recordPoll(stack.db, poll, { id: baseline, data: first })));
    expect(results.map((r) => r.notifications).sort()).toEqual([0, 0, 0, 0, 1]);
    expect(new Set(results.map((r) => r.snapshotId)).size).toBe(1);
    expect(results.filter((r) => r.changed)).toHaveLength(1);
    expect((await recordPoll(stack.db, poll, { id: baseline, data: first })).notifications).toBe(0);
    const rows = await notificationsOf(stack, acct.accountId);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.itemId).toBe(itemId);
    expect(rows[0]!.payload).toMatchObject({ change_type: 'stock_increase', before: { stock: 1 }, after: { stock: 4 }, snapshot_id: results[0]!.snapshotId });
    const baselines = await stack.db('monitor_members').where({ target }).orderBy('item_id').pluck('baseline_snapshot_id');
    expect(baselines.map(Number)).toEqual([results[0]!.snapshotId, results[0]!.snapshotId, results[0]!.snapshotId]);
    await stack.db('monitor_members').where({ target }).delete();
  });
  it('a poll whose request went out before the newest snapshot was scraped is dropped: no backwards change, no repeat of the forward one', async () => {
    const acct = await stack.account();
    const target = `pf_03:fr:stale-${randomUUID().slice(0, 8)}`;
    const itemId = await itemOf(acct.accountId);
    const t0 = Date.now();
    // What a poller frozen past its heartbeat timeout holds: a scrape sent at t0, answered stock 1.
    const frozen = snap(1);
    const [row] = await stack.db('target_snapshots').insert({ target, hash: snapshotHash(frozen), data: JSON.stringify(frozen), scraped_at: new Date(t0 - 5_000) }).returning('id');
    await stack.db('monitor_members').insert(memberRow(acct.accountId, target, itemId, Number(row.id)));
    // The worker that took the shard over sees the stock go to 4, and records it (1 -> 4).
    const taken = snap(4);
    const later = await recordPoll(stack.db, { target, snapshot: taken, hash: snapshotHash(taken), scrapedAt: new Date(t0 + 1_000), startedAt: new Date(t0 + 900) }, null);
    expect(later).toMatchObject({ notifications: 1, stale: false });
    // The frozen one wakes and finishes a scrape it sent at t0 (it read stock 2 then): older news.
    const old = snap(2);
    const stale = await recordPoll(stack.db, { target, snapshot: old, hash: snapshotHash(old), scrapedAt: new Date(t0 + 2_000), startedAt: new Date(t0) }, { id: Number(row.id), data: frozen });
    expect(stale).toMatchObject({ stale: true, notifications: 0, changed: false });
    // The next poll of the new owner sees 4 again: nothing to say.
    expect((await recordPoll(stack.db, { target, snapshot: taken, hash: snapshotHash(taken), scrapedAt: new Date(t0 + 3_000), startedAt: new Date(t0 + 2_900) }, null)).notifications).toBe(0);
    const rows = await notificationsOf(stack, acct.accountId);
    expect(rows.map((r) => [(r.payload.before as { stock: number }).stock, (r.payload.after as { stock: number }).stock])).toEqual([[1, 4]]);
    expect(Number((await stack.db('target_snapshots').where({ target }).count('* as n').first())?.n)).toBe(2);
    await stack.db('monitor_members').where({ target }).delete();
  });
  it('a baseline stored in an older snapshot format is moved on without a diff (no alert for what the new format reads differently)', async () => {
    const acct = await stack.account();
    const target = `pf_01:uk:format-${randomUUID().slice(0, 8)}`;
    const itemId = await itemOf(acct.accountId, 'pf_01', 'x', 'uk');
    const seated = (resale: number) =>
      toSnapshot({
        event_info: null,
        degraded: null,
        sections: {
          Floor: {
            name: 'Floor',
            currency: 'GBP',
            min_price: 50,
            max_price: 95,
            stock: 1 + resale,
            seats: [{ row: 'A', seat: '1', price: 50, ticket_type: 'standard', restricted_view: false, accessible: false, presale: false }],
            offers: [{ id: 'R1', price: 95, quantity: resale, ticket_type: 'resale', restricted_view: false, accessible: false, presale: false }],
            by_ticket_type: { standard: 1, resale },
          },
        },
      });
    // Format 1 read only the seats of a seated section: its resale tickets were not in the snapshot.
    const old = { starts_at: null, sections: [{ name: 'Floor', currency: 'GBP', offers: seated(0).sections[0]!.offers }] };
    const [row] = await stack.db('target_snapshots').insert({ target, hash: 'format-1', data: JSON.stringify(old), scraped_at: new Date() }).returning('id');
    await stack.db('monitor_members').insert({
      item_id: itemId,
      account_id: acct.accountId,
      target,
      platform: 'pf_01',
      shard: 0,
      ref: JSON.stringify({ platform: 'pf_01', eventId: 'x', key: 'x', region: 'uk', host: null }),
      item: JSON.stringify({ website: 'pf_01', event: 'x', region: 'uk' }),
      config: JSON.stringify(monitorConfig({ ...ITEM_DEFAULTS, resale_tickets: true, stock_threshold_filter: null, change_type: null })),
      version: 1,
      baseline_snapshot_id: Number(row.id),
    });
    const next = seated(4);
    const recorded = await recordPoll(stack.db, { target, snapshot: next, hash: snapshotHash(next), scrapedAt: new Date(), startedAt: new Date() }, { id: Number(row.id), data: old });
    expect(recorded).toMatchObject({ changed: true, notifications: 0 });
    expect(Number((await stack.db('monitor_members').where({ item_id: itemId }).first('baseline_snapshot_id')).baseline_snapshot_id)).toBe(recorded.snapshotId);
    // From there on the new format is compared as usual.
    const more = seated(6);
    expect((await recordPoll(stack.db, { target, snapshot: more, hash: snapshotHash(more), scrapedAt: new Date(), startedAt: new Date() }, { id: recorded.snapshotId, data: next })).notifications).toBe(1);
    await stack.db('monitor_members').where({ target }).delete();
  });
});
