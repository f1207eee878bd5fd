// The tracker's time series are thinned past TRACKING_DETAIL_RETENTION_HOURS: every row inside
// the window stays; of older rows exactly the last of each event's UTC day stays. Checked against
// a ground truth the test computes, for random ticks, and across ticks as rows age.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { pruneTable, type RetentionRule } from '../../src/retention/rule.ts';
import { trackingHistoryRules } from '../../src/retention/tracking-history.ts';
import { databaseUrl } from '../support/harness.ts';

let scratch: ScratchDatabase;
let db: Db;
const EVENTS = [101, 102, 103];

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_retention_tracking', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 2 });
  await db('events').insert(EVENTS.map((id) => ({ id, name: `event ${id}` })));
});

afterAll(async () => {
  await db?.destroy();
  await scratch?.drop();
});

const MINUTE = 60_000;
const DETAIL_HOURS = 48;

function rule(table: string): RetentionRule {
  return trackingHistoryRules({ detailHours: DETAIL_HOURS }).find((r) => r.table === table)!;
}

interface Tick {
  event: number;
  minutesAgo: number;
}

/** The rows that must stay: every row inside the window, and each event's last row of a UTC day. */
function expectedKept(ticks: readonly { event: number; at: number; id: number }[], cutoff: number): number[] {
  const lastOfDay = new Map<string, { at: number; id: number }>();
  for (const t of ticks) {
    const key = `${t.event}:${new Date(t.at).toISOString().slice(0, 10)}`;
    const best = lastOfDay.get(key);
    if (!best || t.at > best.at || (t.at === best.at && t.id > best.id)) lastOfDay.set(key, t);
  }
  const last = new Set([...lastOfDay.values()].map((t) => t.id));
  return ticks.filter((t) => t.at >= cutoff || last.has(t.id)).map((t) => t.id).sort((a, b) => a - b);
}

/** Inserts statistics rows oldest first (as the tracker writes them); returns them with their ids. */
async function insertHistory(ticks: readonly Tick[], now: number): Promise<{ event: number; at: number; id: number }[]> {
  const ordered = [...ticks].sort((a, b) => b.minutesAgo - a.minutesAgo);
  if (ordered.length === 0) return [];
  const rows = await db('mb_statistics_history')
    .insert(
      ordered.map((t, i) => ({
        event_id: t.event,
        created_at: new Date(now - t.minutesAgo * MINUTE),
        tickets_sold: i,
        tickets_sold_24h: 0,
        available_tickets: 0,
        listings_available: 0,
        currency: 'EUR',
      })),
    )
    .returning(['id', 'tickets_sold']);
  const idOf = new Map(rows.map((r) => [Number(r.tickets_sold), Number(r.id)]));
  return ordered.map((t, i) => ({ event: t.event, at: now - t.minutesAgo * MINUTE, id: idOf.get(i)! }));
}

async function historyIds(): Promise<number[]> {
  return (await db('mb_statistics_history').orderBy('id').select('id')).map((r) => Number(r.id));
}

describe('tracking statistics retention', () => {
  it('keeps every row inside the window and exactly the last row of each event and UTC day before it', async () => {
    const tickArb: fc.Arbitrary<Tick> = fc.record({
      event: fc.constantFrom(...EVENTS),
      // Up to six days back, so the window's edge and several UTC midnights fall among the rows.
      minutesAgo: fc.oneof(fc.integer({ min: 0, max: 6 * 24 * 60 }), fc.constantFrom(DETAIL_HOURS * 60 - 1, DETAIL_HOURS * 60, DETAIL_HOURS * 60 + 1)),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(tickArb, { maxLength: 60 }), fc.integer({ min: 1, max: 9 }), async (ticks, batchSize) => {
        await db('mb_statistics_history').delete();
        const now = Date.now();
        const rows = await insertHistory(ticks, now);
        // A row aged exactly the window is past it: the prune runs after the insert.
        const expected = expectedKept(rows, now - DETAIL_HOURS * 3_600_000 + 1);
        const result = await pruneTable(db, rule('mb_statistics_history'), { batchSize });
        expect(result.done).toBe(true);
        expect(result.deleted).toBe(rows.length - expected.length);
        expect(await historyIds()).toEqual(expected);
      }),
      { numRuns: 60 },
    );
  });

  it('comes back to rows once they have aged out of the window', async () => {
    await db('mb_statistics_history').delete();
    const now = Date.now();
    // An hour of minute ticks four days ago, then an hour of them now.
    const old = Array.from({ length: 60 }, (_, i) => ({ event: 101, minutesAgo: 4 * 24 * 60 + 600 - i }));
    const fresh = Array.from({ length: 60 }, (_, i) => ({ event: 101, minutesAgo: 60 - i }));
    const rows = await insertHistory([...old, ...fresh], now);
    const cutoff = now - DETAIL_HOURS * 3_600_000 + 1;
    const series = rule('mb_statistics_history');
    await pruneTable(db, series, { batchSize: 25 });
    const afterFirst = expectedKept(rows, cutoff);
    expect(await historyIds()).toEqual(afterFirst);
    expect(afterFirst.length).toBeGreaterThan(60);

    // Three days pass: the fresh hour ages out of the window. The same rule, its walk position
    // kept, thins it on its next run.
    await db('mb_statistics_history').update({ created_at: db.raw(`created_at - interval '3 days'`) });
    const aged = rows.filter((r) => afterFirst.includes(r.id)).map((r) => ({ ...r, at: r.at - 3 * 86_400_000 }));
    await pruneTable(db, series, { batchSize: 25 });
    const afterSecond = expectedKept(aged, cutoff);
    expect(await historyIds()).toEqual(afterSecond);
    expect(afterSecond.length).toBeLessThanOrEqual(4);
  });

  it('thins marketplace A snapshots by their capture time, and scrape runs with their section and offer rows', async () => {
    const now = Date.now();
    // Three ticks at noon (UTC) five days ago, 10 minutes apart, and one 10 minutes ago.
    const noon = Math.floor((now - 5 * 86_400_000) / 86_400_000) * 86_400_000 + 12 * 3_600_000;
    const times = [0, 1, 2].map((i) => new Date(noon + i * 10 * MINUTE)).concat(new Date(now - 10 * MINUTE));

    const snaps = await db('ma_stats_snapshots')
      .insert(times.map((captured_at) => ({ event_id: 102, captured_at, currency: 'EUR' })))
      .returning('id');
    expect((await pruneTable(db, rule('ma_stats_snapshots'))).deleted).toBe(2);
    expect((await db('ma_stats_snapshots').where({ event_id: 102 }).orderBy('id').select('id')).map((r) => Number(r.id))).toEqual([Number(snaps[2].id), Number(snaps[3].id)]);

    const runs: number[] = [];
    for (const created_at of times) {
      const [run] = await db('mb_scrape_runs').insert({ event_id: 103, region: 'us', created_at }).returning('id');
      runs.push(Number(run.id));
      await db('mb_section_stats').insert({ run_id: run.id, section_name: 'Floor', capacity: 10, available_stock: 5, sold_amount: 5, created_at });
      await db('mb_offer_stats').insert({ run_id: run.id, offer_name: 'Standard', offer_stock: 5, average_price_fees: '10.00', average_price_no_fees: '9.00', offer_type: 1, currency: 'EUR', created_at });
    }
    expect((await pruneTable(db, rule('mb_scrape_runs'))).deleted).toBe(2);
    expect((await db('mb_scrape_runs').where({ event_id: 103 }).orderBy('id').select('id')).map((r) => Number(r.id))).toEqual([runs[2], runs[3]]);
    expect((await db('mb_section_stats').whereIn('run_id', runs).orderBy('run_id').select('run_id')).map((r) => Number(r.run_id))).toEqual([runs[2], runs[3]]);
    expect(Number((await db('mb_offer_stats').whereIn('run_id', runs).count({ n: '*' }).first())!.n)).toBe(2);
  });
});
