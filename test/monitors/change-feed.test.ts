// A change feed that yields to bulk imports (src/monitors/change-feed.ts, `yieldToImports`; the
// monitor relay's, issue 40). On a database of its own, so the test's writes are the only ones,
// and with the consumer held between batches, so what each batch finds waiting is the test's
// doing: while the changes waiting grow from batch to batch past the threshold, the feed applies
// its floor rate, one small batch a second; once they stop growing it is back at full speed;
// every change the API wrote is applied exactly once (the ground truth: the ids it answered).
// The same steps through a feed that does not yield show the check can fail.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { inParallel, startChangeFeed, type ChangeFeedOptions, type ChangeRow } from '../../src/monitors/change-feed.ts';
import { createLogger } from '../../src/logger.ts';
import { databaseUrl, eventually, newAccount, startTestGateway, type TestAccount, type TestGateway } from '../support/harness.ts';
import { createItem } from '../apis/watchlist/helpers.ts';

let scratch: ScratchDatabase;
let gw: TestGateway;
let acct: TestAccount;

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_test_feed', databaseUrl());
  gw = await startTestGateway({ env: { DATABASE_URL: scratch.url } });
  acct = await newAccount(gw.db);
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await scratch?.drop();
});

const YIELD = { backlog: 20, perSecond: 2 };

async function write(n: number): Promise<number[]> {
  const ids: number[] = [];
  await inParallel(
    Array.from({ length: n }, (_, i) => i),
    4,
    async (i) => {
      ids.push((await createItem(gw.url, acct.key, { notes: `import ${i}`, task_active: false })).id);
    },
  );
  return ids;
}

interface Batch {
  at: number;
  ids: number[];
}

/**
 * An import in three waves, each written while the feed is held on the batch before: 30 items,
 * then 40 (more waiting than before: an import outpaces the feed), then 50 (more again), then
 * nothing (the waiting changes stop growing).
 */
async function importInWaves(yieldToImports: ChangeFeedOptions['yieldToImports']) {
  const cursor = `test-yield-${Date.now()}`;
  const head = Number((await gw.db('watchlist_changes').max('id as m').first())?.m ?? 0);
  await gw.db('relay_cursors').insert({ name: cursor, last_id: head });
  const batches: Batch[] = [];
  let hold: Promise<void> = Promise.resolve();
  let release = () => {};
  const holdNext = () => {
    hold = new Promise((r) => (release = r));
  };
  const created = await write(30);
  holdNext();
  const feed = startChangeFeed({
    db: gw.db,
    connectionString: scratch.url,
    cursor,
    log: createLogger('silent'),
    yieldToImports,
    apply: async (changes: ChangeRow[]) => {
      batches.push({ at: performance.now(), ids: changes.map((c) => c.item_id) });
      await hold;
    },
  });
  try {
    for (const wave of [40, 50]) {
      const seen = batches.length;
      await eventually(async () => (batches.length > seen ? true : undefined), 10_000);
      created.push(...(await write(wave)));
      const held = release;
      holdNext();
      held();
    }
    release();
    hold = Promise.resolve();
    await eventually(async () => (batches.flatMap((b) => b.ids).length >= created.length ? true : undefined), 60_000);
    return { created, batches };
  } finally {
    release();
    await feed.stop();
  }
}

describe('a change feed that yields to imports', { timeout: 120_000 }, () => {
  it('applies its floor rate while the import outpaces it, full speed once it stops, each change once', async () => {
    const { created, batches } = await importInWaves(YIELD);
    expect([...batches.flatMap((b) => b.ids)].sort((a, b) => a - b)).toEqual([...created].sort((a, b) => a - b));
    const sizes = batches.map((b) => b.ids.length);
    // 30, then 40 (grown: yield from here on), then the floor while the 50 of the third wave
    // are still more than before, then full speed for the rest once they stop growing.
    expect(sizes.slice(0, 2)).toEqual([30, 40]);
    expect(sizes[2]).toBe(YIELD.perSecond);
    expect(batches[3]!.at - batches[2]!.at).toBeGreaterThanOrEqual(900);
    expect(sizes.slice(3).some((n) => n > YIELD.perSecond)).toBe(true);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(120);
  });

  it('a feed that does not yield takes each wave whole (the check above can fail)', async () => {
    const { created, batches } = await importInWaves(undefined);
    expect([...batches.flatMap((b) => b.ids)].sort((a, b) => a - b)).toEqual([...created].sort((a, b) => a - b));
    expect(batches.map((b) => b.ids.length)).toEqual([30, 40, 50]);
  });
});
