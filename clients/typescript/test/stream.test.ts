// The stream client under faults, on real WebSockets (`ws`) over loopback:
// - a real stream node (uWS, following the run's PostgreSQL log), stopped and started again
//   while 1,000 notifications are written: every one delivered once, in order, through the
//   replays' 1013 replay_limit closes too; a rejected key stops the client instead of looping;
// - a loopback server speaking the protocol (fake-stream-server.ts) for what the real node
//   cannot be made to do: stop sending heartbeats, fail at an exact message; fast-check draws
//   the drop schedules.
import fc from 'fast-check';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../../db/connection.ts';
import { reservePort } from '../../../src/runtime/ports.ts';
import { databaseUrl, newAccount, type TestAccount } from '../../../test/support/harness.ts';
import { append, randomAddress, sleep, startNode, type TestNode } from '../../../test/stream/helpers.ts';
import { NotificationStream, StreamClosedError, type Disconnect, type StreamOptions, type StreamRow } from '../src/index.ts';
import { FakeStreamServer, type Fault } from './fake-stream-server.ts';

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

function collect(stream: NotificationStream): { rows: StreamRow[]; disconnects: Disconnect[]; errors: Error[] } {
  const out = { rows: [] as StreamRow[], disconnects: [] as Disconnect[], errors: [] as Error[] };
  stream.on('message', (m) => out.rows.push(m));
  stream.on('disconnect', (d) => out.disconnects.push(d));
  stream.on('error', (e) => out.errors.push(e));
  return out;
}

describe('against a real stream node', () => {
  let port: number;
  let t: TestNode;
  let db: Db;
  let acct: TestAccount;
  const opts = (extra: Partial<StreamOptions> = {}): StreamOptions => ({
    baseUrl: `http://127.0.0.1:${port}`,
    apiKey: acct.key,
    WebSocket: WebSocket as never,
    headers: { 'x-forwarded-for': randomAddress() },
    reconnect: { baseDelayMs: 20, maxDelayMs: 200 },
    ...extra,
  });

  beforeAll(async () => {
    // A fixed port, as in production, so the restarted node binds again at once.
    port = await reservePort();
    db = createDb({ connectionString: databaseUrl(), poolMax: 4 });
    t = await startNode({ port, db, env: { STREAM_MAX_REPLAY_ROWS: '300' } });
    acct = await newAccount(db);
  });
  afterAll(async () => {
    await t?.close();
    await db?.destroy();
  });

  it('a node stopped and restarted while 1,000 notifications are written: each delivered once, in order (through 1013 replay_limit)', async () => {
    const [start] = await append(db, acct.accountId, 1);
    const stream = new NotificationStream(opts({ lastId: start! }));
    const seen = collect(stream);
    const iterated: number[] = [];
    const iterating = (async () => {
      for await (const m of stream) iterated.push(m.id);
    })();

    const early = await append(db, acct.accountId, 25);
    await until(() => seen.rows.length === early.length, 10_000, 'the first rows');
    await t.close(); // every client sees 1001 server_shutdown and starts reconnecting
    const written: number[] = [];
    for (let i = 0; i < 10; i++) written.push(...(await append(db, acct.accountId, 100)));
    t = await startNode({ port, db, env: { STREAM_MAX_REPLAY_ROWS: '300' } });
    const late = await append(db, acct.accountId, 10); // written while the client catches up
    const expected = [...early, ...written, ...late];
    await until(() => seen.rows.length >= expected.length, 30_000, `${expected.length} rows (have ${seen.rows.length})`);
    // Nothing more, nothing twice: one last row, written after all the rest; once it is in, any
    // repeat of an earlier row would be too (rows arrive in log order).
    expected.push(...(await append(db, acct.accountId, 1)));
    await until(() => seen.rows.some((r) => r.id === expected.at(-1)), 30_000, 'the last row');
    await sleep(100); // for the iterator to catch up with the events
    expect(seen.rows.map((r) => r.id)).toEqual(expected);
    expect(iterated).toEqual(expected);
    expect(stream.lastId).toBeGreaterThanOrEqual(expected.at(-1)!);
    expect(seen.disconnects[0]).toMatchObject({ code: 1001, reason: 'server_shutdown' });
    // 1,000 rows behind with max_replay_rows 300: asked to reconnect for the rest, at once.
    const replayLimits = seen.disconnects.filter((d) => d.code === 1013 && d.reason === 'replay_limit');
    expect(replayLimits.length).toBeGreaterThanOrEqual(3);
    expect(replayLimits.every((d) => d.delayMs === 0)).toBe(true);
    expect(seen.errors).toEqual([]);
    stream.close();
    await iterating;
  });

  it('a rejected key stops the client with the status instead of reconnecting for ever', async () => {
    const stream = new NotificationStream(opts({ apiKey: 'tmk_not_a_key' }));
    const seen = collect(stream);
    const closed = new Promise<void>((r) => stream.on('close', () => r()));
    await closed;
    expect(seen.errors[0]).toBeInstanceOf(StreamClosedError);
    expect(seen.errors[0]).toMatchObject({ status: 401 });
    expect(stream.connections).toBe(1);
  });

  it('resuming from an id ahead of the log (a restored database): a gap, then every row written after, none taken for a repeat', async () => {
    const [id] = await append(db, acct.accountId, 1);
    const stream = new NotificationStream(opts({ lastId: id! + 1_000_000 }));
    const seen = collect(stream);
    const gaps: number[] = [];
    stream.on('gap', (h) => gaps.push(h.last_id!));
    await until(() => gaps.length === 1, 10_000, 'the gap');
    const later = await append(db, acct.accountId, 5);
    await until(() => seen.rows.length === later.length, 10_000, `${later.length} rows (have ${seen.rows.length})`);
    expect(seen.rows.map((r) => r.id)).toEqual(later);
    expect(stream.lastId).toBe(later.at(-1));
    stream.close();
  });
});

describe('against a loopback server speaking the protocol', () => {
  let server: FakeStreamServer;
  beforeAll(async () => {
    server = await FakeStreamServer.start({ heartbeatMs: 100, maxReplayRows: 20 });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('a server that stops sending heartbeats is left and resumed (after 2 × the interval + 1 s), not waited on', async () => {
    const stream = new NotificationStream({ baseUrl: server.baseUrl, apiKey: 'k', WebSocket: WebSocket as never, reconnect: { baseDelayMs: 10, maxDelayMs: 50 } });
    const seen = collect(stream);
    await until(() => server.connections.length === 1 && stream.lastId !== null, 15_000, 'hello');
    server.faults = [{ after: 3, fault: 'silence' }];
    const ids = server.append(5); // 3 arrive, then the link goes quiet
    const started = Date.now();
    await until(() => seen.rows.length === 5, 15_000, 'the rest after the silence');
    const waited = Date.now() - started;
    expect(seen.rows.map((r) => r.id)).toEqual(ids);
    expect(seen.disconnects[0]).toMatchObject({ code: 1006, reason: 'heartbeat_timeout' });
    expect(waited).toBeGreaterThanOrEqual(1_000);
    expect(server.connections[1]!.lastId).toBe(ids[2]);
    // The key went as a header, not in the URL.
    expect(server.connections[0]!.apikey).toBe('k');
    stream.close();
  });

  it('a 1013 in the middle of a replay: reconnected at once from the last id, nothing lost or repeated', async () => {
    const from = server.head;
    const ids = server.append(50); // 50 behind, 20 replayed per connection
    const stream = new NotificationStream({ baseUrl: server.baseUrl, apiKey: 'k', lastId: from, WebSocket: WebSocket as never });
    const seen = collect(stream);
    await until(() => seen.rows.length === 50, 15_000, '50 rows');
    expect(seen.rows.map((r) => r.id)).toEqual(ids);
    expect(seen.disconnects.map((d) => [d.code, d.reason, d.delayMs])).toEqual([
      [1013, 'replay_limit', 0],
      [1013, 'replay_limit', 0],
    ]);
    stream.close();
  });

  it('property: for any schedule of drops (TCP reset, 1013, 1001, silence) every row arrives once, in order', async () => {
    const fault = fc.constantFrom<Fault>('terminate', 'close1013', 'close1001', 'silence');
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ after: fc.nat({ max: 25 }), fault }), { maxLength: 5 }),
        fc.integer({ min: 0, max: 40 }),
        fc.integer({ min: 1, max: 30 }),
        async (faults, backlog, liveRows) => {
          const s = await FakeStreamServer.start({ heartbeatMs: 50, maxReplayRows: 15 });
          const stream = new NotificationStream({
            baseUrl: s.baseUrl, apiKey: 'k', lastId: 0, WebSocket: WebSocket as never,
            heartbeatTimeoutMs: 150, reconnect: { baseDelayMs: 5, maxDelayMs: 20 },
          });
          try {
            s.faults = faults.map((f) => ({ ...f }));
            const seen = collect(stream);
            const expected = s.append(backlog);
            // Live rows, written a few at a time while the drops happen.
            for (let i = 0; i < liveRows; i += 5) {
              expected.push(...s.append(Math.min(5, liveRows - i)));
              await sleep(5);
            }
            await until(() => seen.rows.length >= expected.length, 10_000, `${expected.length} rows (have ${seen.rows.length})`);
            // Nothing more, nothing twice: a last row after the rest, in once any repeat would be.
            expected.push(...s.append(1));
            await until(() => seen.rows.some((r) => r.id === expected.at(-1)), 10_000, 'the last row');
            expect(seen.rows.map((r) => r.id)).toEqual(expected);
            expect(seen.errors).toEqual([]);
          } finally {
            stream.close();
            await s.close();
          }
        },
      ),
      { numRuns: 25 },
    );
  });
});
