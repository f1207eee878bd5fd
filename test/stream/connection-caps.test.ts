// Open stream connections are capped per key and per account, counted over every node (issue
// 25): two real stream nodes on one database, real `ws` clients. Each test writes down the
// connections it holds (its own ground truth) and checks every upgrade's answer against it; the
// stream_connections table is read only to wait for a close to have been counted.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../src/accounts/operations.ts';
import { randomUUID } from 'node:crypto';
import { eventually, newAccount, type TestAccount } from '../support/harness.ts';
import { Client, connect, refusal, startNode, type TestNode } from './helpers.ts';

const PER_KEY = 3;
const PER_ACCOUNT = 5;
const env = { STREAM_MAX_CONNECTIONS_PER_KEY: String(PER_KEY), STREAM_MAX_CONNECTIONS_PER_ACCOUNT: String(PER_ACCOUNT) };

let a: TestNode;
let b: TestNode;
const open: Client[] = [];

beforeAll(async () => {
  a = await startNode({ env });
  b = await startNode({ env, db: a.db });
});
afterAll(async () => {
  for (const c of open) c.close();
  await b?.close();
  await a?.close();
});

async function hold(node: TestNode, key: string): Promise<Client> {
  const c = await connect(node.url, { key });
  open.push(c);
  return c;
}

async function refused(node: TestNode, key: string): Promise<string> {
  const r = await refusal(node.url, { apikey: key });
  expect(r.status).toBe(429);
  expect(Object.keys(r.body)).toEqual(['error']);
  expect(r.body.error.code).toBe('too_many_connections');
  return r.body.error.message as string;
}

/** Until the database counts `n` open connections of this key (a close is given back asynchronously). */
async function counted(keyId: string, n: number): Promise<void> {
  await eventually(async () => (Number((await a.db('stream_connections').where({ key_id: keyId }).count('* as n'))[0]!.n) === n ? true : undefined));
}

async function closeAndCount(c: Client, keyId: string, n: number): Promise<void> {
  c.close();
  await c.closed;
  await counted(keyId, n);
}

async function secondKey(acct: TestAccount, streamConnectionLimit?: number) {
  return createKey(a.db, { accountId: acct.accountId, rateLimitPerMinute: 10_000, streamConnectionLimit });
}

describe('open stream connections', () => {
  it('a key holds at most its cap, counted over both nodes; a closed connection gives its slot back', async () => {
    const acct = await newAccount(a.db);
    const held = [await hold(a, acct.key), await hold(b, acct.key), await hold(a, acct.key)];
    expect(await refused(a, acct.key)).toMatch(/^this key already holds 3 open stream connections, its limit of 3/);
    await refused(b, acct.key);
    // The refusals held nothing: one close makes room for exactly one.
    await closeAndCount(held[1]!, acct.keyId, 2);
    await hold(b, acct.key);
    await refused(a, acct.key);
  });

  it("an account holds at most its cap over all its keys; another account is not touched", async () => {
    const acct = await newAccount(a.db);
    const other = await secondKey(acct);
    for (let i = 0; i < PER_KEY; i++) await hold(i % 2 ? a : b, acct.key);
    await hold(a, other.key);
    await hold(b, other.key);
    expect(await refused(a, other.key)).toMatch(/^this account \(all its keys together\) already holds 5 open stream connections, its limit of 5/);
    const third = await secondKey(acct);
    await refused(b, third.key);
    const stranger = await newAccount(a.db);
    await hold(a, stranger.key);
  });

  it("a key's own limit replaces the default, lower or higher", async () => {
    const acct = await newAccount(a.db);
    const one = await secondKey(acct, 1);
    await hold(a, one.key);
    expect(await refused(b, one.key)).toMatch(/its limit of 1;/);
    const four = await secondKey(acct, 4);
    for (let i = 0; i < 4; i++) await hold(i % 2 ? a : b, four.key);
    await refused(a, four.key);
  });

  it('upgrades racing on both nodes never take more than the cap', async () => {
    const acct = await newAccount(a.db);
    const attempts = Array.from({ length: 16 }, (_, i) => {
      const c = new Client((i % 2 ? a : b).url, { key: acct.key });
      open.push(c);
      return c.opened.then(
        () => 'admitted',
        (err: Error) => err.message,
      );
    });
    const answers = await Promise.all(attempts);
    expect(answers.filter((x) => x === 'admitted')).toHaveLength(PER_KEY);
    expect(answers.filter((x) => x === 'refused with 429')).toHaveLength(16 - PER_KEY);
  });

  it('a storm of upgrades of many accounts at once on both nodes (batches locking several accounts each): every cap holds exactly, and no batch deadlocks', async () => {
    const accounts = await Promise.all(Array.from({ length: 6 }, () => newAccount(a.db)));
    const seconds = await Promise.all(accounts.map((acct) => secondKey(acct)));
    // Per account: 6 upgrades on each of its two keys, over both nodes, all in flight together.
    const attempts = accounts.flatMap((acct, n) =>
      Array.from({ length: 12 }, (_, i) => {
        const key = i % 2 ? acct.key : seconds[n]!.key;
        const c = new Client((i + n) % 2 ? a.url : b.url, { key });
        open.push(c);
        return c.opened.then(
          () => ({ account: acct.accountId, key, admitted: true }),
          (err: Error) => {
            expect(err.message).toBe('refused with 429');
            return { account: acct.accountId, key, admitted: false };
          },
        );
      }),
    );
    const answers = await Promise.all(attempts);
    for (const acct of accounts) {
      const mine = answers.filter((x) => x.admitted && x.account === acct.accountId);
      // The account's cap binds before either key's: exactly PER_ACCOUNT, at most PER_KEY per key.
      expect(mine).toHaveLength(PER_ACCOUNT);
      for (const key of new Set(mine.map((x) => x.key))) expect(mine.filter((x) => x.key === key).length).toBeLessThanOrEqual(PER_KEY);
      const rows = Number((await a.db('stream_connections').where({ account_id: acct.accountId }).count('* as n'))[0]!.n);
      expect(rows).toBe(PER_ACCOUNT);
    }
  });

  it("a node that went silent (died) stops counting: its connections' slots are free again", async () => {
    const acct = await newAccount(a.db);
    const c = await startNode({ env, db: a.db });
    try {
      for (let i = 0; i < PER_KEY; i++) await hold(c, acct.key);
      await refused(a, acct.key);
      const node = (await a.db('stream_connections').where({ key_id: acct.keyId }).first('node_id'))!.node_id as string;
      // As if it had not touched its row for a minute; its own 5 s touch may land in between, so retried.
      await eventually(async () => {
        await a.db('stream_nodes').where({ node_id: node }).update({ seen_at: a.db.raw("now() - interval '1 minute'") });
        const r = await refusal(a.url, { apikey: acct.key }).catch(() => null);
        return r === null ? true : undefined;
      });
    } finally {
      await c.close();
    }
  });

  it('property: for any sequence of opens and closes on either node, each upgrade is admitted exactly when both caps have room', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.record({ close: fc.boolean(), key: fc.nat(1), node: fc.nat(1), which: fc.nat() }), { minLength: 1, maxLength: 9 }), async (ops) => {
        const acct = await newAccount(a.db);
        const second = await secondKey(acct);
        const keys = [
          { key: acct.key, keyId: acct.keyId },
          { key: second.key, keyId: second.key_id },
        ];
        const mine: { client: Client; key: number }[] = [];
        try {
          for (const op of ops) {
            if (op.close && mine.length) {
              const [gone] = mine.splice(op.which % mine.length, 1);
              await closeAndCount(gone!.client, keys[gone!.key]!.keyId, mine.filter((m) => m.key === gone!.key).length);
              continue;
            }
            const node = op.node ? b : a;
            const ofKey = mine.filter((m) => m.key === op.key).length;
            const room = ofKey < PER_KEY && mine.length < PER_ACCOUNT;
            if (room) mine.push({ client: await connect(node.url, { key: keys[op.key]!.key }), key: op.key });
            else await refused(node, keys[op.key]!.key);
          }
        } finally {
          for (const m of mine) m.client.close();
        }
      }),
      { numRuns: 12 },
    );
  });
});

describe("a batch's decisions (stream_admit, db/migrations/037)", () => {
  // The function is called directly with made-up batches over rows the test wrote itself: the
  // expected answer of each upgrade is computed here, in order, from what the test put in the
  // tables (its ground truth), never read back from the function's own view.
  it('property: each upgrade, in order, gets the next hit of its window; within its limit and asking, it is admitted exactly when its key and its account have room (a full key named first); admitted rows are written, no others', async () => {
    const live = `test-live-${randomUUID()}`;
    const dead = `test-dead-${randomUUID()}`;
    await a.db('stream_nodes').insert([{ node_id: live }, { node_id: dead, seen_at: a.db.raw("now() - interval '1 hour'") }]);
    const window = new Date(Math.floor(Date.now() / 60_000) * 60_000);
    try {
      await fc.assert(
        fc.asyncProperty(
          // Per key: slots open before (on a live node, and on a dead one, which must not count) and hits already in the window.
          fc.array(fc.record({ live: fc.nat(4), dead: fc.nat(3), hits: fc.nat(6) }), { minLength: 4, maxLength: 4 }),
          fc.array(
            fc.record({ key: fc.nat(3), rateLimit: fc.integer({ min: 1, max: 12 }), want: fc.boolean(), keyCap: fc.integer({ min: 0, max: 6 }), accountCap: fc.integer({ min: 0, max: 9 }) }),
            { minLength: 1, maxLength: 30 },
          ),
          async (before, batch) => {
            // Two accounts of two keys each: keys 0 and 1 are the first account's, 2 and 3 the second's.
            const accounts = [Number(1e12) + Math.floor(Math.random() * 1e9), Number(2e12) + Math.floor(Math.random() * 1e9)];
            const keyIds = [0, 1, 2, 3].map((k) => `key-${k}-${randomUUID()}`);
            const subjects = keyIds.map((k) => `key:${k}`);
            const accountOf = (k: number) => accounts[k >> 1]!;
            const rows = before.flatMap((b, k) => [
              ...Array.from({ length: b.live }, () => ({ id: randomUUID(), node_id: live, key_id: keyIds[k]!, account_id: accountOf(k) })),
              ...Array.from({ length: b.dead }, () => ({ id: randomUUID(), node_id: dead, key_id: keyIds[k]!, account_id: accountOf(k) })),
            ]);
            if (rows.length) await a.db('stream_connections').insert(rows);
            const windows = before.flatMap((b, k) => (b.hits ? [{ subject: subjects[k]!, window_start: window, hits: b.hits }] : []));
            if (windows.length) await a.db('rate_limit_windows').insert(windows);
            // The model: hits and running counts from what was inserted (slots on the live node only).
            const hits = before.map((b) => b.hits);
            const keyOpen = before.map((b) => b.live);
            const accountOpen = [keyOpen[0]! + keyOpen[1]!, keyOpen[2]! + keyOpen[3]!];
            const ids = batch.map(() => randomUUID());
            const expected = batch.map((u) => {
              const hit = ++hits[u.key]!;
              const acc = u.key >> 1;
              if (hit > u.rateLimit || !u.want) return { hits: hit, scope: null, cap: null, open: null, taken: false };
              if (keyOpen[u.key]! >= u.keyCap) return { hits: hit, scope: 'key', cap: u.keyCap, open: keyOpen[u.key]!, taken: false };
              if (accountOpen[acc]! >= u.accountCap) return { hits: hit, scope: 'account', cap: u.accountCap, open: accountOpen[acc]!, taken: false };
              keyOpen[u.key]!++;
              accountOpen[acc]!++;
              return { hits: hit, scope: null, cap: null, open: null, taken: true };
            });
            try {
              const { rows: got } = await a.db.raw(
                'SELECT ord, hits, scope, cap, open FROM stream_admit(?, ?::uuid[], ?::text[], ?::timestamptz[], ?::int[], ?::boolean[], ?::text[], ?::bigint[], ?::int[], ?::int[], ?) ORDER BY ord',
                [
                  live,
                  ids,
                  batch.map((u) => subjects[u.key]!),
                  batch.map(() => window),
                  batch.map((u) => u.rateLimit),
                  batch.map((u) => u.want),
                  batch.map((u) => keyIds[u.key]!),
                  batch.map((u) => accountOf(u.key)),
                  batch.map((u) => u.keyCap),
                  batch.map((u) => u.accountCap),
                  20,
                ],
              );
              expect(got.map((r: { ord: number }) => r.ord)).toEqual(batch.map((_, i) => i + 1));
              expect(got.map(({ hits, scope, cap, open }: Record<string, unknown>) => ({ hits, scope, cap, open }))).toEqual(expected.map(({ taken: _, ...e }) => e));
              const written = new Set((await a.db('stream_connections').whereIn('id', ids).select('id', 'node_id')).map((r: { id: string; node_id: string }) => `${r.id}|${r.node_id}`));
              expect(written).toEqual(new Set(ids.filter((_, i) => expected[i]!.taken).map((id) => `${id}|${live}`)));
              const stored = await a.db('rate_limit_windows').whereIn('subject', subjects).andWhere('window_start', window).select('subject', 'hits');
              expect(Object.fromEntries(stored.map((r: { subject: string; hits: number }) => [r.subject, Number(r.hits)]))).toEqual(
                Object.fromEntries(subjects.flatMap((sub, k) => (hits[k]! > 0 ? [[sub, hits[k]!]] : []))),
              );
            } finally {
              await a.db('stream_connections').whereIn('account_id', accounts).delete();
              await a.db('rate_limit_windows').whereIn('subject', subjects).delete();
            }
          },
        ),
        { numRuns: 60 },
      );
    } finally {
      await a.db('stream_nodes').whereIn('node_id', [live, dead]).delete();
    }
  });
});
