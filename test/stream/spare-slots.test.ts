// Slots taken ahead in a burst of upgrades (issue 40, db/migrations/043, connection-slots.ts):
// two real stream nodes on one database and real `ws` clients. Each test writes down what it
// did (the upgrades it sent, the connections it holds) and checks the answers, the slots and the
// key's rate window against that; the metric of the path taken is read only to show the spare
// path was exercised at all.
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../db/pool.ts';
import { createLogger } from '../../src/logger.ts';
import { ConnectionSlots, type StreamUpgrade } from '../../src/stream/connection-slots.ts';
import { eventually, newAccount, testConfig } from '../support/harness.ts';
import { Client, LogLines, connect, refusal, startNode, type TestNode } from './helpers.ts';

const PER_KEY = 6;
const PER_ACCOUNT = 6;
const env = { STREAM_MAX_CONNECTIONS_PER_KEY: String(PER_KEY), STREAM_MAX_CONNECTIONS_PER_ACCOUNT: String(PER_ACCOUNT) };
/** Node A holds its spares long enough for node B to find them. */
const HOLDING = { touchMs: 5_000, staleMs: 20_000, fenceMs: 12_000, spareIdleMs: 1_500, spareMaxMs: 2_500 };

let a: TestNode;
let b: TestNode;
let wide: TestNode;
const open: Client[] = [];

beforeAll(async () => {
  a = await startNode({ env, slotTimings: HOLDING });
  b = await startNode({ env, db: a.db });
  wide = await startNode({ db: a.db, env: { STREAM_MAX_CONNECTIONS_PER_KEY: '1000', STREAM_MAX_CONNECTIONS_PER_ACCOUNT: '1000' } });
});
afterAll(async () => {
  for (const c of open) c.close();
  await wide?.close();
  await b?.close();
  await a?.close();
});

/** Opens `n` clients of `key` on `node` all at once; what each was answered. */
async function burst(node: TestNode, key: string, n: number): Promise<string[]> {
  return Promise.all(
    Array.from({ length: n }, () => {
      const c = new Client(node.url, { key });
      open.push(c);
      return c.opened.then(
        () => 'admitted',
        (err: Error) => err.message,
      );
    }),
  );
}

async function admittedOnSpares(node: TestNode): Promise<number> {
  const m = await node.registry.getSingleMetric('stream_upgrades_admitted_total')!.get();
  return m.values.filter((v) => v.labels.path === 'spare').reduce((n, v) => n + v.value, 0);
}

async function slotRows(keyId: string): Promise<{ all: number; spare: number }> {
  const rows = await a.db('stream_connections').where({ key_id: keyId }).select('spare');
  return { all: rows.length, spare: rows.filter((r: { spare: boolean }) => r.spare).length };
}

async function windowHits(keyId: string): Promise<number> {
  const rows = await a.db('rate_limit_windows').where({ subject: `key:${keyId}` }).select('hits');
  return rows.reduce((n: number, r: { hits: number }) => n + Number(r.hits), 0);
}

describe('slots taken ahead in a burst of upgrades', () => {
  it("a key's burst on one node is mostly admitted against spares; afterwards its slots and its window count exactly the connections held and the upgrades sent", async () => {
    const acct = await newAccount(a.db);
    const before = await admittedOnSpares(wide);
    const sent = 60;
    const answers: string[] = [];
    // Waves a few milliseconds apart, as clients reconnecting after a restart arrive.
    for (let i = 0; i < 6; i++) {
      answers.push(...(await burst(wide, acct.key, sent / 6)));
    }
    expect(answers.filter((x) => x === 'admitted')).toHaveLength(sent);
    expect(await admittedOnSpares(wide), 'upgrades admitted on the spare path').toBeGreaterThan(before + sent / 2);
    // Every unused spare goes back: one row per connection, none spare, and one hit per upgrade.
    await eventually(async () => ((await slotRows(acct.keyId)).all === sent ? true : undefined));
    expect(await slotRows(acct.keyId)).toEqual({ all: sent, spare: 0 });
    await eventually(async () => ((await windowHits(acct.keyId)) === sent ? true : undefined));
  });

  it("another node waits for the spares one node holds instead of refusing: the key's cap is reached exactly, never passed", async () => {
    const acct = await newAccount(a.db);
    expect(await burst(a, acct.key, 3)).toEqual(['admitted', 'admitted', 'admitted']);
    // The situation under test: node A holds spares of the key (its burst took them).
    const held = await slotRows(acct.keyId);
    expect(held.spare, 'spares held by node A after its burst').toBeGreaterThan(0);
    expect(held.all).toBeLessThanOrEqual(PER_KEY);
    // The cap's other three go to node B, one after another: each waits out A's spares.
    for (let i = 0; i < PER_KEY - 3; i++) open.push(await connect(b.url, { key: acct.key }));
    const r = await refusal(b.url, { apikey: acct.key });
    expect(r.status).toBe(429);
    expect(r.body.error.code).toBe('too_many_connections');
    expect(r.body.error.message).toMatch(/already holds 6 open stream connections, its limit of 6/);
    await eventually(async () => ((await slotRows(acct.keyId)).spare === 0 ? true : undefined));
    expect((await slotRows(acct.keyId)).all).toBe(PER_KEY);
  });

  it('a burst past the rate limit admits exactly the limit, however the spares fell, and the window counts every upgrade once', async () => {
    const acct = await newAccount(a.db, { rateLimit: 12 });
    const answers: string[] = [];
    for (let i = 0; i < 4; i++) answers.push(...(await burst(wide, acct.key, 5)));
    expect(answers.filter((x) => x === 'admitted')).toHaveLength(12);
    expect(answers.filter((x) => x === 'refused with 429')).toHaveLength(8);
    await eventually(async () => ((await slotRows(acct.keyId)).all === 12 && (await windowHits(acct.keyId)) === 20 ? true : undefined));
  });
});

describe('slots taken ahead, batch by batch (ConnectionSlots on the database)', () => {
  it("upgrades refused for their rate while this node holds spares of their key are admitted against them: the limit's worth is admitted, the window counts each upgrade once", async () => {
    const pool = createPool({ connectionString: testConfig().DATABASE_URL!, max: 4 });
    const slots = new ConnectionSlots(pool, createLogger('warn', new LogLines().stream()), () => {}, HOLDING);
    await slots.start();
    const keyId = `key-${randomUUID()}`;
    const limit = 12;
    const window = new Date(Math.floor(Date.now() / 60_000) * 60_000);
    const upgrade = (): StreamUpgrade => ({
      id: randomUUID(),
      keyId,
      accountId: Number(4e12) + Math.floor(Math.random() * 1e9),
      subject: `key:${keyId}`,
      windowStart: window,
      rateLimit: limit,
      caps: { keyLimit: null, perKey: 1000, perAccount: 1000 },
    });
    try {
      const account = upgrade().accountId;
      const send = () => slots.admit({ ...upgrade(), accountId: account });
      // Batch 1: one upgrade (hit 1). Batch 2, queued meanwhile: three more (hits 2-4), whose
      // burst takes spares ahead (hits 5-8). Batch 3, queued while batch 2 is out: ten more,
      // hits 9-18: the last six are past the limit while the four spares of batch 2 are unused.
      const first = send();
      const second = [send(), send(), send()];
      await first;
      const third = Array.from({ length: 10 }, send);
      const answers = await Promise.all([first, ...second, ...third]);
      expect(answers.filter((x) => x.taken)).toHaveLength(limit);
      await eventually(async () => {
        const rows = await pool.query<{ hits: number }>('SELECT hits FROM rate_limit_windows WHERE subject = $1', [`key:${keyId}`]);
        const spares = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM stream_connections WHERE key_id = $1 AND spare', [keyId]);
        return rows.rows[0]?.hits === 14 && spares.rows[0]!.n === 0 ? true : undefined;
      });
    } finally {
      await slots.stop();
      await pool.query('DELETE FROM rate_limit_windows WHERE subject = $1', [`key:${keyId}`]);
      await pool.end();
    }
  });
});

describe("a batch's decisions with slots ahead (stream_admit, db/migrations/043)", () => {
  // Called directly with made-up batches over rows the test wrote itself; the expected answers
  // are computed here from what the test inserted, never read back from the function.
  it('property: upgrades asked again are not counted again; spares are taken after their upgrade within both caps and half the hits left, each reserving its hit; a full cap with spares among its slots says wait', async () => {
    const live = `test-live-${randomUUID()}`;
    await a.db('stream_nodes').insert({ node_id: live });
    const window = new Date(Math.floor(Date.now() / 60_000) * 60_000);
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.record({ open: fc.nat(3), spare: fc.nat(2), hits: fc.nat(6) }), { minLength: 2, maxLength: 2 }),
          fc.array(
            fc.record({
              key: fc.nat(1),
              rateLimit: fc.integer({ min: 1, max: 20 }),
              want: fc.boolean(),
              again: fc.boolean(),
              spares: fc.nat(6),
              keyCap: fc.integer({ min: 0, max: 9 }),
              accountCap: fc.integer({ min: 0, max: 12 }),
            }),
            { minLength: 1, maxLength: 16 },
          ),
          async (before, batch) => {
            // One account, two keys.
            const account = Number(3e12) + Math.floor(Math.random() * 1e9);
            const keyIds = [0, 1].map((k) => `key-${k}-${randomUUID()}`);
            const subjects = keyIds.map((k) => `key:${k}`);
            const rows = before.flatMap((x, k) => [
              ...Array.from({ length: x.open }, () => ({ id: randomUUID(), node_id: live, key_id: keyIds[k]!, account_id: account })),
              ...Array.from({ length: x.spare }, () => ({ id: randomUUID(), node_id: live, key_id: keyIds[k]!, account_id: account, spare: true })),
            ]);
            if (rows.length) await a.db('stream_connections').insert(rows);
            const windows = before.flatMap((x, k) => (x.hits ? [{ subject: subjects[k]!, window_start: window, hits: x.hits }] : []));
            if (windows.length) await a.db('rate_limit_windows').insert(windows);
            // The model.
            const counted = before.map((x, k) => x.hits + batch.filter((u) => u.key === k && !u.again).length);
            const hits = before.map((x) => x.hits);
            const keyOpen = before.map((x) => x.open + x.spare);
            const keySpare = before.map((x) => x.spare);
            let accountOpen = keyOpen[0]! + keyOpen[1]!;
            let accountSpare = keySpare[0]! + keySpare[1]!;
            const reserved = [0, 0];
            const expected = batch.map((u) => {
              const hit = u.again ? 0 : ++hits[u.key]!;
              const asks = u.want && (u.again || hit <= u.rateLimit);
              const none = { hits: hit, scope: null, cap: null, open: null, wait: false, spares: 0, spare_hit: null, taken: false };
              if (!asks) return none;
              if (keyOpen[u.key]! >= u.keyCap) return { ...none, scope: 'key', cap: u.keyCap, open: keyOpen[u.key]!, wait: keySpare[u.key]! > 0 };
              if (accountOpen >= u.accountCap) return { ...none, scope: 'account', cap: u.accountCap, open: accountOpen, wait: accountSpare > 0 };
              keyOpen[u.key]!++;
              accountOpen++;
              let take = 0;
              let spareHit: number | null = null;
              if (!u.again && u.spares > 0) {
                take = Math.min(u.spares, u.keyCap - keyOpen[u.key]!, u.accountCap - accountOpen, Math.trunc((u.rateLimit - (counted[u.key]! + reserved[u.key]!)) / 2));
                if (take > 0) {
                  spareHit = counted[u.key]! + reserved[u.key]! + 1;
                  reserved[u.key]! += take;
                  keyOpen[u.key]! += take;
                  accountOpen += take;
                  keySpare[u.key]! += take;
                  accountSpare += take;
                } else take = 0;
              }
              return { ...none, spares: take, spare_hit: spareHit, taken: true };
            });
            const ids = batch.map(() => randomUUID());
            try {
              const { rows: got } = await a.db.raw(
                `SELECT ord, hits, scope, cap, open, wait, spares, spare_hit FROM stream_admit(?, ?::uuid[], ?::text[], ?::timestamptz[], ?::int[], ?::boolean[], ?::text[], ?::bigint[], ?::int[], ?::int[], ?, ?::boolean[], ?::int[]) ORDER BY ord`,
                [
                  live,
                  ids,
                  batch.map((u) => subjects[u.key]!),
                  batch.map(() => window),
                  batch.map((u) => u.rateLimit),
                  batch.map((u) => u.want),
                  batch.map((u) => keyIds[u.key]!),
                  batch.map(() => account),
                  batch.map((u) => u.keyCap),
                  batch.map((u) => u.accountCap),
                  20,
                  batch.map((u) => u.again),
                  batch.map((u) => u.spares),
                ],
              );
              expect(
                got.map((r: Record<string, unknown>) => ({ hits: r.hits, scope: r.scope, cap: r.cap, open: r.open, wait: r.wait, spares: (r.spares as string[] | null)?.length ?? 0, spare_hit: r.spare_hit })),
              ).toEqual(expected.map(({ taken: _, ...e }) => e));
              // Rows: the admitted upgrades' (not spare) and every spare returned (spare), nothing else.
              const spareIds = got.flatMap((r: { spares: string[] | null }) => r.spares ?? []);
              const written = await a.db('stream_connections').where({ account_id: account }).whereNotIn('id', rows.map((r) => r.id)).select('id', 'spare');
              expect(new Set(written.map((r: { id: string; spare: boolean }) => `${r.id}|${r.spare}`))).toEqual(
                new Set([...ids.filter((_, i) => expected[i]!.taken).map((id) => `${id}|false`), ...spareIds.map((id: string) => `${id}|true`)]),
              );
              const stored = await a.db('rate_limit_windows').whereIn('subject', subjects).andWhere('window_start', window).select('subject', 'hits');
              expect(Object.fromEntries(stored.map((r: { subject: string; hits: number }) => [r.subject, Number(r.hits)]))).toEqual(
                Object.fromEntries(subjects.flatMap((sub, k) => (before[k]!.hits > 0 || batch.some((u) => u.key === k && !u.again) ? [[sub, counted[k]! + reserved[k]!]] : []))),
              );
            } finally {
              await a.db('stream_connections').where({ account_id: account }).delete();
              await a.db('rate_limit_windows').whereIn('subject', subjects).delete();
            }
          },
        ),
        { numRuns: 80 },
      );
    } finally {
      await a.db('stream_nodes').where({ node_id: live }).delete();
    }
  });
});
