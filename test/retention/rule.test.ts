// How a rule is run: batch after batch until none is left, a deadline, or a stop; and never by
// two processes on one table at once (the second leaves it to the first for this tick). Also the
// rate-limit windows' rule, the simplest one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { rateLimitWindowsRule } from '../../src/retention/rate-limit-windows.ts';
import { deleteRule, pruneTable } from '../../src/retention/rule.ts';
import { databaseUrl } from '../support/harness.ts';

let scratch: ScratchDatabase;
let db: Db;

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_retention_rule', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 4 });
});

afterAll(async () => {
  await db?.destroy();
  await scratch?.drop();
});

const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000);

async function addWindows(count: number, ageMinutes: number, prefix: string): Promise<void> {
  await db('rate_limit_windows').insert(Array.from({ length: count }, (_, i) => ({ subject: `${prefix}${i}`, window_start: minutesAgo(ageMinutes), hits: 1 })));
}

describe('pruneTable', () => {
  it('stops at the deadline (after one batch at least) and goes on at the next call; stops when told to', async () => {
    await db('rate_limit_windows').delete();
    await addWindows(50, 10, 'old-');
    const rule = rateLimitWindowsRule();
    expect(await pruneTable(db, rule, { batchSize: 10, deadline: Date.now() - 1 })).toMatchObject({ deleted: 10, done: false, batches: 1 });
    let checks = 0;
    expect(await pruneTable(db, rule, { batchSize: 10, stopped: () => ++checks > 2 })).toMatchObject({ deleted: 20, done: false, batches: 2 });
    expect(await pruneTable(db, rule, { batchSize: 10 })).toMatchObject({ deleted: 20, done: true, batches: 3 });
  });

  it('leaves a table to the process already pruning it', async () => {
    let entered: () => void = () => {};
    const inside = new Promise<void>((r) => (entered = r));
    let release: () => void = () => {};
    const held = new Promise<void>((r) => (release = r));
    const slow = deleteRule('rate_limit_windows', 10, () => ({ sql: 'SELECT 1', bindings: [] }));
    const blocking = { ...slow, batch: async () => (entered(), await held, { deleted: 0, more: false }) };
    const first = pruneTable(db, blocking);
    await inside;
    // The same table's rule, from another process (another connection): busy, nothing done.
    expect(await pruneTable(db, rateLimitWindowsRule())).toMatchObject({ busy: true, done: false, batches: 0 });
    release();
    expect(await first).toMatchObject({ busy: false, done: true, batches: 1 });
  });
});

describe('rate_limit_windows retention', () => {
  it('removes windows that ended more than a minute ago, keeps the current and the previous one', async () => {
    await db('rate_limit_windows').delete();
    await addWindows(12, 3, 'old-');
    await addWindows(3, 1, 'previous-');
    await addWindows(4, 0, 'current-');
    expect(await pruneTable(db, rateLimitWindowsRule(), { batchSize: 5 })).toMatchObject({ deleted: 12, done: true });
    expect(Number((await db('rate_limit_windows').count({ n: '*' }).first())!.n)).toBe(7);
  });
});
