// A process frozen inside a transaction (SIGSTOP, a paused VM) must not keep its locks: every
// session of ours carries idle_in_transaction_session_timeout (db/connection.ts), so the server
// ends a session left idle mid-transaction and another process can take what it held. Found by
// test/faults/paused-worker.test.ts in a full run: a shard poller frozen inside a poll's
// transaction kept its target's advisory lock, and the worker that took the shard over could
// record nothing of that target until the frozen one woke.
import { afterAll, describe, expect, it } from 'vitest';
import { createDb, IDLE_IN_TRANSACTION_MS, type Db } from '../../db/connection.ts';
import { createPool } from '../../db/pool.ts';
import { databaseUrl } from '../support/harness.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const opened: Db[] = [];
const open = (idleInTransactionTimeoutMs?: number) => {
  const db = createDb({ connectionString: databaseUrl(), poolMax: 2, idleInTransactionTimeoutMs });
  opened.push(db);
  return db;
};
afterAll(async () => {
  await Promise.all(opened.map((db) => db.destroy()));
});

/**
 * Holds advisory lock `key` in a transaction that then sits idle for `idleMs`. `locked` settles
 * once the lock is taken; `ended` with how the transaction ended.
 */
function holdIdle(db: Db, key: number, idleMs: number): { locked: Promise<void>; ended: Promise<'committed' | 'ended by the server'> } {
  let taken!: () => void;
  const locked = new Promise<void>((r) => (taken = r));
  const ended = db
    .transaction(async (trx) => {
      await trx.raw('SELECT pg_advisory_xact_lock(?)', [key]);
      taken();
      await sleep(idleMs);
      await trx.raw('SELECT 1');
    })
    .then(
      () => 'committed' as const,
      () => 'ended by the server' as const,
    );
  return { locked, ended };
}

/** ms until another session gets lock `key`, trying every 100 ms for up to `withinMs` (null: never). */
async function msUntilFree(db: Db, key: number, withinMs: number): Promise<number | null> {
  const from = Date.now();
  while (Date.now() - from < withinMs) {
    const got = await db.transaction(async (trx) => ((await trx.raw('SELECT pg_try_advisory_xact_lock(?) AS got', [key])) as { rows: { got: boolean }[] }).rows[0]!.got);
    if (got) return Date.now() - from;
    await sleep(100);
  }
  return null;
}

describe('a session idle inside a transaction', () => {
  it('every pool of ours sets the timeout: knex and the gateway pool', async () => {
    const { rows } = (await open().raw('SHOW idle_in_transaction_session_timeout')) as { rows: { idle_in_transaction_session_timeout: string }[] };
    expect(rows[0]!.idle_in_transaction_session_timeout).toBe(`${IDLE_IN_TRANSACTION_MS / 1000}s`);
    const pool = createPool({ connectionString: databaseUrl(), max: 1 });
    try {
      const shown = await pool.query<{ idle_in_transaction_session_timeout: string }>('SHOW idle_in_transaction_session_timeout');
      expect(shown.rows[0]!.idle_in_transaction_session_timeout).toBe(`${IDLE_IN_TRANSACTION_MS / 1000}s`);
    } finally {
      await pool.end();
    }
  });

  it('is ended by the server once idle past the timeout, and its lock is free for others at once', async () => {
    const key = 880_000_000 + Math.floor(Math.random() * 1_000_000);
    const frozen = holdIdle(open(1_000), key, 4_000);
    await frozen.locked;
    const freeAfter = await msUntilFree(open(), key, 3_500);
    expect(freeAfter, 'the lock stayed held').not.toBeNull();
    expect(freeAfter!).toBeLessThan(2_500);
    expect(await frozen.ended).toBe('ended by the server');
  });

  it('without the timeout the lock stays held for as long as the session idles (what the setting prevents)', async () => {
    const key = 890_000_000 + Math.floor(Math.random() * 1_000_000);
    const frozen = holdIdle(open(0), key, 3_000);
    await frozen.locked;
    expect(await msUntilFree(open(), key, 2_000)).toBeNull();
    expect(await frozen.ended).toBe('committed');
  });
});
