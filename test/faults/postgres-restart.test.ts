// Fault: the database goes away under a running stack (issue 26). A gateway, the production
// worker entry point in a child process (shard pollers, membership and monitor relays) and a
// stream node run on a PostgreSQL server of this file's own (private-postgres.ts: the run's
// server is shared by the files running beside this one and must not go down), with items
// being monitored and a real stream client (the TypeScript client, which resumes) connected.
// Then the server is restarted (`pg_ctl stop -m fast`, down a few seconds, started again on
// the same data and port), or every connection to the database is terminated
// (pg_terminate_backend). Against a ground truth the test writes before, during and after the
// fault (every inventory change it makes, every watchlist write and its answer):
// - watchlist writes and /usage answer 5xx only while the database is away, promptly, and 2xx
//   from a few seconds after it is back; a write answered 201 is kept and monitored, a write
//   answered 5xx left nothing behind;
// - each inventory change, made while the database is away (a poll sees it and cannot record
//   it) or once it is back, is notified exactly once, in the log and to the stream client, and
//   notifications flow again within 15 s of its return;
// - the stream never hands a row out twice, and the client delivers every row of the log once.
import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NotificationStream, type StreamRow, type WebSocketConstructor } from '../../clients/typescript/src/index.ts';
import { createLogger } from '../../src/logger.ts';
import { readLog } from '../../src/notifications/log.ts';
import { startStreamNode, type StreamNode } from '../../src/stream/start.ts';
import { call, testConfig, type TestAccount } from '../support/harness.ts';
import { baselined, eventually, notificationsOf, polledAgain, useMonitorStack } from '../support/monitor-stack.ts';
import { usePrivatePostgres } from '../support/private-postgres.ts';
import { putEvent, section } from '../support/scrape-stack.ts';
import { STREAM_ENV } from '../stream/helpers.ts';

const server = usePrivatePostgres();
// The simulator is local: a budget per platform that polls every target each interval however many the probes made.
const stack = useMonitorStack({ intervalMs: 300, worker: 'child-process', serverUrl: () => server.url, env: { SCRAPE_RPS_PER_PLATFORM: '400' } });
let node: StreamNode;
let streamBase: string;

beforeAll(async () => {
  const config = testConfig({ ...STREAM_ENV, DATABASE_URL: stack.databaseUrl });
  node = await startStreamNode({ config, db: stack.db, connectionString: stack.databaseUrl, log: createLogger('silent'), registry: new Registry() });
  streamBase = `http://127.0.0.1:${node.server.port}`;
}, 60_000);
afterAll(() => node?.close());

/** Notifications flow again within this of the database's return (issue 26's target). */
const RECOVERY_BOUND_MS = 15_000;
/** From this long after the database is back, every watchlist write and /usage answers 2xx. */
const SETTLE_MS = 5_000;
/** No answer, 5xx included, takes longer than this: the gateway never hangs on a missing database. */
const ANSWER_BOUND_MS = 10_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const stalls = (stock: number) => ({ region: 'fr', sections: [section('Stalls', 80, stock)] });

async function newEvent(stock: number): Promise<string> {
  const event = `https://pf03.example/e/pg-${randomUUID().slice(0, 8)}`;
  await putEvent(stack.sim, 'pf_03', event, stalls(stock));
  return event;
}

/** The ground truth of one watched item: its event and every stock the test gave it, in order. */
interface Watched {
  id: number;
  event: string;
  stocks: number[];
}

async function setStock(w: Watched, stock: number): Promise<void> {
  await putEvent(stack.sim, 'pf_03', w.event, stalls(stock));
  w.stocks.push(stock);
}

/** One request the test made during the fault, and how it was answered. */
interface Probe {
  what: 'create' | 'usage';
  event?: string;
  sentAt: number;
  ms: number;
  status: number;
  id?: number;
}

/** A stream client as a user runs it (the TypeScript client, resuming), and every frame its sockets received. */
function openStream(acct: TestAccount) {
  const frames: Record<string, unknown>[] = [];
  // The client's own WebSocket, recording what the server sent: the client drops repeats by id,
  // so the server's own "never twice" is read from the frames.
  class Recording extends WebSocket {
    constructor(url: string, protocols?: string | string[], options?: WebSocket.ClientOptions) {
      super(url, protocols, options);
      this.on('message', (data) => frames.push(JSON.parse(String(data)) as Record<string, unknown>));
    }
  }
  const stream = new NotificationStream({ baseUrl: streamBase, apiKey: acct.key, WebSocket: Recording as unknown as WebSocketConstructor, reconnect: { baseDelayMs: 200, maxDelayMs: 2_000 } });
  const rows: (StreamRow & { receivedAt: number })[] = [];
  const disconnects: { code: number; reason: string }[] = [];
  stream.on('message', (m) => rows.push({ ...m, receivedAt: Date.now() }));
  stream.on('disconnect', (d) => disconnects.push({ code: d.code, reason: d.reason }));
  const live = new Promise<void>((resolve) => stream.on('live', () => resolve()));
  return { stream, frames, rows, disconnects, live };
}

/** The notifications the truth says each item gets: one per stock increase after its baseline. */
function expected(watched: readonly Watched[]): string[] {
  const out: string[] = [];
  for (const w of watched) for (let i = 1; i < w.stocks.length; i++) out.push(`${w.id}:${w.stocks[i - 1]}->${w.stocks[i]}`);
  return out.sort();
}

const label = (itemId: unknown, payload: { before?: unknown; after?: unknown }) =>
  `${itemId}:${(payload.before as { stock: number }).stock}->${(payload.after as { stock: number }).stock}`;

async function watch(acct: TestAccount, event: string): Promise<number> {
  const res = await call(stack.gateway.url, 'POST', '/watchlist', { key: acct.key, body: { website: 'pf_03', event, region: 'fr' } });
  expect(res.status, res.text).toBe(201);
  return res.body.id as number;
}

/**
 * The whole scenario around one fault: `fault` takes the database away and brings it back,
 * returning when it went (downAt) and when it was back (upAt), epoch ms.
 */
async function throughFault(fault: (whileDown: () => Promise<void>) => Promise<{ downAt: number; upAt: number }>) {
  const acct = await stack.account();
  const client = openStream(acct);
  await client.live;

  // Before: four watched items, each notified of one change.
  const watched: Watched[] = [];
  for (let i = 0; i < 4; i++) {
    const event = await newEvent(1);
    watched.push({ id: await watch(acct, event), event, stocks: [1] });
  }
  await Promise.all(watched.map((w) => baselined(stack, w.id)));
  for (const w of watched) await setStock(w, 2);
  await eventually(async () => ((await notificationsOf(stack, acct.accountId)).length >= 4 ? true : undefined));
  // Two of them change while the database is away (their polls see it and cannot record it), two at its return.
  const [changedWhileDown, changedOnReturn] = [watched.slice(0, 2), watched.slice(2, 4)];

  // During: a create (of an event of its own) every 300 ms and a /usage every 150 ms, all answers kept.
  const probes: Probe[] = [];
  let probing = true;
  const lane = async (what: Probe['what']) => {
    while (probing) {
      const sentAt = Date.now();
      if (what === 'create') {
        const event = await newEvent(1);
        const res = await call(stack.gateway.url, 'POST', '/watchlist', { key: acct.key, body: { website: 'pf_03', event, region: 'fr' } }).catch(() => ({ status: 0, body: null }));
        probes.push({ what, event, sentAt, ms: Date.now() - sentAt, status: res.status, id: res.status === 201 ? (res.body.id as number) : undefined });
      } else {
        const res = await call(stack.gateway.url, 'GET', '/usage', { key: acct.key }).catch(() => ({ status: 0 }));
        probes.push({ what, sentAt, ms: Date.now() - sentAt, status: res.status });
      }
      await sleep(what === 'create' ? 300 : 150);
    }
  };
  const lanes = Promise.all([lane('create'), lane('usage')]);
  await sleep(600);
  const { downAt, upAt } = await fault(async () => {
    for (const w of changedWhileDown) await setStock(w, 3);
  });
  for (const w of changedOnReturn) await setStock(w, 5);
  const late = (where: string) => () => Promise.reject(new Error(`the changes made while the database was away and at its return were not all notified ${where} within 30 s`));
  const flowing = await eventually(async () => {
    const rows = await notificationsOf(stack, acct.accountId).catch(() => []);
    return rows.length >= 8 ? Date.now() : undefined;
  }, 30_000).catch(late('in the log'));
  const streamed = await eventually(async () => (client.rows.filter((r) => r.type === 'notification').length >= 8 ? Date.now() : undefined), 30_000).catch(late('on the stream'));
  // The probes run on until SETTLE_MS after the return, and a few of each kind after that.
  await eventually(async () => (probes.filter((p) => p.what === 'create' && p.sentAt >= upAt + SETTLE_MS).length >= 3 ? true : undefined), 30_000);
  probing = false;
  await lanes;

  // After: every create answered 201 is an item that is monitored; its change is notified once.
  const created = probes.filter((p) => p.what === 'create' && p.status === 201);
  for (const p of created) watched.push({ id: p.id!, event: p.event!, stocks: [1] });
  await Promise.all(created.map((p) => baselined(stack, p.id!)));
  for (const w of watched.slice(4)) await setStock(w, 3);
  // And an item created now, by the usual path.
  const after: Watched = { id: 0, event: await newEvent(1), stocks: [1] };
  after.id = await watch(acct, after.event);
  watched.push(after);
  await baselined(stack, after.id);
  await setStock(after, 4);
  const want = expected(watched);
  await eventually(async () => ((await notificationsOf(stack, acct.accountId)).length >= want.length ? true : undefined));
  // Long enough for a repeat to show if one were coming: 1.5 s, and two polls of every event.
  await Promise.all([sleep(1_500), ...watched.map((w) => polledAgain(stack, 'pf_03', w.event))]);
  // The stream client has had everything the log has for the account.
  const log = (await readLog(stack.pool, { after: 0, accountId: acct.accountId, limit: 10_000 })).map((r) => r.id);
  await eventually(async () => (client.rows.length >= log.length ? true : undefined), 20_000);
  const usage = await call(stack.gateway.url, 'GET', '/usage', { key: acct.key });
  client.stream.close();
  return { acct, watched, want, probes, downAt, upAt, flowing, streamed, usage, log, client };
}

/** The checks every fault shares. */
async function verify(r: Awaited<ReturnType<typeof throughFault>>) {
  const { acct, watched, want, probes, upAt, client } = r;
  const summary = JSON.stringify({
    downMs: r.upAt - r.downAt,
    probes: probes.map((p) => `${p.what}@${p.sentAt - upAt}ms:${p.status}/${p.ms}ms`),
    disconnects: client.disconnects,
  });

  // Notifications: each change exactly once, in the log and to the client.
  const notes = await notificationsOf(stack, acct.accountId);
  expect(notes.map((n) => label(n.itemId, n.payload)).sort(), summary).toEqual(want);
  const streamedNotes = client.rows.filter((m) => m.type === 'notification');
  expect(streamedNotes.map((m) => label(m.item_id, m as { before?: unknown; after?: unknown })).sort(), summary).toEqual(want);
  // Every row of the log reached the client once, in order; the server sent none twice.
  expect(client.rows.map((m) => m.id), summary).toEqual(r.log);
  const sent = client.frames.filter((f) => typeof f.id === 'number' && ['notification', 'watchlist', 'target_retired'].includes(f.type as string)).map((f) => f.id as number);
  expect(new Set(sent).size, `the stream sent a row twice: ${sent.join(',')}`).toBe(sent.length);
  // Notifications flow again within the bound of the database's return, in the log and on the stream.
  expect(r.flowing - upAt, summary).toBeLessThan(RECOVERY_BOUND_MS);
  expect(r.streamed - upAt, summary).toBeLessThan(RECOVERY_BOUND_MS);

  // Requests: 2xx before the fault and from SETTLE_MS after the return; a failure is a prompt 5xx.
  for (const p of probes) {
    if (p.status >= 200 && p.status < 300) continue;
    expect([500, 502, 503, 504], `${p.what} answered ${p.status}: ${summary}`).toContain(p.status);
    expect(p.sentAt, `${p.what} failed before the fault: ${summary}`).toBeGreaterThanOrEqual(r.downAt - 1_000);
    expect(p.sentAt, `${p.what} failed ${p.sentAt - upAt} ms after the return: ${summary}`).toBeLessThan(upAt + SETTLE_MS);
  }
  for (const p of probes) expect(p.ms, `${p.what} took ${p.ms} ms: ${summary}`).toBeLessThan(ANSWER_BOUND_MS);
  // Watchlist writes: none answered 201 is lost, none answered 5xx left an item behind.
  const items = await stack.db('watchlist_items').where({ client_id: acct.accountId, deleted: false }).select('id', 'event');
  const byEvent = new Map(items.map((i) => [i.event as string, Number(i.id)]));
  for (const p of probes.filter((x) => x.what === 'create')) {
    if (p.status === 201) expect(byEvent.get(p.event!), summary).toBe(p.id);
    else expect(byEvent.has(p.event!), `a create answered ${p.status} was stored: ${summary}`).toBe(false);
  }
  expect(items).toHaveLength(watched.length);
  // /usage answers after.
  expect(r.usage.status).toBe(200);
}

// A worker child process, a private PostgreSQL and several waits for polls: room for a loaded machine.
describe('a running stack across a PostgreSQL outage', { timeout: 120_000 }, () => {
  it('the server restarted (stopped -m fast, down 3 s, started again)', async () => {
    const r = await throughFault(async (whileDown) => {
      const downAt = Date.now();
      await server.stop();
      await whileDown();
      await sleep(downAt + 3_000 - Date.now());
      await server.start();
      return { downAt, upAt: Date.now() };
    });
    // The outage was seen: some request failed while the server was down.
    expect(r.probes.some((p) => p.status >= 500 || p.status === 0)).toBe(true);
    await verify(r);
    process.stderr.write(
      `postgres restart: down ${r.upAt - r.downAt} ms; notifications in the log ${r.flowing - r.upAt} ms and on the stream ${r.streamed - r.upAt} ms after its return; ` +
        `last failed request sent ${Math.max(...r.probes.filter((p) => p.status >= 300 || p.status === 0).map((p) => p.sentAt - r.upAt))} ms after it; ` +
        `${r.probes.filter((p) => p.status >= 300 || p.status === 0).length} of ${r.probes.length} requests failed; stream drops ${r.client.disconnects.length}\n`,
    );
  });

  it('every connection to the database terminated (pg_terminate_backend), twice', async () => {
    const database = new URL(stack.databaseUrl).pathname.slice(1);
    let terminated = 0;
    const r = await throughFault(async (whileDown) => {
      const downAt = Date.now();
      terminated += await server.terminateAll(database);
      await whileDown();
      await sleep(300);
      terminated += await server.terminateAll(database);
      return { downAt, upAt: Date.now() };
    });
    expect(terminated).toBeGreaterThan(5);
    await verify(r);
    process.stderr.write(
      `terminate all: ${terminated} sessions; notifications in the log ${r.flowing - r.upAt} ms and on the stream ${r.streamed - r.upAt} ms after; ` +
        `${r.probes.filter((p) => p.status >= 300 || p.status === 0).length} of ${r.probes.length} requests failed; stream drops ${r.client.disconnects.length}\n`,
    );
  });
});
