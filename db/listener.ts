// LISTEN on PostgreSQL channels over one dedicated connection that reconnects by itself.
// NOTIFY is a wake-up only: it is never replayed, so `onWake` also runs after every
// (re)connect, and the caller re-reads its table each time rather than trusting payloads.
import pg from 'pg';
import type { Logger } from '../src/logger.ts';
import { OutageLog } from '../src/runtime/outage-log.ts';

export interface Listener {
  /** Resolves once the first LISTEN is in place (never rejects: failures are retried). */
  ready: Promise<void>;
  close(): Promise<void>;
}

export function listen(opts: {
  connectionString: string;
  channels: readonly string[];
  /** A notification's payload, or undefined after a (re)connect: re-read everything then. */
  onWake: (payload?: string) => void;
  log: Logger;
  applicationName?: string;
  /** Longest wait between reconnect attempts. */
  maxRetryMs?: number;
}): Listener {
  const maxRetry = opts.maxRetryMs ?? 5_000;
  let closed = false;
  let client: pg.Client | null = null;
  let timer: NodeJS.Timeout | null = null;
  let attempt = 0;
  let markReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  // A database restart drops every LISTEN at once and each retries: one line when lost, one when back.
  const outage = new OutageLog(opts.log, 'listen for notifications', { channels: opts.channels });

  const connect = async () => {
    timer = null;
    if (closed) return;
    const c = new pg.Client({ connectionString: opts.connectionString, application_name: opts.applicationName ?? 'listener' });
    // Any failure, including a later drop, lands here once and schedules a new connection.
    let failed = false;
    const fail = (err: unknown) => {
      if (failed) return;
      failed = true;
      client = null;
      c.removeAllListeners('notification');
      void c.end().catch(() => {});
      if (closed) return;
      const wait = Math.min(maxRetry, 100 * 2 ** attempt++);
      outage.failed(err, { retry_ms: wait });
      timer = setTimeout(() => void connect(), wait);
      // A reconnect loop must not keep a process alive that is otherwise done.
      timer.unref();
    };
    c.on('error', fail);
    c.on('end', () => fail(new Error('connection ended')));
    c.on('notification', (msg) => opts.onWake(msg.payload));
    try {
      await c.connect();
      for (const ch of opts.channels) await c.query(`LISTEN ${pg.escapeIdentifier(ch)}`);
    } catch (err) {
      fail(err);
      return;
    }
    if (closed) {
      c.removeAllListeners();
      c.on('error', () => {});
      await c.end().catch(() => {});
      return;
    }
    client = c;
    attempt = 0;
    outage.succeeded();
    markReady();
    opts.onWake(undefined);
  };
  void connect();

  return {
    ready,
    close: async () => {
      closed = true;
      markReady();
      if (timer) clearTimeout(timer);
      const c = client;
      client = null;
      if (c) {
        c.removeAllListeners();
        c.on('error', () => {});
        await c.end().catch(() => {});
      }
    },
  };
}
