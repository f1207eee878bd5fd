// The stream client in a real browser (issue 17: "Node and browsers, on the platform's
// WebSocket"): the package's TypeScript source bundled for the browser with esbuild (in memory),
// served with a tiny page from a loopback HTTP server, and run in headless chromium against a
// real stream node (uWS, following the run's PostgreSQL log). The page makes its
// NotificationStream with no WebSocket option, so the client's default path runs: chromium's
// own WebSocket, the key as ?apikey=. The node is stopped and started again while rows are
// written, and the replay is cut by 1013 replay_limit: every row reaches the page's handler and
// its async iterator once, in order. Every request and WebSocket the page opens is recorded; any
// that is not to 127.0.0.1 fails the test.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../../db/connection.ts';
import { CHROMIUM_ARGS } from '../../../src/scrapers/browser-pages.ts';
import { chromiumFix, chromiumFound } from '../../../src/scrapers/chromium.ts';
import { reservePort } from '../../../src/runtime/ports.ts';
import { databaseUrl, newAccount, testConfig, type TestAccount } from '../../../test/support/harness.ts';
import { append, sleep, startNode, type TestNode } from '../../../test/stream/helpers.ts';
import { STREAM_PATH } from '../src/index.ts';

/** The package's entry point: the whole package must bundle for a browser, not just stream.ts. */
const CLIENT_ENTRY = fileURLToPath(new URL('../src/index.ts', import.meta.url));
/** Rows a connection replays before the node closes it with 1013 replay_limit. */
const MAX_REPLAY_ROWS = 100;
/** Chromium on a loaded two-core machine: generous. */
const WAIT_MS = 30_000;

/**
 * The page's script, plain JavaScript as a web page would write it: the bundle's global
 * `TicketMarket`, a NotificationStream with the options given (never a WebSocket), and what it
 * delivers kept for the test to read.
 */
const PAGE_SCRIPT = `
const { NotificationStream } = window.TicketMarket;
const streams = [];
window.startStream = (options) => {
  const stream = new NotificationStream(options);
  const out = { rows: [], iterated: [], disconnects: [], errors: [], hellos: [], iteratorError: null, closed: false };
  stream.on('message', (m) => out.rows.push(m.id));
  stream.on('disconnect', (d) => out.disconnects.push({ code: d.code, reason: d.reason, delayMs: d.delayMs }));
  stream.on('error', (e) => out.errors.push(String(e)));
  stream.on('hello', (h) => out.hellos.push({ last_id: h.last_id, head: h.head }));
  stream.on('close', () => { out.closed = true; });
  (async () => {
    try {
      for await (const m of stream) out.iterated.push(m.id);
    } catch (e) {
      out.iteratorError = String(e);
    }
  })();
  streams.push({ stream, out });
  return streams.length - 1;
};
window.streamResults = (i) => ({ ...streams[i].out, lastId: streams[i].stream.lastId, connections: streams[i].stream.connections });
window.closeStream = (i) => streams[i].stream.close();
window.nativeWebSocket = () => /\\[native code\\]/.test(Function.prototype.toString.call(WebSocket));
`;

const PAGE_HTML = `<!doctype html>
<html><head><meta charset="utf-8"><title>stream client in a browser</title></head>
<body><script src="/client.js"></script><script src="/page.js"></script></body></html>
`;

interface PageResults {
  rows: number[];
  iterated: number[];
  disconnects: { code: number; reason: string; delayMs: number }[];
  errors: string[];
  hellos: { last_id: number | null; head: number }[];
  iteratorError: string | null;
  closed: boolean;
  lastId: number | null;
  connections: number;
}

/** What PAGE_SCRIPT puts on `window`. */
interface PageApi {
  startStream(options: { baseUrl: string; apiKey: string; lastId?: number; reconnect?: { baseDelayMs: number; maxDelayMs: number } }): number;
  streamResults(i: number): PageResults;
  closeStream(i: number): void;
  nativeWebSocket(): boolean;
}

let port: number;
let t: TestNode;
let db: Db;
let acct: TestAccount;
let pageServer: Server;
let pageOrigin: string;
let browser: Browser;
let context: BrowserContext;
/** Every URL the browser asked for (HTTP and WebSocket), and the ones kept from leaving loopback. */
const requested: string[] = [];
const aborted: string[] = [];

/** 127.0.0.1 only (data: and blob: URLs never leave the page). */
function loopback(url: string): boolean {
  const u = new URL(url);
  return u.protocol === 'data:' || u.protocol === 'blob:' || u.hostname === '127.0.0.1';
}

beforeAll(async () => {
  const bundled = await build({
    entryPoints: [CLIENT_ENTRY],
    bundle: true,
    write: false,
    format: 'iife',
    globalName: 'TicketMarket',
    // A Node built-in anywhere in the package fails the build here.
    platform: 'browser',
    target: 'es2022',
    logLevel: 'silent',
  });
  const clientJs = bundled.outputFiles[0]!.text;

  port = await reservePort(); // fixed, so the restarted node binds again at once
  db = createDb({ connectionString: databaseUrl(), poolMax: 4 });
  t = await startNode({ port, db, env: { STREAM_MAX_REPLAY_ROWS: String(MAX_REPLAY_ROWS) } });
  acct = await newAccount(db);

  pageServer = createServer((req, res) => {
    const body = { '/': [PAGE_HTML, 'text/html'], '/client.js': [clientJs, 'text/javascript'], '/page.js': [PAGE_SCRIPT, 'text/javascript'] }[req.url ?? ''];
    if (!body) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': `${body[1]}; charset=utf-8`, 'cache-control': 'no-store' }).end(body[0]);
  });
  await new Promise<void>((resolve) => pageServer.listen(0, '127.0.0.1', resolve));
  pageOrigin = `http://127.0.0.1:${(pageServer.address() as AddressInfo).port}`;

  const { CHROMIUM_PATH } = testConfig();
  if (!(await chromiumFound(CHROMIUM_PATH))) throw new Error(chromiumFix(CHROMIUM_PATH));
  browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
  context = await browser.newContext();
  context.on('request', (r) => requested.push(r.url()));
  // HTTP only: WebSockets are recorded per page (routeWebSocket would replace the page's
  // WebSocket with playwright's shim, and the native one is what is under test).
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (loopback(url)) return route.continue();
    aborted.push(url);
    return route.abort('blockedbyclient');
  });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  if (pageServer) await new Promise((r) => pageServer.close(r));
  await t?.close();
  await db?.destroy();
});

interface Opened {
  page: Page;
  /** URLs of the WebSockets the page opened, in order. */
  sockets: string[];
  /** Uncaught exceptions, and console errors other than chromium's own line for a refused connection. */
  errors: string[];
}

async function open(): Promise<Opened> {
  const page = await context.newPage();
  const opened: Opened = { page, sockets: [], errors: [] };
  page.on('websocket', (ws) => {
    opened.sockets.push(ws.url());
    requested.push(ws.url());
  });
  page.on('pageerror', (err) => opened.errors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    // While the node is down chromium logs each refused attempt; the client handles those.
    if (msg.type() === 'error' && !/^WebSocket connection to 'ws:\/\/127\.0\.0\.1:\d+\/svc\/notifications\/subscribe\?[^']*' failed/.test(msg.text())) {
      opened.errors.push(`console: ${msg.text()}`);
    }
  });
  const res = await page.goto(pageOrigin + '/');
  expect(res?.status()).toBe(200);
  expect(await page.evaluate(() => (window as unknown as PageApi).nativeWebSocket())).toBe(true);
  return opened;
}

function results(page: Page, i: number): Promise<PageResults> {
  return page.evaluate((n) => (window as unknown as PageApi).streamResults(n), i);
}

/** Polls the page's results until `check` holds. */
async function until(page: Page, i: number, check: (r: PageResults) => boolean, what: string): Promise<PageResults> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const r = await results(page, i);
    if (check(r)) return r;
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}: ${r.rows.length} rows, disconnects ${JSON.stringify(r.disconnects)}, errors ${JSON.stringify(r.errors)}`);
    }
    await sleep(50);
  }
}

function query(url: string): URLSearchParams {
  return new URL(url).searchParams;
}

describe('NotificationStream in headless chromium, on its own WebSocket, against a real stream node', () => {
  it(
    'a node stopped and restarted mid-flow, the replay cut by 1013: every row reaches the page once, in order, resumed from the last id',
    async () => {
      const { page, sockets, errors } = await open();
      const [start] = await append(db, acct.accountId, 1);
      const baseUrl = `http://127.0.0.1:${port}`;
      const i = await page.evaluate(
        (o) => (window as unknown as PageApi).startStream(o),
        { baseUrl, apiKey: acct.key, lastId: start!, reconnect: { baseDelayMs: 50, maxDelayMs: 500 } },
      );

      const early = await append(db, acct.accountId, 25);
      await until(page, i, (r) => r.rows.length >= early.length, 'the first rows');
      await t.close(); // 1001 server_shutdown: the page starts reconnecting, refused while the node is down
      const written: number[] = [];
      for (let n = 0; n < 5; n++) written.push(...(await append(db, acct.accountId, 50)));
      t = await startNode({ port, db, env: { STREAM_MAX_REPLAY_ROWS: String(MAX_REPLAY_ROWS) } });
      const late = await append(db, acct.accountId, 10); // written while the page catches up
      const expected = [...early, ...written, ...late];
      await until(page, i, (r) => r.rows.length >= expected.length, `${expected.length} rows`);
      // Nothing more, nothing twice: one last row after all the rest; once it is in, any repeat
      // of an earlier row would be too (rows arrive in log order).
      expected.push(...(await append(db, acct.accountId, 1)));
      await until(page, i, (r) => r.rows.includes(expected.at(-1)!), 'the last row');
      await sleep(200); // for the page's iterator to catch up with the events
      const r = await results(page, i);

      expect(r.rows).toEqual(expected);
      expect(r.iterated).toEqual(expected);
      expect(r.lastId).toBeGreaterThanOrEqual(expected.at(-1)!);
      expect(r.errors).toEqual([]);
      expect(r.iteratorError).toBeNull();
      expect(r.disconnects[0]).toMatchObject({ code: 1001, reason: 'server_shutdown' });
      // 250 rows behind with max_replay_rows 100: asked (and able) to reconnect for the rest, at once.
      const replayLimits = r.disconnects.filter((d) => d.code === 1013 && d.reason === 'replay_limit');
      expect(replayLimits.length).toBeGreaterThanOrEqual(2);
      expect(replayLimits.every((d) => d.delayMs === 0)).toBe(true);

      // The default path: the key in the query (browsers cannot set headers) on every attempt.
      expect(sockets.length).toBe(r.connections);
      for (const url of sockets) {
        expect(new URL(url).pathname).toBe(STREAM_PATH);
        expect(query(url).get('apikey')).toBe(acct.key);
      }
      // Resumed from the last id: the first connection from the id given, the first one after
      // the drop from past the early rows (a heartbeat or live head may have moved it further,
      // never into the rows written while the node was down), and never backwards.
      const lastIds = sockets.map((url) => Number(query(url).get('last_id')));
      expect(lastIds[0]).toBe(start);
      expect(lastIds[1]).toBeGreaterThanOrEqual(early.at(-1)!);
      expect(lastIds[1]).toBeLessThan(written[0]!);
      for (let n = 1; n < lastIds.length; n++) expect(lastIds[n]).toBeGreaterThanOrEqual(lastIds[n - 1]!);
      // The node saw the same positions (refused attempts while it was down say no hello).
      expect(r.hellos[0]!.last_id).toBe(start);
      expect(r.hellos[1]!.last_id).toBe(lastIds[1]);

      await page.evaluate((n) => (window as unknown as PageApi).closeStream(n), i);
      expect((await results(page, i)).closed).toBe(true);
      expect(errors).toEqual([]);
      await page.close();
    },
    90_000,
  );

  it('without lastId: starts at the head the node announces in its hello, and delivers every row after it once', async () => {
    const { page, sockets, errors } = await open();
    const before = await append(db, acct.accountId, 3);
    const i = await page.evaluate((o) => (window as unknown as PageApi).startStream(o), { baseUrl: `http://127.0.0.1:${port}`, apiKey: acct.key });
    const { hellos } = await until(page, i, (r) => r.hellos.length === 1, 'hello');
    expect(hellos[0]!.last_id).toBeNull();
    // The head is the node's follower cursor: rows committed just before the connect that it
    // had not reached yet come after it, and are delivered; rows at or before it are not.
    const head = hellos[0]!.head;
    const after = await append(db, acct.accountId, 5);
    const expected = [...before.filter((id) => id > head), ...after];
    await until(page, i, (r) => r.rows.length >= expected.length, `${expected.length} rows`);
    // Nothing more, nothing twice: a last row after the rest, in once any repeat would be.
    expected.push(...(await append(db, acct.accountId, 1)));
    await until(page, i, (r) => r.rows.includes(expected.at(-1)!), 'the last row');
    await sleep(200); // for the page's iterator to catch up with the events
    const r = await results(page, i);
    expect(r.rows).toEqual(expected);
    expect(r.iterated).toEqual(expected);
    expect(r.disconnects).toEqual([]);
    expect(sockets).toHaveLength(1);
    expect(query(sockets[0]!).has('last_id')).toBe(false);
    expect(query(sockets[0]!).get('apikey')).toBe(acct.key);
    await page.evaluate((n) => (window as unknown as PageApi).closeStream(n), i);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('the browser asked nothing of any address but 127.0.0.1', () => {
    expect(requested.filter((url) => !loopback(url))).toEqual([]);
    expect(aborted).toEqual([]);
    expect(requested.some((url) => url.startsWith('ws://127.0.0.1:'))).toBe(true);
    expect(requested.some((url) => url.endsWith('/client.js'))).toBe(true);
  });
});
