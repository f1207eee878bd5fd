// Reading JSON bodies (src/gateway/json-body.ts), on the wire: a body over MAX_BODY_BYTES is
// always answered (never a reset connection while the client is still uploading), a small
// overshoot keeps the connection usable, and a huge upload is cut off after the answer.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAccount, startTestGateway, type TestAccount, type TestGateway } from '../support/harness.ts';
import { clientFor, createFixtureApi, withFixture, GATEWAY_ENV, type Client } from '../support/gateway-helpers.ts';

const LIMIT = 16 * 1024;
let gw: TestGateway;
let api: Client;
let acct: TestAccount;
let port: number;

beforeAll(async () => {
  // The fixture API exercises the gateway contract: its addEvent route reads the body with the
  // gateway's reader and answers 413 or what it parsed.
  gw = await startTestGateway({ env: { ...GATEWAY_ENV, MAX_BODY_BYTES: String(LIMIT) }, apis: withFixture(createFixtureApi()) });
  api = clientFor(gw.url);
  acct = await newAccount(gw.db);
  port = Number(new URL(gw.url).port);
});
afterAll(async () => {
  await gw.close();
});

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A raw HTTP/1.1 connection, so uploads can race the answer the way a fast client does. */
class Connection {
  private readonly socket: net.Socket;
  private buffer = '';
  private waiters: (() => void)[] = [];
  closed = false;
  errors: string[] = [];

  constructor() {
    this.socket = net.connect(port, '127.0.0.1');
    this.socket.setEncoding('latin1');
    this.socket.on('data', (d: string) => {
      this.buffer += d;
      this.wake();
    });
    this.socket.on('error', (e: NodeJS.ErrnoException) => this.errors.push(e.code ?? e.message));
    this.socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    w.forEach((f) => f());
  }

  write(data: string): boolean {
    if (this.socket.destroyed || this.closed) return false;
    this.socket.write(data, 'latin1');
    return true;
  }

  head(path: string, headers: Record<string, string>, method = 'POST'): void {
    const lines = Object.entries({ host: 'test', apikey: acct.key, 'content-type': 'application/json', ...headers }).map(([k, v]) => `${k}: ${v}`);
    this.write(`${method} ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`);
  }

  chunk(data: string): boolean {
    return this.write(`${Buffer.byteLength(data).toString(16)}\r\n${data}\r\n`);
  }

  /** The next complete response on the connection (Content-Length framed); null if none comes within `timeoutMs` (generous: a loaded machine is slow, a passing run does not wait). */
  async response(timeoutMs = 15_000): Promise<RawResponse | null> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end >= 0) {
        const [statusLine, ...lines] = this.buffer.slice(0, end).split('\r\n');
        const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
        const length = Number(headers['content-length'] ?? 0);
        if (this.buffer.length >= end + 4 + length) {
          const body = this.buffer.slice(end + 4, end + 4 + length);
          this.buffer = this.buffer.slice(end + 4 + length);
          return { status: Number(statusLine!.split(' ')[1]), headers, body };
        }
      }
      if (this.closed || Date.now() > deadline) return null;
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 50);
      });
    }
  }

  async waitClosed(timeoutMs = 10_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    return this.closed;
  }

  destroy(): void {
    this.socket.destroy();
  }
}

const PATH = '/svc/data/events/add';

/** A chunked POST 1 KiB over the limit, sent whole: the reader drains it. */
function smallOvershoot(path: string): Connection {
  const c = new Connection();
  c.head(path, { 'transfer-encoding': 'chunked' });
  c.chunk(' '.repeat(LIMIT));
  c.chunk(' '.repeat(1024));
  c.write('0\r\n\r\n');
  return c;
}

/** A chunked POST of up to 2.5 MiB, as fast as the socket takes it: the reader abandons it. */
function flood(path: string): Connection {
  const c = new Connection();
  c.head(path, { 'transfer-encoding': 'chunked' });
  const piece = ' '.repeat(64 * 1024);
  for (let i = 0; i < 40; i++) if (!c.chunk(piece)) break;
  return c;
}

describe('bodies over MAX_BODY_BYTES', () => {
  it('a fast chunked upload far over the limit gets its 413, then the connection is closed', async () => {
    for (let attempt = 0; attempt < 10; attempt++) {
      const c = flood(PATH);
      const r = await c.response();
      expect(r, `attempt ${attempt}: no answer (${c.errors.join(',')})`).not.toBeNull();
      expect(r!.status).toBe(413);
      expect(JSON.parse(r!.body)).toEqual({ kind: 'too_large', limit: LIMIT });
      expect(r!.headers.connection).toBe('close');
      expect(await c.waitClosed()).toBe(true);
      c.destroy();
    }
  });

  it('a small overshoot is read to its end: 413, and the same connection serves the next request', async () => {
    const c = smallOvershoot(PATH);
    const first = await c.response();
    expect(first?.status).toBe(413);
    expect(first!.headers.connection).not.toBe('close');
    const body = JSON.stringify({ hello: 'again' });
    c.head(PATH, { 'content-length': String(body.length) });
    c.write(body);
    const second = await c.response();
    expect(second?.status).toBe(200);
    expect(JSON.parse(second!.body)).toEqual({ kind: 'json', value: { hello: 'again' } });
    c.destroy();
  });

  it('a declared Content-Length over the limit is answered before the body is read, and the connection closed', async () => {
    const c = new Connection();
    c.head(PATH, { 'content-length': String(LIMIT * 50) });
    for (let i = 0; i < 10; i++) c.write(' '.repeat(8 * 1024));
    const r = await c.response();
    expect(r?.status).toBe(413);
    expect(r!.headers.connection).toBe('close');
    expect(await c.waitClosed()).toBe(true);
    c.destroy();
  });

  it('exactly the limit is accepted', async () => {
    const value = 'x'.repeat(LIMIT - 2);
    const r = await api('POST', PATH, { key: acct.key, raw: JSON.stringify(value), headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ kind: 'json', value });
    const over = await api('POST', PATH, { key: acct.key, raw: JSON.stringify(value + 'x'), headers: { 'content-type': 'application/json' } });
    expect(over.status).toBe(413);
  });
});

// The real APIs (not the fixture's routes) read bodies through readJsonObject and answer in their own envelope; none may
// force the connection closed for an overshoot the reader drained (nor keep it for one it did not).
describe.each([
  { path: '/watchlist', status: 413, body: { error: `body is larger than ${LIMIT} bytes` } },
  { path: '/events/scrape', status: 413, body: { detail: `body is larger than ${LIMIT} bytes` } },
])('real route POST $path over the limit', ({ path, status, body }) => {
  it('a small overshoot keeps the connection for the next request', async () => {
    const c = smallOvershoot(path);
    const first = await c.response();
    expect(first?.status).toBe(status);
    expect(JSON.parse(first!.body)).toMatchObject(body);
    expect(first!.headers.connection).not.toBe('close');
    c.head('/watchlist', {}, 'GET');
    const second = await c.response();
    expect(second?.status).toBe(200);
    expect(JSON.parse(second!.body)).toEqual([]);
    c.destroy();
  });

  it('a large chunked upload is answered, then the connection is closed', async () => {
    const c = flood(path);
    const r = await c.response();
    expect(r, `no answer (${c.errors.join(',')})`).not.toBeNull();
    expect(r!.status).toBe(status);
    expect(JSON.parse(r!.body)).toMatchObject(body);
    expect(r!.headers.connection).toBe('close');
    expect(await c.waitClosed()).toBe(true);
    c.destroy();
  });
});

describe('bodies within the limit', () => {
  it.each([
    ['', { kind: 'empty' }],
    ['   \n', { kind: 'empty' }],
    ['{"a":[1,2,{"b":null}]}', { kind: 'json', value: { a: [1, 2, { b: null }] } }],
    ['"é ✓ 😀"', { kind: 'json', value: 'é ✓ 😀' }],
    ['[1,', { kind: 'invalid' }],
  ])('%j reads as %j', async (raw, expected) => {
    const r = await api('POST', PATH, { key: acct.key, raw, headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject(expected);
  });

  it('a multi-byte character split across chunks is decoded whole', async () => {
    const c = new Connection();
    c.head(PATH, { 'transfer-encoding': 'chunked' });
    const bytes = Buffer.from('"😀"', 'utf8');
    // Chunk boundaries inside the 4-byte character.
    for (const part of [bytes.subarray(0, 2), bytes.subarray(2, 4), bytes.subarray(4)]) c.write(`${part.length.toString(16)}\r\n${part.toString('latin1')}\r\n`);
    c.write('0\r\n\r\n');
    const r = await c.response();
    expect(r?.status).toBe(200);
    expect(JSON.parse(Buffer.from(r!.body, 'latin1').toString('utf8'))).toEqual({ kind: 'json', value: '😀' });
    c.destroy();
  });
});
