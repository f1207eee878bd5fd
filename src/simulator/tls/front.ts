// The simulator's front door: one TCP port that serves plain HTTP and HTTPS (HTTP/2 and
// HTTP/1.1), and records what each client shows on the wire before any HTTP is read, as a bot
// wall in front of a real platform does. For each connection it peeks at the first byte: 0x16 (a
// TLS handshake record) means TLS, whose ClientHello it reads (bounded in bytes and time) and
// fingerprints (./client-hello.ts); anything else goes to the plain HTTP server. Over TLS with
// ALPN h2 it also reads the client's connection preface and first SETTINGS frame, to know which
// settings the client sent and in which order (Node's `remoteSettings` fills in defaults for the
// ones a client left out, so it cannot tell them apart). Whatever was read is put back
// (`unshift`) before the socket is handed to Node's servers, so they see the bytes untouched.
//
// What a connection showed lives on its socket object under a symbol (no map to leak: it goes
// with the socket); `wireMiddleware` turns it and the request's header order into
// `ctx.state.wire` (./wire-facts.ts) on every request.
import { EventEmitter } from 'node:events';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import http2, { type Http2ServerRequest, type Http2ServerResponse, type Http2Session } from 'node:http2';
import net, { type Socket } from 'node:net';
import type tls from 'node:tls';
import type { Context, Middleware } from 'koa';
import type { Logger } from '../../logger.ts';
import { MAX_HELLO_BYTES, parseClientHello } from './client-hello.ts';
import type { ClientHelloFacts, WireFacts } from './wire-facts.ts';

/** A client that has not sent its whole ClientHello (or h2 preface and SETTINGS) by then is dropped. */
export const HELLO_TIMEOUT_MS = 10_000;
/** Connections open at once at most (net.Server.maxConnections): past it a new connection is closed at once. */
export const MAX_CONNECTIONS = 10_000;

const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const H2_FRAME_SETTINGS = 0x4;
/** The first SETTINGS frame may be up to the default SETTINGS_MAX_FRAME_SIZE. */
const MAX_H2_SNIFF_BYTES = H2_PREFACE.length + 9 + 16384;

/** Node's names for the settings of RFC 9113 6.5.2 and RFC 8441 (enableConnectProtocol). */
const H2_SETTING_NAMES: Record<number, string> = {
  0x1: 'headerTableSize',
  0x2: 'enablePush',
  0x3: 'maxConcurrentStreams',
  0x4: 'initialWindowSize',
  0x5: 'maxFrameSize',
  0x6: 'maxHeaderListSize',
  0x8: 'enableConnectProtocol',
  0x9: 'noRfc7540Priorities',
};
const BOOLEAN_SETTINGS = new Set([0x2, 0x8, 0x9]);

/** What one connection showed before HTTP; set on its socket. */
interface ConnectionFacts {
  scheme: 'http' | 'https';
  hello: ClientHelloFacts | null;
  h2Settings: Record<string, number | boolean> | null;
}

const CONNECTION = Symbol('simulator.connection');
type Tagged = { [CONNECTION]?: ConnectionFacts };

export interface FrontOptions {
  certPem: string;
  keyPem: string;
  helloTimeoutMs?: number;
  maxConnections?: number;
  /** Where refused handshakes are noted (debug level); none by default. */
  logger?: Logger;
}

export interface FrontEvents {
  /** Every ClientHello read, with the peer it came from (for measuring clients: known-fingerprints.ts). */
  hello: [facts: ClientHelloFacts, peer: { address: string | undefined; port: number | undefined }];
  /**
   * Every answer sent, over HTTP or HTTPS alike, once finished (for a bench counting what was
   * served from outside the app); emitted only while someone listens.
   */
  answered: [req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse];
}

type Handler = (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => void;

export class SimulatorFront extends EventEmitter<FrontEvents> {
  /** The listening socket: plain HTTP and TLS on the same port. */
  readonly server: net.Server;
  private readonly plain: http.Server;
  private readonly secure: http2.Http2SecureServer;
  /** ClientHellos read whose TLS handshake is under way, by peer address and port (one live connection each). */
  private readonly pending = new Map<string, { raw: Socket; hello: ClientHelloFacts }>();
  private readonly sockets = new Set<Socket>();
  private readonly sessions = new Set<Http2Session>();
  private readonly helloTimeoutMs: number;
  private readonly logger: Logger | undefined;

  constructor(app: Handler, options: FrontOptions) {
    super();
    const handler: Handler = (req, res) => {
      if (this.listenerCount('answered') > 0) res.once('finish', () => this.emit('answered', req, res));
      app(req, res);
    };
    this.helloTimeoutMs = options.helloTimeoutMs ?? HELLO_TIMEOUT_MS;
    this.logger = options.logger;
    this.plain = http.createServer(handler as (req: IncomingMessage, res: ServerResponse) => void);
    this.secure = http2.createSecureServer(
      { allowHTTP1: true, cert: options.certPem, key: options.keyPem, handshakeTimeout: this.helloTimeoutMs },
      handler as (req: Http2ServerRequest, res: Http2ServerResponse) => void,
    );
    // Node's http2 takes a socket on 'secureConnection'; the front puts itself first, to read the
    // h2 SETTINGS before nghttp2 does, and calls Node's own listener when it has.
    const nodeListeners = this.secure.listeners('secureConnection') as ((socket: tls.TLSSocket) => void)[];
    this.secure.removeAllListeners('secureConnection');
    this.secure.on('secureConnection', (socket: tls.TLSSocket) =>
      this.secured(socket, () => {
        for (const listener of nodeListeners) listener.call(this.secure, socket);
      }),
    );
    this.secure.on('session', (session: Http2Session) => {
      this.sessions.add(session);
      session.once('close', () => this.sessions.delete(session));
      // A session error is the client's doing (a bad frame, a reset); it must not crash the simulator.
      session.on('error', () => session.destroy());
    });
    this.server = net.createServer((socket) => this.accept(socket));
    this.server.maxConnections = options.maxConnections ?? MAX_CONNECTIONS;
  }

  listen(port: number, host: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
  }

  /** Live connections (raw and TLS sockets), for tests of the bound and of close(). */
  get connections(): number {
    return this.sockets.size;
  }

  /** ClientHellos whose TLS handshake has not finished (for tests of the bound). */
  get pendingHandshakes(): number {
    return this.pending.size;
  }

  /** Stops listening and destroys every connection, HTTP/2 sessions included. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const session of this.sessions) session.destroy();
    for (const socket of this.sockets) socket.destroy();
    this.plain.closeAllConnections();
    await closed;
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
  }

  private accept(raw: Socket): void {
    this.track(raw);
    raw.on('error', () => raw.destroy());
    const timer = setTimeout(() => raw.destroy(), this.helloTimeoutMs);
    timer.unref();
    raw.once('close', () => clearTimeout(timer));
    const chunks: Buffer[] = [];
    let length = 0;
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      length += chunk.length;
      const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);
      if (bytes[0] !== 0x16) {
        clearTimeout(timer);
        stop(bytes);
        (raw as Socket & Tagged)[CONNECTION] = { scheme: 'http', hello: null, h2Settings: null };
        this.plain.emit('connection', raw);
        // Paused by stop(): the http server's 'data' listener does not resume a paused stream.
        raw.resume();
        return;
      }
      const parsed = parseClientHello(bytes);
      if (parsed.kind === 'need-more') {
        if (length > MAX_HELLO_BYTES) raw.destroy();
        return;
      }
      if (parsed.kind === 'not-hello') {
        this.logger?.debug({ reason: parsed.reason, peer: raw.remoteAddress }, 'simulator front: not a ClientHello, connection closed');
        raw.destroy();
        return;
      }
      stop(bytes);
      this.emit('hello', parsed.facts, { address: raw.remoteAddress, port: raw.remotePort });
      this.startTls(raw, parsed.facts, timer);
    };
    const stop = (bytes: Buffer) => {
      raw.off('data', onData);
      raw.pause();
      raw.unshift(bytes);
    };
    raw.on('data', onData);
  }

  /** Hands a socket whose ClientHello was read to the TLS server (Node's http2 secure server). */
  private startTls(raw: Socket, hello: ClientHelloFacts, timer: NodeJS.Timeout): void {
    clearTimeout(timer); // the TLS server's handshakeTimeout takes over
    const key = peerKey(raw);
    this.pending.set(key, { raw, hello });
    raw.once('close', () => {
      if (this.pending.get(key)?.raw === raw) this.pending.delete(key);
    });
    // tls.Server takes the bytes put back on `raw` as the start of the handshake.
    this.secure.emit('connection', raw);
  }

  /** The TLS handshake is done: join the socket to its ClientHello, then to HTTP/2 or HTTP/1.1. */
  private secured(socket: tls.TLSSocket, handOver: () => void): void {
    this.track(socket);
    const key = peerKey(socket);
    const hello = this.pending.get(key)?.hello ?? null;
    this.pending.delete(key);
    if (socket.alpnProtocol !== 'h2') {
      (socket as Socket & Tagged)[CONNECTION] = { scheme: 'https', hello, h2Settings: null };
      handOver();
      return;
    }
    this.sniffH2(socket, hello, handOver);
  }

  /** Reads the h2 preface and the client's first SETTINGS frame, puts them back, then hands over. */
  private sniffH2(socket: tls.TLSSocket, hello: ClientHelloFacts | null, handOver: () => void): void {
    const timer = setTimeout(() => socket.destroy(), this.helloTimeoutMs);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
    const chunks: Buffer[] = [];
    let length = 0;
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      length += chunk.length;
      const bytes = Buffer.concat(chunks, length);
      const settings = readFirstSettings(bytes);
      if (settings === undefined) {
        if (length > MAX_H2_SNIFF_BYTES) socket.destroy();
        return;
      }
      socket.off('data', onData);
      socket.pause();
      socket.unshift(bytes);
      clearTimeout(timer);
      (socket as Socket & Tagged)[CONNECTION] = { scheme: 'https', hello, h2Settings: settings };
      // Http2Session feeds what is buffered on the socket to nghttp2 before reading the rest.
      handOver();
    };
    socket.on('data', onData);
  }
}

/**
 * The settings of the first SETTINGS frame after the h2 preface, in the order sent (object key
 * order), or undefined while more bytes are needed. A client that does not start with the
 * preface and a SETTINGS frame gets {} and is left to Node's http2, which refuses it.
 */
export function readFirstSettings(bytes: Buffer): Record<string, number | boolean> | undefined {
  const prefaceSeen = Math.min(bytes.length, H2_PREFACE.length);
  if (!bytes.subarray(0, prefaceSeen).equals(H2_PREFACE.subarray(0, prefaceSeen))) return {};
  if (bytes.length < H2_PREFACE.length + 9) return undefined;
  const at = H2_PREFACE.length;
  const frameLength = bytes.readUIntBE(at, 3);
  if (bytes[at + 3] !== H2_FRAME_SETTINGS || frameLength % 6 !== 0 || frameLength > 16384) return {};
  if (bytes.length < at + 9 + frameLength) return undefined;
  const settings: Record<string, number | boolean> = {};
  for (let p = at + 9; p < at + 9 + frameLength; p += 6) {
    const id = bytes.readUInt16BE(p);
    const value = bytes.readUInt32BE(p + 2);
    const name = H2_SETTING_NAMES[id] ?? `setting_0x${id.toString(16)}`;
    settings[name] = BOOLEAN_SETTINGS.has(id) ? value === 1 : value;
  }
  return settings;
}

function peerKey(socket: Socket): string {
  return `${socket.remoteAddress}|${socket.remotePort}`;
}

/** Sets `ctx.state.wire` on every request: first in the simulator's middleware. */
export function wireMiddleware(): Middleware {
  return async (ctx: Context, next) => {
    ctx.state.wire = wireFactsOf(ctx.req);
    await next();
  };
}

function wireFactsOf(req: IncomingMessage): WireFacts {
  // Under HTTP/2, req.socket is Node's proxy of the session's socket; it forwards property reads.
  const connection = (req.socket as (Socket & Tagged) | null)?.[CONNECTION] ?? { scheme: 'http', hello: null, h2Settings: null };
  const pseudoHeaderOrder: string[] = [];
  const headerOrder: string[] = [];
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    (name.startsWith(':') ? pseudoHeaderOrder : headerOrder).push(name);
  }
  return {
    scheme: connection.scheme,
    hello: connection.hello,
    httpVersion: req.httpVersion,
    h2Settings: req.httpVersion === '2.0' ? connection.h2Settings : null,
    pseudoHeaderOrder,
    headerOrder,
  };
}
