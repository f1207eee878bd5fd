// The not-found clock and the retirement in monitor_target_status (src/monitors/target-status.ts),
// against a real PostgreSQL: a not-found answer starts the clock and later ones keep its start;
// failures that say nothing about the event leave it; another answer about the event stops it;
// it lives in the database, so whoever writes next reads the same start. A retirement tells each
// item on the target once (a `target_retired` log row), never twice, and again only after the
// target came back and was retired anew.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { clearStatus, recordFailure, retireTarget, type TargetFailure } from '../../src/monitors/target-status.ts';
import { databaseUrl, newAccount } from '../support/harness.ts';
import type { IncidentRule } from '../../src/monitors/platform-incidents.ts';
import { insertWatchlistItem } from '../support/watchlist-rows.ts';

let scratch: ScratchDatabase;
let db: Db;

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_target_status', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 2 });
});

afterAll(async () => {
  await db?.destroy();
  await scratch?.drop();
});

const failure = (target: string, kind: TargetFailure['failure'], failures = 1): TargetFailure => ({
  target,
  platform: 'pf_03',
  shard: 0,
  kind: kind === 'blocked' ? 'blocked' : 'failing',
  failure: kind,
  failures,
  blockedUntil: null,
  message: `${kind} answer`,
});

/** An item of `accountId` watching `target`, and its member row; returns the item's id. */
async function member(accountId: number, target: string): Promise<number> {
  const item = { website: 'pf_03', event: `https://pf03.example/e/${target.split(':')[2]}`, region: 'us' };
  const { id } = await insertWatchlistItem(db, { accountId, ...item });
  await db('monitor_members').insert({
    item_id: id,
    account_id: accountId,
    target,
    platform: 'pf_03',
    shard: 0,
    ref: JSON.stringify({}),
    item: JSON.stringify(item),
    config: JSON.stringify({}),
    version: 1,
  });
  return id;
}

describe('the not-found clock', () => {
  it('starts at the first not-found answer and keeps its start; transient failures leave it; another answer stops it', async () => {
    const t = 'pf_03:us:clock';
    expect(await recordFailure(db, failure(t, 'upstream'))).toEqual({ notFoundSince: null, notFoundMs: null });
    const first = await recordFailure(db, failure(t, 'not_found', 2));
    expect(first.notFoundSince).toBeInstanceOf(Date);
    expect(first.notFoundMs).toBeGreaterThanOrEqual(0);
    // As if the clock had run for an hour: the next reader (any worker) sees it, from the database.
    await db('monitor_target_status').where({ target: t }).update({ not_found_since: db.raw("now() - interval '1 hour'") });
    for (const kind of ['not_found', 'attempt_timeout', 'blocked', 'internal'] as const) {
      const read = await recordFailure(db, failure(t, kind, 3));
      expect(read.notFoundMs, kind).toBeGreaterThanOrEqual(3_600_000);
      expect(read.notFoundMs, kind).toBeLessThan(3_660_000);
    }
    expect(await recordFailure(db, failure(t, 'malformed', 4))).toEqual({ notFoundSince: null, notFoundMs: null });
    const again = await recordFailure(db, failure(t, 'not_found', 5));
    expect(again.notFoundMs).toBeLessThan(60_000);
    await clearStatus(db, t);
    expect(await db('monitor_target_status').where({ target: t }).first()).toBeUndefined();
  });
});

const RULE: IncidentRule = { share: 0.5, minTargets: 5, windowMs: 120_000 };

describe('retirement', () => {
  it('tells each item on the target once, and marks the target retired', async () => {
    const t = 'pf_03:us:gone';
    const [a, b] = [(await newAccount(db)).accountId, (await newAccount(db)).accountId];
    const first = await member(a, t);
    const second = await member(b, t);
    await member(a, 'pf_03:us:other');
    const { notFoundSince } = await recordFailure(db, failure(t, 'not_found'));
    expect(await retireTarget(db, t, notFoundSince!, RULE)).toEqual({ retired: true, told: 2, held: false });
    // A second retirement (a poll in flight, another worker) writes nothing.
    expect(await retireTarget(db, t, notFoundSince!, RULE)).toEqual({ retired: false, told: 0, held: false });
    const rows = await db('notifications').where({ kind: 'target_retired' }).orderBy('id').select('account_id', 'item_id', 'payload');
    expect(rows.map((r) => [Number(r.account_id), Number(r.item_id)])).toEqual([
      [a, first],
      [b, second],
    ]);
    expect(rows[0].payload).toMatchObject({
      item_id: first,
      platform: 'pf_03',
      event: 'https://pf03.example/e/gone',
      region: 'us',
      reason: 'not_found',
      not_found_since: notFoundSince!.toISOString(),
      retired_at: expect.any(String),
      message: expect.stringMatching(/not found.*no longer checked/),
    });
    const status = await db('monitor_target_status').where({ target: t }).first();
    expect(status).toMatchObject({ kind: 'retired', retired_at: expect.any(Date) });
    // A retired target's row outlives a success of a poll still in flight.
    await clearStatus(db, t);
    expect(await db('monitor_target_status').where({ target: t }).first()).toBeDefined();
    // Brought back (its row cleared by the poller's reload), and retired again: told once more.
    await db('monitor_target_status').where({ target: t }).delete();
    const later = await recordFailure(db, failure(t, 'not_found'));
    expect(await retireTarget(db, t, later.notFoundSince!, RULE)).toEqual({ retired: true, told: 2, held: false });
    expect(Number((await db('notifications').where({ kind: 'target_retired' }).count({ n: '*' }))[0]!.n)).toBe(4);
  });
});
