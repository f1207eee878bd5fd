// When each target was last checked (src/monitors/check-log.ts, issue 38), against a real
// PostgreSQL: the checks a worker's pollers note are written once a second, all targets in one
// statement, the newest check winning (in memory and in the table, so an older write never moves
// a row back); a write that fails keeps its checks for the next one; the first success after a
// failure is written at once with the failure's clearing (clearStatus). And what it costs at
// 1,000 targets polled every 5 s against a write per poll (figures printed to stderr; the ones
// in docs/monitoring.md come from here).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { createLogger } from '../../src/logger.ts';
import { CheckLog } from '../../src/monitors/check-log.ts';
import { clearStatus, recordFailure } from '../../src/monitors/target-status.ts';
import { databaseUrl } from '../support/harness.ts';

let scratch: ScratchDatabase;
let db: Db;
const log = createLogger('silent');

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_check_log', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 4 });
});

afterAll(async () => {
  await db?.destroy();
  await scratch?.drop();
});

async function rows(prefix: string): Promise<Map<string, { at: number; ok: boolean }>> {
  const r: { target: string; checked_at: Date; ok: boolean }[] = await db('monitor_target_checks').where('target', 'like', `${prefix}%`).select('target', 'checked_at', 'ok');
  return new Map(r.map((x) => [x.target, { at: x.checked_at.getTime(), ok: x.ok }]));
}

describe('the check log', () => {
  it('writes every check noted in one statement, one row per target, the newest check winning', async () => {
    const checks = new CheckLog(db, log);
    const t0 = Date.parse('2026-05-01T10:00:00.000Z');
    for (let i = 0; i < 1_000; i++) checks.checked(`pf_03:us:batch-${i % 200}`, t0 + i, i % 7 !== 0);
    await checks.flush();
    expect(checks.statements).toBe(1);
    const written = await rows('pf_03:us:batch-');
    expect(written.size).toBe(200);
    // Target k was last noted at i = 800 + k.
    for (let k = 0; k < 200; k++) expect(written.get(`pf_03:us:batch-${k}`)).toEqual({ at: t0 + 800 + k, ok: (800 + k) % 7 !== 0 });
    // Nothing noted: nothing written.
    await checks.flush();
    expect(checks.statements).toBe(1);

    // An older check (another poller of the target, a retried write) moves nothing back.
    checks.checked('pf_03:us:batch-0', t0, false);
    checks.checked('pf_03:us:batch-1', t0 + 5_000, false);
    await checks.flush();
    const after = await rows('pf_03:us:batch-');
    expect(after.get('pf_03:us:batch-0')).toEqual({ at: t0 + 800, ok: true });
    expect(after.get('pf_03:us:batch-1')).toEqual({ at: t0 + 5_000, ok: false });
  });

  it('keeps the checks of a write that failed for the next one', async () => {
    const checks = new CheckLog(db, log);
    checks.checked('pf_03:us:kept', Date.parse('2026-05-01T11:00:00Z'), true);
    await db.raw('ALTER TABLE monitor_target_checks RENAME TO monitor_target_checks_away');
    try {
      await checks.flush(); // fails, and does not throw
    } finally {
      await db.raw('ALTER TABLE monitor_target_checks_away RENAME TO monitor_target_checks');
    }
    expect((await rows('pf_03:us:kept')).size).toBe(0);
    checks.checked('pf_03:us:kept', Date.parse('2026-05-01T10:59:00Z'), false); // older: the kept one wins
    await checks.flush();
    expect((await rows('pf_03:us:kept')).get('pf_03:us:kept')).toEqual({ at: Date.parse('2026-05-01T11:00:00Z'), ok: true });
  });

  it('writes once a second while a shard run holds it, and what is left when the last run ends', async () => {
    const checks = new CheckLog(db, log, 200);
    checks.acquire();
    checks.checked('pf_03:us:timer', Date.parse('2026-05-01T12:00:00Z'), true);
    await expect.poll(async () => (await rows('pf_03:us:timer')).size, { timeout: 5_000 }).toBe(1);
    checks.checked('pf_03:us:timer-last', Date.parse('2026-05-01T12:00:01Z'), true);
    await checks.release();
    expect((await rows('pf_03:us:timer-last')).size).toBe(1);
  });

  it('the first success after a failure is written with the failure’s clearing', async () => {
    const target = 'pf_03:us:recovered';
    await recordFailure(db, { target, platform: 'pf_03', shard: 0, kind: 'blocked', failure: 'blocked', failures: 1, blockedUntil: null, message: '429' });
    expect((await db('monitor_target_status').where({ target }).first('last_failure'))?.last_failure).toBe('blocked');
    const at = new Date('2026-05-01T13:00:00Z');
    await clearStatus(db, target, at);
    expect(await db('monitor_target_status').where({ target }).first()).toBeUndefined();
    expect((await rows(target)).get(target)).toEqual({ at: at.getTime(), ok: true });
  });
});

describe('what recording checks costs', () => {
  it('at 1,000 targets polled every 5 s: one statement a second, against 200 for a write per poll', { timeout: 120_000 }, async () => {
    const TARGETS = 1_000;
    const PER_SECOND = TARGETS / 5;
    const SECONDS = 10;
    const key = (i: number) => `pf_05:us:cost-${i}`;
    const wal = async () => (await db.raw('SELECT pg_current_wal_insert_lsn() AS lsn')).rows[0].lsn as string;
    const walBytes = async (from: string) => Number((await db.raw('SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), ?) AS d', [from])).rows[0].d);

    // Batched, as the pollers do it: each second, the 200 targets polled in it, in one statement.
    const checks = new CheckLog(db, log);
    const t0 = Date.now();
    for (let i = 0; i < TARGETS; i++) checks.checked(key(i), t0, true);
    await checks.flush(); // every row exists (the steady state)
    const batchedFrom = await wal();
    const batchedMs: number[] = [];
    for (let s = 1; s <= SECONDS; s++) {
      for (let i = 0; i < PER_SECOND; i++) checks.checked(key(((s - 1) * PER_SECOND + i) % TARGETS), t0 + s * 1_000 + i, true);
      const started = performance.now();
      await checks.flush();
      batchedMs.push(performance.now() - started);
    }
    const batchedWal = await walBytes(batchedFrom);

    // The alternative: one upsert per poll.
    const perPollFrom = await wal();
    const perPollStarted = performance.now();
    for (let s = 1; s <= SECONDS; s++) {
      for (let i = 0; i < PER_SECOND; i++) {
        await db.raw(
          `INSERT INTO monitor_target_checks AS c (target, checked_at, ok) VALUES (?, ?, true)
           ON CONFLICT (target) DO UPDATE SET checked_at = EXCLUDED.checked_at, ok = true WHERE EXCLUDED.checked_at >= c.checked_at`,
          [key(((s - 1) * PER_SECOND + i) % TARGETS), new Date(t0 + 100_000 + s * 1_000 + i)],
        );
      }
    }
    const perPollMs = (performance.now() - perPollStarted) / SECONDS;
    const perPollWal = await walBytes(perPollFrom);

    const stats = (await db.raw(`SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'monitor_target_checks'`)).rows[0] as { n_tup_upd: string; n_tup_hot_upd: string };
    const sorted = [...batchedMs].sort((a, b) => a - b);
    const figures = {
      targets: TARGETS,
      polls_per_s: PER_SECOND,
      batched: {
        statements_per_s: (checks.statements - 1) / SECONDS,
        ms_per_s_median: Number(sorted[Math.floor(sorted.length / 2)]!.toFixed(2)),
        ms_per_s_max: Number(sorted.at(-1)!.toFixed(2)),
        wal_bytes_per_s: Math.round(batchedWal / SECONDS),
      },
      per_poll: { statements_per_s: PER_SECOND, ms_per_s: Number(perPollMs.toFixed(1)), wal_bytes_per_s: Math.round(perPollWal / SECONDS) },
      hot_update_share: Number((Number(stats.n_tup_hot_upd) / Math.max(1, Number(stats.n_tup_upd))).toFixed(2)),
    };
    process.stderr.write(`check log cost: ${JSON.stringify(figures)}\n`);
    expect(figures.batched.statements_per_s).toBe(1);
  });
});
