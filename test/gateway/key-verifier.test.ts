// The key cache against the real key store, on a clock the test moves: an entry is trusted for
// at most the TTL from when its lookup was sent; a key in use is refreshed in the background
// after half the TTL (so a revocation lands sooner and nobody waits on the store); many keys
// due at once are looked up in a few batched queries, not one query each, and refreshes due
// about together are gathered into one; a request is never held behind a refresh; and a store
// that cannot be reached fails closed once the entry is past its TTL.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { revokeKey } from '../../src/accounts/operations.ts';
import { KeyVerifier } from '../../src/gateway/key-verifier.ts';
import { databaseUrl, newAccount, type TestAccount } from '../support/harness.ts';

let db: Db;
let queries = 0;
/** Key lookups answered by the store (a background refresh is done once its answer is in). */
let answered = 0;
const isLookup = (q: { sql: string }) => /^select/i.test(q.sql) && q.sql.includes('"api_keys"');
/** Key lookups only (revocations and set-up also touch api_keys). */
const countQuery = (q: { sql: string }) => {
  if (isLookup(q)) queries++;
};
const countAnswer = (_r: unknown, q: { sql: string }) => {
  if (isLookup(q)) answered++;
};

beforeAll(() => {
  db = createDb({ connectionString: databaseUrl(), poolMax: 4 });
  db.on('query', countQuery).on('query-response', countAnswer);
});
afterAll(async () => {
  await db.destroy();
});

/**
 * A moment (~100 ms) for a background lookup that should not happen to show up. Where one should
 * happen, the tests wait for its answer first (lookupsAnswered): on a loaded machine a refresh
 * (its 50 ms gathering wait, a connection, the query) can take longer than this.
 */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((r) => setTimeout(r, 5));
}

/** Until `n` key lookups counted from `since` have been answered by the store. */
async function lookupsAnswered(since: number, n: number): Promise<void> {
  await vi.waitFor(() => expect(answered - since).toBeGreaterThanOrEqual(n), { timeout: 15_000, interval: 10 });
}

function clocked(ttlMs: number, store: Db = db) {
  const clock = { t: Date.now() };
  return { clock, keys: new KeyVerifier(store, ttlMs, () => clock.t) };
}

describe('KeyVerifier', () => {
  it('serves a fresh entry without a lookup, and refreshes a key in use after half its TTL', async () => {
    const a = await newAccount(db);
    const { clock, keys } = clocked(1_000);
    queries = 0;
    const answeredBefore = answered;
    expect((await keys.verify(a.key))?.keyId).toBe(a.keyId);
    expect(queries).toBe(1);

    clock.t += 400; // under half the TTL: cached, no lookup
    expect((await keys.verify(a.key))?.keyId).toBe(a.keyId);
    await settle();
    expect(queries).toBe(1);

    await revokeKey(db, a.keyId);
    clock.t += 200; // past half: still answered from the cache, and looked up in the background
    expect((await keys.verify(a.key))?.keyId).toBe(a.keyId);
    await lookupsAnswered(answeredBefore, 2);
    await settle();
    expect(queries).toBe(2);
    // The refresh saw the revocation: refused before the TTL of the first lookup ran out.
    clock.t += 10;
    expect(await keys.verify(a.key)).toBeNull();
  });

  it('never trusts an entry past its TTL: the request waits for a fresh lookup', async () => {
    const a = await newAccount(db);
    const { clock, keys } = clocked(1_000);
    expect((await keys.verify(a.key))?.keyId).toBe(a.keyId);
    await revokeKey(db, a.keyId);
    clock.t += 1_000;
    expect(await keys.verify(a.key)).toBeNull();
  });

  it('looks many due keys up in a few batched queries, and each gets its own answer', async () => {
    const accounts: TestAccount[] = [];
    for (let i = 0; i < 60; i++) accounts.push(await newAccount(db));
    const revoked = accounts.filter((_, i) => i % 7 === 0);
    for (const a of revoked) await revokeKey(db, a.keyId);
    const { keys } = clocked(1_000);
    queries = 0;
    // Every key at once, twice over (concurrent callers of one key share its lookup).
    const answers = await Promise.all([...accounts, ...accounts].map((a) => keys.verify(a.key)));
    expect(queries).toBeLessThanOrEqual(2);
    answers.forEach((p, i) => {
      const a = accounts[i % accounts.length]!;
      if (revoked.includes(a)) expect(p).toBeNull();
      else expect(p).toMatchObject({ keyId: a.keyId, accountId: a.accountId });
    });
  });

  it('gathers keys due for a refresh about together into one query', async () => {
    const accounts: TestAccount[] = [];
    for (let i = 0; i < 30; i++) accounts.push(await newAccount(db));
    const { clock, keys } = clocked(1_000);
    await Promise.all(accounts.map((a) => keys.verify(a.key)));
    clock.t += 600;
    queries = 0;
    const answeredBefore = answered;
    // One after another, as requests arrive: each answered from the cache at once.
    for (const a of accounts) expect((await keys.verify(a.key))?.keyId).toBe(a.keyId);
    expect(queries).toBe(0);
    // The gathered refresh has been answered; a second query, had the keys not been gathered,
    // would be sent by now or within the moment after.
    await lookupsAnswered(answeredBefore, 1);
    await settle();
    expect(queries).toBe(1);
  });

  it('a request for a key not cached is sent at once, not held behind a refresh in flight', async () => {
    const accounts: TestAccount[] = [];
    for (let i = 0; i < 30; i++) accounts.push(await newAccount(db));
    const cold = await newAccount(db);
    // Idle connections ready, so sending a query does not wait on a new connection.
    await Promise.all([1, 2, 3].map(() => db.raw('SELECT 1')));
    const { clock, keys } = clocked(1_000);
    await Promise.all(accounts.map((a) => keys.verify(a.key)));
    clock.t += 600;

    const order: string[] = [];
    let refreshUid: string | undefined;
    let coldAnswer: Promise<unknown> | undefined;
    const onQuery = (q: { sql: string; __knexQueryUid: string }) => {
      if (!/^select/i.test(q.sql) || !q.sql.includes('"api_keys"')) return;
      if (!refreshUid) {
        refreshUid = q.__knexQueryUid;
        order.push('refresh sent');
        coldAnswer = keys.verify(cold.key); // arrives while the refresh is in flight
      } else order.push('request sent');
    };
    const onResponse = (_r: unknown, q: { __knexQueryUid: string }) => {
      if (q.__knexQueryUid === refreshUid) order.push('refresh answered');
    };
    db.on('query', onQuery).on('query-response', onResponse);
    try {
      for (const a of accounts) await keys.verify(a.key); // each due for a refresh
      await settle();
      expect(await coldAnswer).toMatchObject({ keyId: cold.keyId });
      // The refresh's answer may still be on its way on a loaded machine (100 ms was not always
      // enough): what matters is that the request was sent before it, so wait for it.
      const deadline = Date.now() + 30_000;
      while (!order.includes('refresh answered') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    } finally {
      db.off('query', onQuery).off('query-response', onResponse);
    }
    expect(order).toEqual(['refresh sent', 'request sent', 'refresh answered']);
  });

  it('keeps answering from the cache while a background refresh fails, then fails closed past the TTL', async () => {
    const a = await newAccount(db);
    const store = createDb({ connectionString: databaseUrl(), poolMax: 2 });
    const { clock, keys } = clocked(1_000, store);
    expect((await keys.verify(a.key))?.keyId).toBe(a.keyId);
    await store.destroy(); // the key store is gone from here on
    clock.t += 600;
    expect((await keys.verify(a.key))?.keyId).toBe(a.keyId);
    await settle();
    clock.t += 500;
    await expect(keys.verify(a.key)).rejects.toThrow();
  });

  it('an expired key is refused from the cache at its expires_at', async () => {
    const { clock, keys } = clocked(60_000);
    const a = await newAccount(db, { expiresAt: new Date(clock.t + 300) });
    expect((await keys.verify(a.key))?.keyId).toBe(a.keyId);
    clock.t += 300;
    expect(await keys.verify(a.key)).toBeNull();
  });
});
