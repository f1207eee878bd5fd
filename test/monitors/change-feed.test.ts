// A change feed that yields to bulk imports (src/monitors/change-feed.ts, `yieldToImports`; the
// monitor relay's, issue 40), and one that gathers the writes of a short gap into one batch
// (`gatherMs`; the membership relay's). On a database of its own, so the test's writes are the
// only ones, and with the consumer held between batches, so what each batch finds is the test's
// doing: from the batch that sees more than `burst` changes written within a second, the feed
// applies its floor rate, one small batch a second; once the writes stop it is back at full
// speed; every change the API wrote is applied exactly once (the ground truth: the ids it
// answered). The same steps through a feed that does not yield, or does not gather, show the
// checks can fail.
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

const YIELD = { burst: 20, perSecond: 2 };

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

/** A consumer's cursor of its own, past every change written so far. */
async function cursorAtHead(name: string): Promise<string> {
  const cursor = `test-${name}-${Date.now()}`;
  const head = Number((await gw.db('watchlist_changes').max('id as m').first())?.m ?? 0);
  await gw.db('relay_cursors').insert({ name: cursor, last_id: head });
  return cursor;
}

interface Batch {
  at: number;
  ids: number[];
}

/**
 * An import in three waves: 30 items before the feed starts (it has no earlier reading of the
 * log, so it cannot tell an import), then 40 and 50, each written while the feed is held on the
 * batch before (more than `burst` written since its last reading), then nothing.
 */
async function importInWaves(yieldToImports: ChangeFeedOptions['yieldToImports']) {
  const cursor = await cursorAtHead('yield');
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
  it('applies its floor rate from the batch that sees an import being written, full speed once it stops, each change once', async () => {
    const { created, batches } = await importInWaves(YIELD);
    expect([...batches.flatMap((b) => b.ids)].sort((a, b) => a - b)).toEqual([...created].sort((a, b) => a - b));
    const sizes = batches.map((b) => b.ids.length);
    // 30 (nothing read before), then the floor while 40 and then 50 more were written since the
    // last reading, a second apart, then full speed for the rest once the writes have stopped.
    expect(sizes.slice(0, 3)).toEqual([30, YIELD.perSecond, YIELD.perSecond]);
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

/** Writes `n` items one at a time, `gapMs` apart; answers their ids and when each was answered. */
async function trickle(n: number, gapMs: number): Promise<{ ids: number[]; at: number[] }> {
  const ids: number[] = [];
  const at: number[] = [];
  for (let i = 0; i < n; i++) {
    ids.push((await createItem(gw.url, acct.key, { notes: `trickle ${i}`, task_active: false })).id);
    at.push(performance.now());
    await new Promise((r) => setTimeout(r, gapMs));
  }
  return { ids, at };
}

async function feedThrough(gatherMs: number | undefined) {
  const cursor = await cursorAtHead('gather');
  const batches: Batch[] = [];
  const feed = startChangeFeed({
    db: gw.db,
    connectionString: scratch.url,
    cursor,
    log: createLogger('silent'),
    gatherMs,
    apply: async (changes: ChangeRow[]) => {
      batches.push({ at: performance.now(), ids: changes.map((c) => c.item_id) });
    },
  });
  try {
    // A quiet spell longer than the gap, then one write, then a burst of writes 20 ms apart.
    await new Promise((r) => setTimeout(r, 1_000));
    const first = await trickle(1, 0);
    await eventually(async () => (batches.some((b) => b.ids.includes(first.ids[0]!)) ? true : undefined), 10_000);
    const seen = batches.length;
    const burst = await trickle(12, 20);
    await eventually(async () => (batches.flatMap((b) => b.ids).length >= 13 ? true : undefined), 10_000);
    return { first, burst, batches, burstBatches: batches.slice(seen) };
  } finally {
    await feed.stop();
  }
}

describe('a change feed that gathers a gap of writes into one batch', { timeout: 60_000 }, () => {
  const GATHER_MS = 400;

  it('reads a write after a quiet spell within the gap, and a burst of writes in few batches a gap apart, each once', async () => {
    const { first, burst, batches, burstBatches } = await feedThrough(GATHER_MS);
    expect(batches.flatMap((b) => b.ids).sort((a, b) => a - b)).toEqual([...first.ids, ...burst.ids].sort((a, b) => a - b));
    const firstBatch = batches.find((b) => b.ids.includes(first.ids[0]!))!;
    expect(firstBatch.at - first.at[0]!).toBeLessThan(GATHER_MS + 300);
    // 12 writes over ~0.4-0.6 s: a handful of batches, however the gap falls.
    expect(burstBatches.length).toBeLessThanOrEqual(4);
    for (let i = 1; i < burstBatches.length; i++) expect(burstBatches[i]!.at - burstBatches[i - 1]!.at).toBeGreaterThanOrEqual(GATHER_MS - 150);
  });

  it('a feed that does not gather reads the same burst in many batches (the check above can fail)', async () => {
    const { burstBatches } = await feedThrough(undefined);
    expect(burstBatches.length).toBeGreaterThan(4);
  });
});
