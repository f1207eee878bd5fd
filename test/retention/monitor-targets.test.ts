// What the monitors keep of targets nobody watches: their snapshots, their failure status and
// their last check go once past MONITOR_UNWATCHED_RETENTION_HOURS; a watched target keeps all three,
// however old.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { monitorTargetChecksRule, monitorTargetStatusRule, targetSnapshotsRule } from '../../src/retention/monitor-targets.ts';
import { pruneTable } from '../../src/retention/rule.ts';
import { databaseUrl } from '../support/harness.ts';

let scratch: ScratchDatabase;
let db: Db;

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_retention_monitors', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 2 });
  // One item watches `watched`; nobody watches `unwatched` or `recent` any more.
  await db('monitor_members').insert({
    item_id: 1,
    account_id: 1,
    target: 'pf_03:us:watched',
    platform: 'pf_03',
    shard: 0,
    ref: JSON.stringify({}),
    item: JSON.stringify({}),
    config: JSON.stringify({}),
    version: 1,
  });
});

afterAll(async () => {
  await db?.destroy();
  await scratch?.drop();
});

const HOUR = 3_600_000;
const hoursAgo = (h: number) => new Date(Date.now() - h * HOUR);

describe('target_snapshots of unwatched targets', () => {
  it('removes the snapshots of targets no member watches once they are older than the retention', async () => {
    const add = async (target: string, ages: number[]) =>
      (await db('target_snapshots').insert(ages.map((h, i) => ({ target, hash: `${target}-${i}`, data: '{}', scraped_at: hoursAgo(h) }))).returning('id')).map((r) =>
        Number(r.id),
      );
    const watched = await add('pf_03:us:watched', [200, 100, 30, 1]);
    await add('pf_03:us:unwatched', [200, 100, 30, 25]);
    const recent = await add('pf_03:us:recent', [30, 23, 2]);

    const result = await pruneTable(db, targetSnapshotsRule({ retentionHours: 24 }), { batchSize: 2 });
    expect(result).toMatchObject({ deleted: 5, done: true });
    const left = (await db('target_snapshots').orderBy('id').select('id')).map((r) => Number(r.id));
    expect(left).toEqual([...watched, ...recent.slice(1)]);
  });
});

describe('monitor_target_status of unwatched targets', () => {
  it('removes the status of a target no member watches once it was not written for the retention', async () => {
    const status = (target: string, hours: number) => ({ target, platform: 'pf_03', shard: 0, kind: 'failing', failures: 3, last_error: 'HTTP 500', since: hoursAgo(hours), updated_at: hoursAgo(hours) });
    await db('monitor_target_status').insert([status('pf_03:us:watched', 500), status('pf_03:us:unwatched', 25), status('pf_03:us:recent', 23)]);

    const result = await pruneTable(db, monitorTargetStatusRule({ retentionHours: 24 }));
    expect(result).toMatchObject({ deleted: 1, done: true });
    expect((await db('monitor_target_status').orderBy('target').select('target')).map((r) => r.target)).toEqual(['pf_03:us:recent', 'pf_03:us:watched']);
  });
});

describe('monitor_target_checks of unwatched targets', () => {
  it('removes the last check of a target no member watches once it is older than the retention', async () => {
    const check = (target: string, hours: number) => ({ target, checked_at: hoursAgo(hours), ok: true });
    await db('monitor_target_checks').insert([check('pf_03:us:watched', 500), check('pf_03:us:unwatched', 25), check('pf_03:us:recent', 23)]);

    const result = await pruneTable(db, monitorTargetChecksRule({ retentionHours: 24 }));
    expect(result).toMatchObject({ deleted: 1, done: true });
    expect((await db('monitor_target_checks').orderBy('target').select('target')).map((r) => r.target)).toEqual(['pf_03:us:recent', 'pf_03:us:watched']);
  });
});
