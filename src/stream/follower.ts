// Follows the notifications log for one stream node: LISTEN on a dedicated connection as a
// wake-up, then re-read the table past the node's cursor, in pages, and hand each page to the
// hub. NOTIFY is never replayed (a notification sent while the LISTEN connection was down is
// gone), so the log is re-read after every wake-up, after every (re)connect, and on a slow
// safety poll. The cursor is the node's promise: every committed row up to it was published.
import { listen, type Listener } from '../../db/listener.ts';
import type { Pool } from '../../db/pool.ts';
import type { Logger } from '../logger.ts';
import { OutageLog } from '../runtime/outage-log.ts';
import { NOTIFICATIONS_CHANNEL, logBounds, readLog, type LogRow } from '../notifications/log.ts';

/** Rows read per query; a busier log is read in several pages. */
export const FOLLOW_PAGE_ROWS = 1_000;

export interface FollowerOptions {
  pool: Pool;
  /** For the LISTEN connection (one per node, outside the pool). */
  connectionString: string;
  pollMs: number;
  log: Logger;
  /**
   * Publishes rows from `start` (oldest first) within one tick and returns the index of the
   * first row it left for the next tick; the cursor moves past what it published.
   */
  onRows: (rows: readonly LogRow[], start: number) => number;
  /** Longest wait between LISTEN reconnect attempts. */
  maxRetryMs?: number;
}

interface Waiter {
  id: number;
  resolve: () => void;
}

export class LogFollower {
  private cursorId = 0;
  private reading = false;
  private again = false;
  private closed = false;
  private listener: Listener | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private readRetryTimer: NodeJS.Timeout | null = null;
  /** Retried every second through a database outage: logged when it starts and when it ends. */
  private readonly readFailures: OutageLog;
  private waiters: Waiter[] = [];

  constructor(private readonly opts: FollowerOptions) {
    this.readFailures = new OutageLog(opts.log, 'read the notifications log (stream follower)');
  }

  /** Every committed row with an id up to this one has been handed to onRows. */
  get cursor(): number {
    return this.cursorId;
  }

  /** Starts at the log's current head (older rows are served by each client's replay). */
  async start(): Promise<void> {
    this.cursorId = (await logBounds(this.opts.pool)).head;
    this.pollTimer = setInterval(() => this.wake(), this.opts.pollMs);
    this.pollTimer.unref();
    // listen() wakes us after every (re)connect too: whatever was written while we were not
    // listening is only found by reading.
    this.listener = listen({
      connectionString: this.opts.connectionString,
      channels: [NOTIFICATIONS_CHANNEL],
      onWake: () => this.wake(),
      log: this.opts.log,
      applicationName: 'stream-listen',
      ...(this.opts.maxRetryMs === undefined ? {} : { maxRetryMs: this.opts.maxRetryMs }),
    });
    await this.listener.ready;
  }

  /** Reads the log now (again after the read under way, if one is). */
  wake(): void {
    if (this.closed) return;
    if (this.reading) {
      this.again = true;
      return;
    }
    void this.readAll();
  }

  /** Resolves once the cursor has reached `id` (waking the reader), or after `timeoutMs` with false. */
  async reach(id: number, timeoutMs: number): Promise<boolean> {
    if (this.cursorId >= id) return true;
    let timer: NodeJS.Timeout | undefined;
    const reached = await new Promise<boolean>((resolve) => {
      const waiter = { id, resolve: () => resolve(true) };
      this.waiters.push(waiter);
      timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve(false);
      }, timeoutMs);
      this.wake();
    });
    clearTimeout(timer);
    return reached;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.readRetryTimer) clearTimeout(this.readRetryTimer);
    await this.listener?.close();
    this.listener = null;
    for (const w of this.waiters.splice(0)) w.resolve();
  }

  private async readAll(): Promise<void> {
    this.reading = true;
    try {
      do {
        this.again = false;
        let rows: LogRow[];
        do {
          rows = await readLog(this.opts.pool, { after: this.cursorId, limit: FOLLOW_PAGE_ROWS });
          if (this.closed) return;
          if (rows.length === 0) break;
          for (let i = 0; i < rows.length && !this.closed; ) {
            i = this.opts.onRows(rows, i);
            this.cursorId = rows[i - 1]!.id;
            this.release();
            // Let uWS drain this tick's messages into the sockets before publishing more.
            if (i < rows.length) await new Promise((r) => setTimeout(r, 0));
          }
          if (this.closed) return;
        } while (rows.length === FOLLOW_PAGE_ROWS);
      } while (this.again && !this.closed);
      this.readFailures.succeeded();
    } catch (err) {
      // The next wake-up or poll tries again; clients keep their connections meanwhile.
      this.readFailures.failed(err);
      if (!this.closed && !this.readRetryTimer) {
        this.readRetryTimer = setTimeout(() => {
          this.readRetryTimer = null;
          this.wake();
        }, 1_000);
        this.readRetryTimer.unref();
      }
    } finally {
      this.reading = false;
    }
  }

  private release(): void {
    if (this.waiters.length === 0) return;
    const ready = this.waiters.filter((w) => w.id <= this.cursorId);
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((w) => w.id > this.cursorId);
    for (const w of ready) w.resolve();
  }
}
