// Connected clients: the hello and its limits, rows appended to the log reaching the account's
// clients in order (notification and watchlist messages, straight from the log), never another
// account's, heartbeats carrying the node's log position, and the metrics of all that.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAccount, type TestAccount } from '../support/harness.ts';
import { append, checkSchemas, connect, sleep, startNode, type TestNode } from './helpers.ts';

describe('stream delivery', () => {
  let t: TestNode;
  let a: TestAccount;
  let b: TestAccount;

  beforeAll(async () => {
    t = await startNode({ env: { STREAM_HEARTBEAT_MS: '1000', STREAM_MAX_BUFFERED_BYTES: '262144', STREAM_MAX_REPLAY_ROWS: '777', STREAM_RETENTION_HOURS: '48' } });
    a = await newAccount(t.db);
    b = await newAccount(t.db);
  });
  afterAll(async () => {
    await t.close();
  });

  it('says hello with the limits and the log head, then live', async () => {
    const head = Number((await t.db('notifications').max({ m: 'id' }).first())?.m ?? 0);
    const c = await connect(t.url, { key: a.key });
    const hello = c.messages[0]!;
    expect(hello).toMatchObject({
      type: 'hello',
      account_id: a.accountId,
      last_id: null,
      resume_gap: false,
      limits: { max_buffered_bytes: 262_144, heartbeat_interval_ms: 1000, max_replay_rows: 777, retention_seconds: 48 * 3600 },
    });
    expect(hello.head).toBeGreaterThanOrEqual(head);
    expect(typeof hello.connection_id).toBe('string');
    expect(c.messages[1]).toEqual({ type: 'live', head: hello.head, replayed: 0 });
    checkSchemas(c.messages);
    c.close();
  });

  it("delivers the account's rows in order, as the log's stream messages, and never another account's", async () => {
    const a1 = await connect(t.url, { key: a.key });
    const a2 = await connect(t.url, { key: a.key });
    const b1 = await connect(t.url, { key: b.key });
    const ids = [...(await append(t.db, a.accountId, 3)), ...(await append(t.db, a.accountId, 2, 'watchlist'))];
    const bIds = await append(t.db, b.accountId, 2);
    // One more row each, written after all of the above: once a connection has it, every row
    // before it that was ever going to reach that connection has (rows go out in log order).
    ids.push(...(await append(t.db, a.accountId, 1)));
    bIds.push(...(await append(t.db, b.accountId, 1)));
    for (const c of [a1, a2]) await c.until((x) => x.ids().includes(ids.at(-1)!), 20_000, 'rows of a');
    await b1.until((x) => x.ids().includes(bIds.at(-1)!), 20_000, 'rows of b');
    expect(a1.ids()).toEqual(ids);
    expect(a2.ids()).toEqual(ids);
    expect(b1.ids()).toEqual(bIds);
    const rows = await t.db('notifications').whereIn('id', ids).orderBy('id');
    expect(a1.rows()).toEqual(rows.map((r) => ({ type: r.kind, id: Number(r.id), ...r.payload })));
    checkSchemas(a1.messages.filter((m) => m.type !== 'watchlist'));
    for (const c of [a1, a2, b1]) c.close();
  });

  it('reaches a client within a few milliseconds of the commit (NOTIFY wake-up, not the poll)', async () => {
    // A node of its own whose safety poll is a minute apart: a row that only that poll found
    // would take up to a minute, one the NOTIFY wakes for takes milliseconds (the bound is
    // for a loaded machine).
    const slowPoll = await startNode({ db: t.db, env: { STREAM_POLL_MS: '60000' } });
    try {
      const c = await connect(slowPoll.url, { key: a.key });
      const started = performance.now();
      await append(t.db, a.accountId, 1);
      await c.until((x) => x.ids().length === 1, 20_000, 'the row');
      expect(performance.now() - started).toBeLessThan(5_000);
      c.close();
    } finally {
      await slowPoll.close();
    }
  });

  it('sends heartbeats with the node head; every row up to it was sent before', async () => {
    const c = await connect(t.url, { key: a.key });
    const ids = await append(t.db, a.accountId, 2);
    await c.until((x) => x.messages.filter((m) => m.type === 'heartbeat' && m.head >= ids[1]!).length > 0, 20_000, 'a heartbeat past the rows');
    const beat = c.messages.find((m) => m.type === 'heartbeat' && m.head >= ids[1]!)!;
    const before = c.messages.slice(0, c.messages.indexOf(beat)).map((m) => m.id);
    expect(before).toEqual(expect.arrayContaining(ids));
    checkSchemas(c.messages);
    c.close();
  });

  it('keeps every connection while many open as rows are being published (none cut, all get the rows)', async () => {
    let writing = true;
    const writer = (async () => {
      while (writing) await Promise.all([append(t.db, a.accountId, 2), append(t.db, b.accountId, 1)]);
    })();
    const clients = await Promise.all(
      Array.from({ length: 60 }, (_, i) => connect(t.url, { key: i % 2 ? a.key : b.key, ...(i % 3 === 0 ? { lastId: 0 } : {}) })),
    );
    await sleep(100);
    writing = false;
    await writer;
    const last = await append(t.db, a.accountId, 1);
    const lastB = await append(t.db, b.accountId, 1);
    for (const [i, c] of clients.entries()) {
      await c.until((x) => x.ids().includes((i % 2 ? last : lastB)[0]!), 20_000, 'the last row');
      expect(c.closeInfo).toBeNull();
      c.close();
    }
  });

  it('counts connections and messages in its metrics', async () => {
    const c = await connect(t.url, { key: b.key });
    await append(t.db, b.accountId, 1);
    await c.until((x) => x.ids().length === 1);
    const text = await t.registry.metrics();
    expect(text).toMatch(/stream_connections \d+/);
    expect(text).toMatch(/stream_messages_sent_total\{type="notification"\} [1-9]/);
    expect(text).toMatch(/stream_messages_sent_total\{type="hello"\} [1-9]/);
    c.close();
  });
});
