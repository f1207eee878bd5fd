// The notification stream client (GET /asyncapi.json): one WebSocket at a time, resumed from the
// last log id it delivered after any drop, so every notification reaches you once and in order,
// across restarts of the server, 1013 "reconnect for the rest" and silent (heartbeat-less) links.
// Runs on the platform's WebSocket (browsers, Node 22+) or one you pass (`ws` on Node 20).
import { backoffDelay } from './retry.ts';
import type { components } from './generated/stream.ts';

export type StreamSchemas = components['schemas'];
export type ServerMessage = StreamSchemas['ServerMessage'];
export type Hello = StreamSchemas['Hello'];
export type Live = StreamSchemas['Live'];
export type Heartbeat = StreamSchemas['Heartbeat'];
export type Notification = StreamSchemas['Notification'];
export type WatchlistChange = StreamSchemas['WatchlistChange'];
export type TargetRetired = StreamSchemas['TargetRetired'];
export type PlatformIncident = StreamSchemas['PlatformIncident'];
/** A message from the log: it has an `id`, and is delivered exactly once. */
export type StreamRow = Notification | TargetRetired | PlatformIncident | WatchlistChange;

/** The stream's path (the AsyncAPI channel address; the drift test holds the two together). */
export const STREAM_PATH = '/svc/notifications/subscribe';

/* eslint-disable @typescript-eslint/no-explicit-any -- structural typing over `ws` and the DOM's WebSocket */
/** What the client needs of a WebSocket: the DOM's and `ws`'s both fit. */
export interface WebSocketLike {
  onopen: ((ev: any) => void) | null;
  onmessage: ((ev: any) => void) | null;
  onclose: ((ev: any) => void) | null;
  onerror: ((ev: any) => void) | null;
  close(code?: number, reason?: string): void;
  /** `ws` only: drop the TCP connection without a closing handshake. */
  terminate?: () => void;
}
export type WebSocketConstructor = new (url: string, protocols?: any, options?: any) => WebSocketLike;
/* eslint-enable @typescript-eslint/no-explicit-any */

export interface StreamOptions {
  /** The service's address: `https://host` (or `http://` locally); `wss://`/`ws://` work too. */
  baseUrl: string;
  apiKey: string;
  /** Resume after this log id (e.g. one saved on disk). Without it, from the server's head now. */
  lastId?: number | null;
  /** A WebSocket constructor; default globalThis.WebSocket. On Node 20 pass `ws`'s default export. */
  WebSocket?: WebSocketConstructor;
  /**
   * How the key is sent: the `apikey` header (only constructors that take options, like `ws`), or
   * `?apikey=` (browsers cannot set headers). Default: 'header' with a given constructor, else 'query'.
   */
  sendKeyAs?: 'header' | 'query';
  /** Extra upgrade headers (header mode only). */
  headers?: Record<string, string>;
  /** Reconnect backoff after a drop (1013 is retried at once): equal-jitter exponential. */
  reconnect?: { baseDelayMs?: number; maxDelayMs?: number };
  /** Give up on a connection that has not said hello within this; default 15 s. */
  connectTimeoutMs?: number;
  /** A connection silent this long is dropped and resumed; default 2 × heartbeat_interval_ms + 1 s. */
  heartbeatTimeoutMs?: number;
  /** Random number in [0, 1) for the jitter. */
  random?: () => number;
}

export interface Disconnect {
  code: number;
  reason: string;
  /** Milliseconds until the next attempt. */
  delayMs: number;
  /** HTTP status when the upgrade was refused (known with `ws`; browsers do not say). */
  status?: number;
}

export class StreamClosedError extends Error {
  constructor(
    message: string,
    readonly code: number,
    readonly reason: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'StreamClosedError';
  }
}

export interface StreamEvents {
  /** Every row (notification, retired target or watchlist change), once, in log order. */
  message: StreamRow;
  notification: Notification;
  /** An item's event answered not-found for too long and is no longer checked (once per retirement). */
  target_retired: TargetRetired;
  /** The item's platform is failing for most events watched on it, or has recovered (once each). */
  platform_incident: PlatformIncident;
  watchlist: WatchlistChange;
  hello: Hello;
  live: Live;
  heartbeat: Heartbeat;
  /** hello.resume_gap: rows after your last id may have been pruned; reload the watchlist. */
  gap: Hello;
  /** A connection ended; the client reconnects after `delayMs`. */
  disconnect: Disconnect;
  /** A fatal refusal (key rejected) or a listener that threw. */
  error: Error;
  /** The stream stopped (close(), or a fatal error). */
  close: undefined;
}

type Listener<T> = (value: T) => void;

/** Rows waiting for an async iterator. */
class RowQueue {
  private readonly items: StreamRow[] = [];
  private waiter: { resolve: (r: IteratorResult<StreamRow>) => void; reject: (e: unknown) => void } | null = null;
  private ended: { error?: unknown } | null = null;

  push(row: StreamRow): void {
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w.resolve({ value: row, done: false });
    } else this.items.push(row);
  }

  end(error?: unknown): void {
    this.ended = { error };
    if (this.waiter && this.items.length === 0) {
      const w = this.waiter;
      this.waiter = null;
      if (error) w.reject(error);
      else w.resolve({ value: undefined, done: true });
    }
  }

  next(): Promise<IteratorResult<StreamRow>> {
    const row = this.items.shift();
    if (row) return Promise.resolve({ value: row, done: false });
    if (this.ended) return this.ended.error ? Promise.reject(this.ended.error) : Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => (this.waiter = { resolve, reject }));
  }
}

const FATAL_STATUSES = new Set([400, 401, 403, 404, 426]);

export class NotificationStream implements AsyncIterable<StreamRow> {
  private position: number | null;
  private ws: WebSocketLike | null = null;
  private refusedStatus: number | undefined;
  private failures = 0;
  private stopped = false;
  private watchdog: ReturnType<typeof setTimeout> | null = null;
  private reconnectTimer: ReturnType<typeof setTimeout> | null = null;
  private heartbeatTimeoutMs: number | null = null;
  private readonly listeners = new Map<keyof StreamEvents, Set<Listener<never>>>();
  private readonly queues = new Set<RowQueue>();
  private readonly Ctor: WebSocketConstructor;
  private readonly keyInHeader: boolean;
  /** Connections opened so far (for logs and tests). */
  connections = 0;

  constructor(private readonly options: StreamOptions) {
    const Ctor = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (!Ctor) throw new TypeError('no WebSocket on this platform: pass one as the WebSocket option (on Node 20: `import WebSocket from "ws"`)');
    this.Ctor = Ctor;
    new URL(STREAM_PATH, options.baseUrl); // a bad baseUrl throws here, not later in a timer
    this.keyInHeader = (options.sendKeyAs ?? (options.WebSocket ? 'header' : 'query')) === 'header';
    this.position = options.lastId ?? null;
    // After the caller's synchronous set-up (on(...), iterator), so nothing is missed.
    this.reconnectTimer = setTimeout(() => this.open(), 0);
  }

  /**
   * The log id everything up to which has been delivered (or, from heartbeats, is known to hold
   * nothing more for this account). Save it to resume later with `lastId`.
   */
  get lastId(): number | null {
    return this.position;
  }

  /** Adds a listener; returns a function that removes it. */
  on<E extends keyof StreamEvents>(event: E, listener: Listener<StreamEvents[E]>): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(listener as Listener<never>);
    return () => set.delete(listener as Listener<never>);
  }

  /** Rows from the moment the iterator is made. Leaving the loop (break, return) closes the stream. */
  [Symbol.asyncIterator](): AsyncIterator<StreamRow> {
    const q = new RowQueue();
    if (this.stopped) q.end();
    else this.queues.add(q);
    return {
      next: () => q.next(),
      return: async () => {
        this.queues.delete(q);
        this.close();
        return { value: undefined, done: true };
      },
    };
  }

  /** Stops for good: closes the connection, ends the iterators, cancels reconnects. */
  close(): void {
    this.stop();
  }

  private stop(error?: Error): void {
    if (this.stopped) return;
    this.stopped = true;
    this.clearTimers();
    const ws = this.ws;
    this.ws = null;
    try {
      ws?.close(1000, 'client_close');
    } catch {
      ws?.terminate?.();
    }
    if (error) this.emit('error', error);
    for (const q of this.queues) q.end(error);
    this.queues.clear();
    this.emit('close', undefined);
  }

  private emit<E extends keyof StreamEvents>(event: E, value: StreamEvents[E]): void {
    for (const l of this.listeners.get(event) ?? []) {
      try {
        (l as Listener<StreamEvents[E]>)(value);
      } catch (err) {
        if (event === 'error') continue;
        this.emit('error', err instanceof Error ? err : new Error(String(err)));
      }
    }
  }

  private url(): string {
    const url = new URL(STREAM_PATH, this.options.baseUrl);
    if (url.protocol === 'http:') url.protocol = 'ws:';
    else if (url.protocol === 'https:') url.protocol = 'wss:';
    if (this.position !== null) url.searchParams.set('last_id', String(this.position));
    if (!this.keyInHeader) url.searchParams.set('apikey', this.options.apiKey);
    return url.toString();
  }

  private clearTimers(): void {
    if (this.watchdog) clearTimeout(this.watchdog);
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.watchdog = this.reconnectTimer = null;
  }

  /** (Re)arms the silence timer: before hello the connect timeout, after it the heartbeat one. */
  private arm(ws: WebSocketLike): void {
    if (this.watchdog) clearTimeout(this.watchdog);
    const ms = this.heartbeatTimeoutMs ?? this.options.connectTimeoutMs ?? 15_000;
    this.watchdog = setTimeout(() => {
      if (ws !== this.ws) return;
      // A silent link is a dead one: do not wait for a closing handshake that may never come.
      if (ws.terminate) ws.terminate();
      else ws.close(4000, 'heartbeat_timeout');
      this.dropped(ws, 1006, this.heartbeatTimeoutMs === null ? 'connect_timeout' : 'heartbeat_timeout');
    }, ms);
  }

  private open(): void {
    this.reconnectTimer = null;
    if (this.stopped) return;
    this.heartbeatTimeoutMs = null;
    this.refusedStatus = undefined;
    const headers = this.keyInHeader ? { ...this.options.headers, apikey: this.options.apiKey } : undefined;
    let ws: WebSocketLike;
    try {
      // The constructor throws on a bad URL; `ws` also on bad options. Neither gets better by retrying.
      ws = headers ? new this.Ctor(this.url(), undefined, { headers }) : new this.Ctor(this.url());
    } catch (err) {
      this.stop(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    this.ws = ws;
    this.connections++;
    ws.onmessage = (ev: { data: unknown }) => this.received(ws, ev.data);
    ws.onclose = (ev: { code: number; reason: string }) => this.dropped(ws, ev.code, String(ev.reason ?? ''));
    ws.onerror = (ev: { message?: string; error?: { message?: string } }) => {
      // `ws` names the refused upgrade's status; browsers give no detail.
      const m = /Unexpected server response: (\d{3})/.exec(ev?.message ?? ev?.error?.message ?? '');
      if (m && ws === this.ws) this.refusedStatus = Number(m[1]);
    };
    this.arm(ws);
  }

  private received(ws: WebSocketLike, data: unknown): void {
    if (ws !== this.ws || this.stopped) return;
    let m: ServerMessage;
    try {
      m = JSON.parse(typeof data === 'string' ? data : new TextDecoder().decode(data as ArrayBuffer)) as ServerMessage;
    } catch {
      return;
    }
    switch (m.type) {
      case 'hello': {
        const interval = m.limits?.heartbeat_interval_ms ?? 25_000;
        this.heartbeatTimeoutMs = this.options.heartbeatTimeoutMs ?? 2 * interval + 1_000;
        this.failures = 0;
        if (this.position === null) this.position = m.head;
        // After a database restore the log can be behind what this client saw: the server resumes
        // from its own last id and hands those ids out again, so they must not be taken as repeats.
        else if (m.resume_gap && m.last_id !== null && m.last_id < this.position) this.position = m.last_id;
        this.emit('hello', m);
        if (m.resume_gap) this.emit('gap', m);
        break;
      }
      case 'live':
        this.advance(m.head);
        this.emit('live', m);
        break;
      case 'heartbeat':
        this.advance(m.head);
        this.emit('heartbeat', m);
        break;
      case 'notification':
      case 'target_retired':
      case 'platform_incident':
      case 'watchlist':
        // Exactly once: anything at or before what was delivered is a repeat.
        if (this.position !== null && m.id <= this.position) break;
        this.position = m.id;
        for (const q of this.queues) q.push(m);
        this.emit('message', m);
        if (m.type === 'notification') this.emit('notification', m);
        else if (m.type === 'target_retired') this.emit('target_retired', m);
        else if (m.type === 'platform_incident') this.emit('platform_incident', m);
        else this.emit('watchlist', m);
        break;
      default:
        break; // a kind this client does not know yet (additive change)
    }
    if (ws === this.ws) this.arm(ws);
  }

  private advance(head: number): void {
    if (this.position === null || head > this.position) this.position = head;
  }

  private dropped(ws: WebSocketLike, code: number, reason: string): void {
    if (ws !== this.ws) return;
    this.ws = null;
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = null;
    if (this.stopped) return;
    const status = this.refusedStatus;
    if (code === 1008 || (status !== undefined && FATAL_STATUSES.has(status))) {
      this.emit('disconnect', { code, reason, delayMs: -1, status });
      this.stop(new StreamClosedError(status ? `stream upgrade refused with HTTP ${status}` : `stream closed: ${reason || code}`, code, reason, status));
      return;
    }
    // 1013 replay_limit / slow_consumer: reconnect at once for the rest.
    const delayMs = code === 1013 ? 0 : backoffDelay(this.failures++, { baseDelayMs: this.options.reconnect?.baseDelayMs ?? 500, maxDelayMs: this.options.reconnect?.maxDelayMs ?? 30_000 }, this.options.random);
    this.emit('disconnect', { code, reason, delayMs, ...(status !== undefined ? { status } : {}) });
    if (!this.stopped) this.reconnectTimer = setTimeout(() => this.open(), delayMs);
  }
}
