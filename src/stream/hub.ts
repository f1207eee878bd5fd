// Fan-out on one node: each log row goes to its account's uWS topic (the C++ pub/sub does the
// per-connection work), heartbeats to a topic every live connection holds. Before an account's
// rows are published in a tick, its live connections are checked: one whose unsent buffer
// passed max_buffered_bytes is closed with 1013 (uWS would otherwise skip it silently, and a
// skipped message is a lost notification) and resumes from the log.
import type { TemplatedApp, WebSocket } from 'uWebSockets.js';
import type { Logger } from '../logger.ts';
import { streamMessage, type LogRow } from '../notifications/log.ts';
import type { Connection } from './connection.ts';
import type { StreamMetrics } from './metrics.ts';
import { heartbeatMessage } from './protocol.ts';
import { CLOSE_REASONS, type CloseReasonName } from './reasons.ts';

export const HEARTBEAT_TOPIC = 'heartbeat';

export function accountTopic(accountId: number): string {
  return `a/${accountId}`;
}

export class StreamHub {
  /** Live connections by account: the ones a publish reaches, checked for slow consumers. */
  private readonly live = new Map<number, Set<WebSocket<Connection>>>();
  /** Every open connection, replaying or live, for shutdown. */
  readonly open = new Set<WebSocket<Connection>>();
  private heartbeatTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly app: TemplatedApp,
    private readonly opts: { maxBufferedBytes: number; heartbeatMs: number; cursor: () => number },
    private readonly metrics: StreamMetrics,
    private readonly log: Logger,
  ) {}

  startHeartbeats(): void {
    this.heartbeatTimer = setInterval(() => this.heartbeat(), this.opts.heartbeatMs);
    this.heartbeatTimer.unref();
  }

  stopHeartbeats(): void {
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = null;
  }

  added(ws: WebSocket<Connection>): void {
    this.open.add(ws);
    this.metrics.connections.set(this.open.size);
  }

  /** Subscribes a caught-up connection: from here on it gets every row its account publishes. */
  goLive(ws: WebSocket<Connection>): void {
    const c = ws.getUserData();
    ws.subscribe(accountTopic(c.accountId));
    ws.subscribe(HEARTBEAT_TOPIC);
    c.live = true;
    let set = this.live.get(c.accountId);
    if (!set) this.live.set(c.accountId, (set = new Set()));
    set.add(ws);
  }

  removed(ws: WebSocket<Connection>): void {
    const c = ws.getUserData();
    this.open.delete(ws);
    const set = this.live.get(c.accountId);
    if (set?.delete(ws) && set.size === 0) this.live.delete(c.accountId);
    this.metrics.connections.set(this.open.size);
  }

  /**
   * Publishes rows from `start`, oldest first, until this tick's byte budget (half the buffer
   * limit) is spent, and returns the index of the first row left for the next tick. uWS only
   * drains topics into sockets at the end of a loop iteration, so the budget is what bounds the
   * growth of any one connection's buffer between two slow-consumer checks: checked at or below
   * the limit, it stays under uWS's hard limit (twice that) with one tick's rows on top.
   */
  publish(rows: readonly LogRow[], start = 0): number {
    const budget = this.opts.maxBufferedBytes / 2;
    const checked = new Set<number>();
    let bytes = 0;
    const sent: Partial<Record<LogRow['kind'], number>> = {};
    let i = start;
    while (i < rows.length && (i === start || bytes < budget)) {
      const row = rows[i++]!;
      if (!checked.has(row.accountId)) {
        checked.add(row.accountId);
        this.closeSlowConsumers(row.accountId);
      }
      const reach = this.live.get(row.accountId)?.size ?? 0;
      if (reach === 0) continue;
      const message = JSON.stringify(streamMessage(row));
      this.app.publish(accountTopic(row.accountId), message, false, false);
      bytes += message.length;
      sent[row.kind] = (sent[row.kind] ?? 0) + reach;
    }
    for (const [type, n] of Object.entries(sent)) this.metrics.messages.inc({ type }, n);
    this.metrics.cursor.set(rows[i - 1]?.id ?? 0);
    return i;
  }

  heartbeat(): void {
    const reach = this.app.numSubscribers(HEARTBEAT_TOPIC);
    if (reach === 0) return;
    this.app.publish(HEARTBEAT_TOPIC, heartbeatMessage(this.opts.cursor()), false, false);
    this.metrics.messages.inc({ type: 'heartbeat' }, reach);
  }

  /** Ends a connection with one of the documented close reasons (the close handler cleans up). */
  close(ws: WebSocket<Connection>, reason: CloseReasonName): void {
    const c = ws.getUserData();
    if (c.closed) return;
    c.closeReason = reason;
    const r = CLOSE_REASONS[reason];
    ws.end(r.code, r.reason);
  }

  /** Closes the account's live connections whose buffer passed the limit (it reflects every earlier tick). */
  private closeSlowConsumers(accountId: number): void {
    const set = this.live.get(accountId);
    if (!set) return;
    for (const ws of set) {
      const buffered = ws.getBufferedAmount();
      if (buffered <= this.opts.maxBufferedBytes) continue;
      const c = ws.getUserData();
      this.log.warn(
        { connection_id: c.id, account_id: c.accountId, key_id: c.keyId, buffered_bytes: buffered, limit: this.opts.maxBufferedBytes },
        'stream: slow consumer closed (1013); it resumes from the log',
      );
      this.metrics.slowConsumerCloses.inc();
      this.close(ws, 'slow_consumer');
    }
  }
}
