// The gateway's housekeeping: one tick at a time however slow a tick is, every rule run each
// tick with what it removed logged per table, a failing rule not stopping the others, and stop()
// waiting for the tick in progress.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import type { BillingProvider } from '../../src/billing/provider.ts';
import { createLogger } from '../../src/logger.ts';
import { startHousekeeping } from '../../src/runtime/housekeeping.ts';
import { notificationsRule } from '../../src/retention/notifications.ts';
import { rateLimitWindowsRule } from '../../src/retention/rate-limit-windows.ts';
import { retentionRules } from '../../src/retention/rules.ts';
import type { RetentionRule } from '../../src/retention/rule.ts';
import { databaseUrl, testConfig } from '../support/harness.ts';

let scratch: ScratchDatabase;
let db: Db;

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_housekeeping', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 4 });
});

afterAll(async () => {
  await db?.destroy();
  await scratch?.drop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function capturedLog() {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger('info', { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
  return { log, lines };
}

function billing(releaseOrphans: () => Promise<number>): BillingProvider {
  return { releaseOrphans } as unknown as BillingProvider;
}

describe('housekeeping', () => {
  it('never runs a tick beside another, however long a tick takes', async () => {
    let active = 0;
    let most = 0;
    let ticks = 0;
    const slow = async () => {
      active++;
      most = Math.max(most, active);
      ticks++;
      await sleep(150);
      active--;
      return 0;
    };
    const { log } = capturedLog();
    // A tick every 10 ms, each taking 150 ms: the old setInterval started a new one every 10 ms.
    const stop = startHousekeeping({ billing: billing(slow), config: testConfig(), db, log }, { everyMs: 10, rules: [] });
    await sleep(700);
    await stop();
    expect(most).toBe(1);
    expect(ticks).toBeGreaterThanOrEqual(3);
    const after = ticks;
    await sleep(100);
    expect(ticks).toBe(after);
  });

  it('runs every rule each tick and logs how many rows each removed; a failing rule does not stop the others', async () => {
    await db('rate_limit_windows').insert(Array.from({ length: 7 }, (_, i) => ({ subject: `old-${i}`, window_start: new Date(Date.now() - 10 * 60_000), hits: 1 })));
    await db('notifications').insert(
      Array.from({ length: 4 }, (_, i) => ({ account_id: 1, kind: 'notification', payload: '{}', created_at: new Date(Date.now() - (200 + i) * 3_600_000) })),
    );
    const broken: RetentionRule = {
      table: 'watchlist_changes',
      batchSize: 10,
      batch: async () => {
        throw new Error('broken rule');
      },
    };
    const { log, lines } = capturedLog();
    const stop = startHousekeeping(
      { billing: billing(async () => 0), config: testConfig(), db, log },
      { everyMs: 60_000, rules: [rateLimitWindowsRule(), broken, notificationsRule({ retentionHours: 168 })] },
    );
    const deadline = Date.now() + 10_000;
    while (!lines.some((l) => l.msg === 'retention: pruned rows past their retention') && Date.now() < deadline) await sleep(20);
    await stop();
    expect(lines.find((l) => l.msg === 'retention: pruned rows past their retention')).toMatchObject({
      level: 30,
      deleted: { rate_limit_windows: 7, notifications: 4 },
      unfinished: [],
    });
    expect(lines.find((l) => l.table === 'watchlist_changes')).toMatchObject({ level: 40, msg: 'retention: pruning failed; will retry at the next tick' });
  });

  it('says which tables have more left than a tick allows, and goes on with them at the next tick', async () => {
    await db('notifications').delete();
    await db('notifications').insert(
      Array.from({ length: 3_000 }, (_, i) => ({ account_id: 1, kind: 'notification', payload: '{}', created_at: new Date(Date.now() - (200 * 3_600_000 + i)) })),
    );
    // Each batch takes at least 30 ms and a rule's budget is 1 ms: one batch (1,000 rows) per tick.
    const base = notificationsRule({ retentionHours: 168 });
    const slow: RetentionRule = { ...base, batch: async (trx, limit) => (await sleep(30), base.batch(trx, limit)) };
    const { log, lines } = capturedLog();
    const stop = startHousekeeping({ billing: billing(async () => 0), config: testConfig(), db, log }, { everyMs: 10, rules: [slow], ruleBudgetMs: 1 });
    const deadline = Date.now() + 10_000;
    while (Number((await db('notifications').count({ n: '*' }).first())!.n) > 0 && Date.now() < deadline) await sleep(20);
    await stop();
    const pruned = lines.filter((l) => l.msg === 'retention: pruned rows past their retention');
    expect(pruned.slice(0, 3).map((l) => l.deleted)).toEqual([{ notifications: 1_000 }, { notifications: 1_000 }, { notifications: 1_000 }]);
    expect(pruned[0]).toMatchObject({ unfinished: ['notifications'] });
  });

  it('stop() waits for the tick in progress and no tick starts after it', async () => {
    let finished = false;
    const { log } = capturedLog();
    const stop = startHousekeeping(
      {
        billing: billing(async () => {
          await sleep(200);
          finished = true;
          return 0;
        }),
        config: testConfig(),
        db,
        log,
      },
      { everyMs: 10, rules: [] },
    );
    await sleep(20);
    await stop();
    expect(finished).toBe(true);
  });

  it('runs the rules of every table the configuration names', () => {
    const tables = retentionRules(testConfig()).map((r) => r.table);
    expect(new Set(tables).size).toBe(tables.length);
    expect(tables).toEqual(
      expect.arrayContaining(['notifications', 'watchlist_changes', 'watchlist_items', 'credit_ledger', 'stripe_events', 'meter_batches', 'monitor_target_status', 'target_snapshots', 'mb_statistics_history']),
    );
  });
});
