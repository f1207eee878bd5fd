// Shared by the stream tests: a real stream node (uWS, its follower LISTENing on the run's
// PostgreSQL) started the way `npm start` starts it, log rows appended through the log's own
// writer, real `ws` clients that record what they receive, and refusals read as HTTP answers.
import type { SlotTimings } from '../../src/stream/connection-slots.ts';
import { randomInt } from 'node:crypto';
import net from 'node:net';
import { Writable } from 'node:stream';
import { Registry } from 'prom-client';
import WebSocket from 'ws';
import { createDb, type Db } from '../../db/connection.ts';
import { appendToLog, type LogEntry } from '../../src/notifications/log.ts';
import { createLogger, type Logger } from '../../src/logger.ts';
import { startStreamNode, type StreamNode } from '../../src/stream/start.ts';
import { STREAM_PATH, serverMessageSchema } from '../../src/stream/protocol.ts';
import type { AdmissionDeps } from '../../src/stream/admission.ts';
import { testConfig } from '../support/harness.ts';

/**
 * Per-address limits and connection caps out of the way unless a test is about them (each client
 * says its own address; connection-caps.test.ts sets its caps).
 */
export const STREAM_ENV: Record<string, string> = {
  HOST: '127.0.0.1',
  STREAM_PORT: '0',
  UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: '1000000',
  STREAM_MAX_CONNECTIONS_PER_KEY: '1000',
  STREAM_MAX_CONNECTIONS_PER_ACCOUNT: '1000',
  STREAM_POLL_MS: '2000',
};

export function randomAddress(): string {
  return `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;
}

/** Log lines the node wrote, parsed. */
export class LogLines {
  readonly lines: Record<string, unknown>[] = [];
  readonly raw: string[] = [];
  stream(): Writable {
    return new Writable({
      write: (chunk: Buffer, _enc, done) => {
        for (const line of chunk.toString().split('\n').filter(Boolean)) {
          this.raw.push(line);
          this.lines.push(JSON.parse(line) as Record<string, unknown>);
        }
        done();
      },
    });
  }
}

export interface TestNode {
  node: StreamNode;
  port: number;
  url: string;
  db: Db;
  logs: LogLines;
  registry: Registry;
  close(): Promise<void>;
}

export async function startNode(
  opts: {
    env?: Record<string, string>;
    db?: Db;
    keys?: AdmissionDeps['keys'];
    port?: number;
    keyRecheckMs?: number;
    /** The node's database address, when not the run's (a proxy in between). */
    connectionString?: string;
    slotTimings?: SlotTimings;
  } = {},
): Promise<TestNode> {
  const config = testConfig({ ...STREAM_ENV, ...(opts.port ? { STREAM_PORT: String(opts.port) } : {}), ...opts.env });
  const connectionString = opts.connectionString ?? config.DATABASE_URL!;
  const db = opts.db ?? createDb({ connectionString, poolMax: 4 });
  const logs = new LogLines();
  const log: Logger = createLogger('info', logs.stream());
  const registry = new Registry();
  const node = await startStreamNode({ config, db, connectionString, log, registry, keys: opts.keys, keyRecheckMs: opts.keyRecheckMs, slotTimings: opts.slotTimings });
  const port = node.server.port;
  return {
    node,
    port,
    url: `ws://127.0.0.1:${port}${STREAM_PATH}`,
    db,
    logs,
    registry,
    close: async () => {
      await node.close();
      if (!opts.db) await db.destroy();
    },
  };
}

let dedupe = 0;

/** Appends rows for one account in one transaction, through the log's writer; returns their ids. */
export async function append(db: Db, accountId: number, n = 1, kind: LogEntry['kind'] = 'notification', extra: Record<string, unknown> = {}): Promise<number[]> {
  const entries: LogEntry[] = [];
  for (let i = 0; i < n; i++) {
    const seq = ++dedupe;
    entries.push({
      accountId,
      itemId: 1000 + (seq % 7),
      kind,
      dedupeKey: `stream-test:${process.pid}:${Date.now()}:${seq}`,
      payload:
        kind === 'notification'
          ? {
              item_id: 1000 + (seq % 7),
              change_type: 'price_decrease',
              platform: 'pf_03',
              event: 'https://pf03.example/e/stream-test',
              region: 'us',
              section: 'Floor',
              before: { stock: 4, min_price: 120.5, avg_price: 130 },
              after: { stock: 4, min_price: 99, avg_price: 110 },
              currency: 'EUR',
              detected_at: new Date().toISOString(),
              seq,
              ...extra,
            }
          : { op: 'update', item_id: 1000 + (seq % 7), item: { id: 1000 + (seq % 7) }, seq, ...extra },
    });
  }
  return db.transaction((trx) => appendToLog(trx, entries));
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Message = Record<string, any>;

/** A real `ws` client that keeps every message it receives. */
export class Client {
  readonly messages: Message[] = [];
  readonly ws: WebSocket;
  readonly opened: Promise<void>;
  readonly closed: Promise<{ code: number; reason: string }>;
  closeInfo: { code: number; reason: string } | null = null;
  private waiters: (() => void)[] = [];

  constructor(url: string, opts: { key?: string; lastId?: number; headers?: Record<string, string>; query?: string } = {}) {
    const qs = new URLSearchParams(opts.query ?? '');
    if (opts.lastId !== undefined) qs.set('last_id', String(opts.lastId));
    const full = qs.size ? `${url}?${qs}` : url;
    this.ws = new WebSocket(full, { headers: { ...(opts.key ? { apikey: opts.key } : {}), 'x-forwarded-for': randomAddress(), ...opts.headers } });
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('unexpected-response', (_req, res) => reject(new Error(`refused with ${res.statusCode}`)));
      this.ws.once('error', reject);
    });
    this.opened.catch(() => {});
    this.closed = new Promise((resolve) => this.ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    this.ws.on('message', (data) => {
      this.messages.push(JSON.parse(data.toString()) as Message);
      for (const w of this.waiters.splice(0)) w();
    });
    this.ws.on('close', (code, reason) => {
      this.closeInfo = { code, reason: reason.toString() };
      for (const w of this.waiters.splice(0)) w();
    });
  }

  /** Messages from the log (notification, target_retired, platform_incident and watchlist), in arrival order. */
  rows(): Message[] {
    return this.messages.filter((m) => m.type === 'notification' || m.type === 'target_retired' || m.type === 'platform_incident' || m.type === 'watchlist');
  }

  ids(): number[] {
    return this.rows().map((m) => m.id as number);
  }

  lastId(): number {
    const ids = this.ids();
    return ids.length ? ids[ids.length - 1]! : (this.messages.find((m) => m.type === 'hello')?.head as number);
  }

  /**
   * Waits until `check` holds over the messages (or the socket closed), failing after timeoutMs:
   * generous by default, as a loaded machine is slow and a passing run returns as soon as it holds.
   */
  async until(check: (c: Client) => boolean, timeoutMs = 20_000, what = 'condition'): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check(this)) {
      if (this.ws.readyState === WebSocket.CLOSED) throw new Error(`closed (${JSON.stringify(this.closeInfo)}) before ${what}; got ${JSON.stringify(this.messages.slice(-3))}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; got ${this.messages.length} messages, last ${JSON.stringify(this.messages.slice(-2))}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Resolves once the server said `live` (replay done, subscribed). */
  live(timeoutMs = 20_000): Promise<void> {
    return this.until((c) => c.messages.some((m) => m.type === 'live'), timeoutMs, 'live');
  }

  close(): void {
    this.ws.close();
  }
}

/** Opens a client and waits until it is live. */
export async function connect(url: string, opts: ConstructorParameters<typeof Client>[1] = {}): Promise<Client> {
  const c = new Client(url, opts);
  await c.opened;
  await c.live();
  return c;
}

/** Every message parses with the protocol's schema. */
export function checkSchemas(messages: readonly Message[]): void {
  for (const m of messages) {
    const parsed = serverMessageSchema.safeParse(m);
    if (!parsed.success) throw new Error(`message does not match the protocol: ${JSON.stringify(m)}\n${parsed.error.message}`);
  }
}

export interface Refusal {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/** An upgrade attempt that must be refused: its HTTP status, headers and JSON body. */
export function refusal(url: string, headers: Record<string, string> = {}): Promise<Refusal> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { 'x-forwarded-for': randomAddress(), ...headers } });
    ws.once('open', () => {
      ws.close();
      reject(new Error('upgrade was accepted'));
    });
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => {
        let body: unknown = null;
        try {
          body = JSON.parse(text);
        } catch {
          body = text;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
        ws.terminate();
      });
    });
    ws.once('error', (err) => reject(err));
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A raw handshake's answer (rawUpgrade). */
export interface RawAnswer {
  status: number;
  /** The response head and, for an error, its body (and, for a 101 read to its hello, that frame). */
  text: string;
  /** The hello frame arrived (a 101 read on to it). */
  hello: boolean;
  /** The server closed the connection before the answer was complete, or within `holdMs` after the hello. */
  closedEarly: boolean;
}

/**
 * Sends one request on raw TCP, so no client library tidies the handshake up. An error is read
 * until its body is complete. A 101 is read until its head (`untilHello: false`), or on until its
 * hello frame and then held `holdMs` to see that the server keeps the connection open.
 */
export function rawUpgrade(port: number, head: string, options: { untilHello?: boolean; holdMs?: number } = {}): Promise<RawAnswer> {
  const { untilHello = true, holdMs = 0 } = options;
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let raw = Buffer.alloc(0);
    let status = 0;
    let hello = false;
    let settled = false;
    const finish = (closedEarly: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ status, text: raw.toString('utf8'), hello, closedEarly });
    };
    const timer = setTimeout(() => {
      settled = true;
      socket.destroy();
      reject(new Error(`no complete answer to:\n${head}\ngot: ${raw.toString('utf8')}`));
    }, 15_000);
    socket.on('data', (d: Buffer) => {
      raw = Buffer.concat([raw, d]);
      const text = raw.toString('utf8');
      const m = /^HTTP\/1\.1 (\d{3}) /.exec(text);
      if (!m) return;
      status = Number(m[1]);
      if (status !== 101) {
        if (/\r\n\r\n[\s\S]*\}\}$/.test(text)) finish(false);
        return;
      }
      if (!untilHello) {
        if (text.includes('\r\n\r\n')) finish(false);
        return;
      }
      if (!hello && text.includes('"type":"hello"')) {
        hello = true;
        setTimeout(() => finish(false), holdMs);
      }
    });
    // A reset is followed by 'close', which says what was read.
    socket.on('error', () => {});
    socket.on('close', () => {
      if (status) return finish(true);
      settled = true;
      clearTimeout(timer);
      reject(new Error(`closed without an answer to:\n${head}`));
    });
    socket.write(head);
  });
}
