// The notifications log's retention: rows older than STREAM_RETENTION_HOURS go, oldest first, in
// batches; a backlog far larger than one statement could delete under the statement timeout
// drains across calls without a timeout.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { notificationsRule } from '../../src/retention/notifications.ts';
import { pruneTable, type PruneResult } from '../../src/retention/rule.ts';
import { databaseUrl } from '../support/harness.ts';

let scratch: ScratchDatabase;
let db: Db;

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_retention_notifications', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 2, statementTimeoutMs: 120_000 });
});

afterAll(async () => {
  await db?.destroy();
  await scratch?.drop();
});

const WEEK_HOURS = 7 * 24;

let added = 0;

/** `count` rows aged `ageHours` (ids and times in insertion order), shaped like a monitor's notifications. */
async function addRows(count: number, ageHours: number): Promise<void> {
  await db.raw(
    `INSERT INTO notifications (account_id, item_id, kind, dedupe_key, payload, created_at)
     SELECT 1, g, 'notification', 'poll:' || g || ':' || md5(g::text),
            jsonb_build_object('type', 'price_decrease', 'item_id', g, 'website', 'pf_03', 'event', 'summer-open-air-' || g,
              'region', 'us', 'section', 'Floor ' || (g % 40),
              'before', jsonb_build_object('min_price', 120.5, 'stock', 14, 'avg_price', 180.25),
              'after', jsonb_build_object('min_price', 99.5, 'stock', 12, 'avg_price', 170.75), 'snapshot_id', g),
            now() - make_interval(hours => ?) + (g - CAST(? AS int)) * interval '1 microsecond'
     FROM generate_series(CAST(? AS int) + 1, CAST(? AS int)) g`,
    [ageHours, added, added, added + count],
  );
  added += count;
}

async function ids(): Promise<number[]> {
  return (await db('notifications').orderBy('id').select('id')).map((r) => Number(r.id));
}

describe('notifications retention', () => {
  it('removes the rows older than the retention, oldest first, and keeps the rest', async () => {
    await db('notifications').delete();
    await addRows(30, WEEK_HOURS + 48);
    await addRows(25, WEEK_HOURS + 1);
    const before = await ids();
    await addRows(20, WEEK_HOURS - 1);
    await addRows(5, 0);
    const kept = (await ids()).filter((id) => !before.includes(id));

    // Batches of 10: the loop runs six times (five full, one empty).
    const result = await pruneTable(db, notificationsRule({ retentionHours: WEEK_HOURS }), { batchSize: 10 });
    expect(result).toMatchObject({ table: 'notifications', deleted: 55, done: true, busy: false, batches: 6 });
    expect(await ids()).toEqual(kept);
    expect((await pruneTable(db, notificationsRule({ retentionHours: WEEK_HOURS }))).deleted).toBe(0);
  });

  it('leaves the newest part of the log after every batch (a resume sees a gap, never a hole)', async () => {
    await db('notifications').delete();
    await addRows(50, WEEK_HOURS + 10);
    await addRows(10, 1);
    const rule = notificationsRule({ retentionHours: WEEK_HOURS });
    for (;;) {
      const one = await db.transaction((trx) => rule.batch(trx, 7));
      const left = await ids();
      // What is left is one run of consecutive ids ending at the newest row.
      expect(left.at(-1)! - left[0]! + 1).toBe(left.length);
      if (!one.more) break;
    }
    expect((await ids()).length).toBe(10);
  });

  it('drains a backlog of 200,000 rows under a 300 ms statement timeout, across calls', async () => {
    await db('notifications').delete();
    await addRows(200_000, WEEK_HOURS + 24);
    await addRows(1_000, 1);
    await db.raw('ANALYZE notifications');
    const tight = createDb({ connectionString: scratch.url, poolMax: 1, statementTimeoutMs: 300 });
    try {
      // The old prune was one DELETE of every row past the retention. Measured here (2 cores,
      // PostgreSQL 15, rows like these): 250-290 ms for 200,000 rows, 2.0-2.9 s for 700,000 and
      // 6.6-12 s for 1,500,000, past the 5 s DB_STATEMENT_TIMEOUT_MS: cancelled every hour, so
      // once the log held that much it never shrank again. One batch of 1,000 took 5-40 ms.
      const rule = notificationsRule({ retentionHours: WEEK_HOURS });
      const calls: PruneResult[] = [];
      for (let i = 0; i < 100; i++) {
        // A 200 ms budget per call: 200 batches of 1,000 at 5-40 ms each cannot fit in one call.
        // (At 1 s, as a housekeeping tick's share, a quiet machine once drained it all in one
        // call, and "across calls" went unchecked.)
        const r = await pruneTable(tight, rule, { deadline: Date.now() + 200 });
        calls.push(r);
        if (r.done) break;
      }
      expect(calls.at(-1)!.done).toBe(true);
      expect(calls.length).toBeGreaterThan(1);
      expect(calls.reduce((n, r) => n + r.deleted, 0)).toBe(200_000);
      expect(Number((await db('notifications').count({ n: '*' }).first())!.n)).toBe(1_000);
    } finally {
      await tight.destroy();
    }
  }, 180_000);
});
