// The protocol of one connection, one method per uWS event: upgrade (admission, answered as
// HTTP before any WebSocket exists), open (hello, replay, then live), drain and close.
//
// Replay without gap or duplicate: the node's follower publishes every committed row up to its
// cursor, in order, moving the cursor in the same tick as it publishes. A resuming connection reads its account's rows
// after last_id up to the cursor it saw, sends them, and repeats until its position has reached
// the follower's cursor; in that same tick (no await between the check and the subscribe) it
// subscribes to its account's topic. Rows up to the cursor came from the replay, rows after it
// will come from the topic. Before the hello, the follower must have reached the log's head as
// the client connected, so an id the client saw on a faster node is never published again here,
// and the hello's head is never behind the position the connection resumes from.
import { randomUUID } from 'node:crypto';
import type { HttpRequest, HttpResponse, WebSocket, us_socket_context_t } from 'uWebSockets.js';
import type { Pool } from '../../db/pool.ts';
import type { Logger } from '../logger.ts';
import { readLog, streamMessage } from '../notifications/log.ts';
import type { Admitted, UpgradeAdmission } from './admission.ts';
import type { ConnectionSlots } from './connection-slots.ts';
import type { LogFollower } from './follower.ts';
import type { StreamHub } from './hub.ts';
import type { UpgradeAnchor } from './upgrade-anchor.ts';
import type { StreamMetrics } from './metrics.ts';
import { helloMessage, liveMessage, type Limits } from './protocol.ts';
import { STATUS_TEXT, StreamRefusal, type CloseReasonName } from './reasons.ts';

/** Rows read per replay query. */
export const REPLAY_PAGE_ROWS = 500;
/** How long a replay waits for this node's follower to reach the log head the client saw. */
const REACH_TIMEOUT_MS = 10_000;

/** Per-connection state (uWS user data). */
export interface Connection {
  id: string;
  accountId: number;
  keyId: string;
  /** Never logged; see key-recheck.ts. */
  key: string;
  clientAddress: string;
  lastId: number | null;
  resumeGap: boolean;
  mustReach: number;
  openedAt: number;
  live: boolean;
  closed: boolean;
  closeReason: CloseReasonName | null;
  replayed: number;
  /** Resolves the replay's wait for the send buffer to drain. */
  drained: (() => void) | null;
}

export interface ProtocolDeps {
  admission: UpgradeAdmission;
  /** Where an admitted connection's slot goes back (connection-slots.ts). */
  slots: Pick<ConnectionSlots, 'release'>;
  anchor: UpgradeAnchor;
  hub: StreamHub;
  follower: LogFollower;
  pool: Pool;
  limits: Limits;
  log: Logger;
  metrics: StreamMetrics;
}

/** Writes an HTTP refusal in the gateway envelope (inside a cork). */
export function writeRefusal(res: HttpResponse, refusal: StreamRefusal, requestId: string): void {
  res.writeStatus(`${refusal.status} ${STATUS_TEXT[refusal.status] ?? 'Error'}`);
  res.writeHeader('Content-Type', 'application/json');
  res.writeHeader('X-Request-Id', requestId);
  for (const [k, v] of Object.entries(refusal.headers)) res.writeHeader(k, v);
  if (refusal.status === 426) res.writeHeader('Upgrade', 'websocket');
  res.end(refusal.body(), true);
}

/**
 * The 101's status line with this node's headers after it, for one writeStatus. The upgrade runs
 * outside a cork (upgrade-anchor.ts), where uWS sends every write as a TCP segment of its own,
 * and writeHeader is four writes: a 101 took 37 segments (strace), 25 this way, the rest uWS's
 * own headers. Each costs the sender and the receiver a wake-up: 8,000 upgrades took 2.4 s
 * against 1.9 s (and 1.3 s corked) in a bare uWS server. The values are this node's own (a UUID,
 * rate-limit numbers), never a client's, so nothing can break the header block.
 */
export function switchingProtocols(requestId: string, headers: Record<string, string>): string {
  let status = `101 Switching Protocols\r\nX-Request-Id: ${requestId}`;
  for (const [k, v] of Object.entries(headers)) status += `\r\n${k}: ${v}`;
  return status;
}

export class StreamProtocol {
  constructor(private readonly deps: ProtocolDeps) {}

  upgrade(res: HttpResponse, req: HttpRequest, context: us_socket_context_t): void {
    // uWS calls this for any GET with a 24-character Sec-WebSocket-Key. A handshake without
    // `Upgrade: websocket` and `Connection: Upgrade` (RFC 6455, 4.2.1) is not an upgrade: 426, as
    // for any other request here. It is also what keeps one client from crashing the node on this
    // uWS build: a request whose Connection value is 5 characters long (`close`) marks its
    // response to close once complete, and the upgrade completed later, outside a cork
    // (upgrade-anchor.ts), then closed the socket and built the WebSocket on the freed memory:
    // the process died, with every account's connections on it.
    if (!hasToken(req.getHeader('upgrade'), 'websocket') || !hasToken(req.getHeader('connection'), 'upgrade')) {
      const refusal = new StreamRefusal('upgrade_required', 'a WebSocket upgrade needs the headers Upgrade: websocket and Connection: Upgrade (RFC 6455)');
      return void res.cork(() => this.refuse(res, refusal, randomUUID()));
    }
    // The request object is only valid until this function returns: copy what is needed.
    const secKey = req.getHeader('sec-websocket-key');
    const extensions = req.getHeader('sec-websocket-extensions');
    const request = {
      query: req.getQuery() ?? '',
      apikeyHeader: req.getHeader('apikey'),
      lastEventIdHeader: req.getHeader('last-event-id'),
      forwardedFor: req.getHeader('x-forwarded-for'),
      remoteAddress: Buffer.from(res.getRemoteAddressAsText()).toString(),
    };
    // Admitted without waiting (a slot taken ahead for the key, admission.ts): upgraded here,
    // inside uWS's handler, where uWS corks the 101.
    const now = this.deps.admission.admitNow(request);
    if (now) {
      this.deps.metrics.admissions.inc({ path: 'spare' });
      res.writeStatus(switchingProtocols(now.id, now.admitted.headers));
      res.upgrade<Connection>(this.connectionFor(now.id, now.admitted), secKey, '', extensions, context);
      return;
    }
    const id = randomUUID();
    let aborted = false;
    res.onAborted(() => (aborted = true));
    this.deps.admission.admit(request, id).then(
      (result) => {
        if (result instanceof StreamRefusal) {
          if (!aborted) res.cork(() => this.refuse(res, result, id));
          return;
        }
        // From here the connection holds a slot: given back at its close, or now if it never opens.
        if (aborted) return this.deps.slots.release(id);
        this.deps.metrics.admissions.inc({ path: 'batch' });
        const upgrade = () => {
          if (aborted) return this.deps.slots.release(id);
          res.writeStatus(switchingProtocols(id, result.headers));
          // No subprotocols are defined, so none is echoed.
          res.upgrade<Connection>(this.connectionFor(id, result), secKey, '', extensions, context);
        };
        // Not inside res.cork: see upgrade-anchor.ts.
        this.deps.anchor.run(upgrade, () => res.cork(upgrade));
      },
      (err: unknown) => {
        this.deps.log.error({ err, connection_id: id }, 'stream: upgrade failed');
        if (!aborted) res.cork(() => this.refuse(res, StreamRefusal.of('service_unavailable'), id));
      },
    );
  }

  open(ws: WebSocket<Connection>): void {
    const c = ws.getUserData();
    this.deps.hub.added(ws);
    this.deps.log.info({ connection_id: c.id, account_id: c.accountId, key_id: c.keyId, last_id: c.lastId, client: c.clientAddress }, 'stream: connected');
    // The hello and the replay start on the next tick, outside the upgrade: when the anchor is
    // down, open runs inside res.cork (see upgrade-anchor.ts), and subscribing there could
    // make uWS drain other sockets' topic messages mid-cork.
    setImmediate(() => {
      if (!c.closed) this.start(ws, c);
    });
  }

  /**
   * Hello, then the replay and live. A resuming connection first reads where it resumes (the
   * log's bounds: admission.ts, resumePosition), then waits for this node's follower to reach the
   * log head it read, so the hello's head is never behind the position it resumes from (the
   * follower hears of a commit a moment after it is visible).
   */
  private start(ws: WebSocket<Connection>, c: Connection): void {
    const { log, hub } = this.deps;
    if (c.lastId === null) return this.hello(ws, c);
    this.deps.admission.resumePosition(c.lastId).then(
      (at) => {
        if (c.closed) return;
        c.lastId = at.lastId;
        c.resumeGap = at.resumeGap;
        c.mustReach = at.mustReach;
        this.reachThenHello(ws, c);
      },
      (err: unknown) => {
        if (c.closed) return;
        log.error({ err, connection_id: c.id }, 'stream: notifications log unreachable');
        hub.close(ws, 'log_unavailable');
      },
    );
  }

  private reachThenHello(ws: WebSocket<Connection>, c: Connection): void {
    const { follower, log, hub } = this.deps;
    if (follower.cursor >= c.mustReach) return this.hello(ws, c);
    follower.reach(c.mustReach, REACH_TIMEOUT_MS).then(
      (reached) => {
        if (c.closed) return;
        if (reached) return this.hello(ws, c);
        log.warn({ connection_id: c.id, must_reach: c.mustReach, cursor: follower.cursor }, 'stream: log follower behind; closing');
        hub.close(ws, 'log_unavailable');
      },
      (err: unknown) => {
        if (c.closed) return;
        log.error({ err, connection_id: c.id }, 'stream: waiting for the log follower failed');
        hub.close(ws, 'log_unavailable');
      },
    );
  }

  private hello(ws: WebSocket<Connection>, c: Connection): void {
    const { follower, limits } = this.deps;
    ws.send(
      helloMessage({
        connection_id: c.id,
        account_id: c.accountId,
        head: follower.cursor,
        last_id: c.lastId,
        resume_gap: c.resumeGap,
        limits,
      }),
    );
    this.deps.metrics.messages.inc({ type: 'hello' });
    void this.replay(ws, c);
  }

  drain(ws: WebSocket<Connection>): void {
    const c = ws.getUserData();
    const resolve = c.drained;
    c.drained = null;
    resolve?.();
  }

  close(ws: WebSocket<Connection>, code: number, message: ArrayBuffer): void {
    const c = ws.getUserData();
    c.closed = true;
    this.deps.slots.release(c.id);
    this.deps.hub.removed(ws);
    this.deps.metrics.closes.inc({ code: String(code) });
    const reason = c.closeReason ?? (Buffer.from(message).toString() || null);
    const fields = { connection_id: c.id, account_id: c.accountId, key_id: c.keyId, code, reason, replayed: c.replayed, ms: Date.now() - c.openedAt };
    // 1006: the peer went away without a close frame, or uWS cut a connection past its hard buffer limit.
    if (code === 1006) this.deps.log.info(fields, 'stream: connection lost (no close frame)');
    else this.deps.log.info(fields, 'stream: disconnected');
    this.drain(ws);
  }

  private refuse(res: HttpResponse, refusal: StreamRefusal, id: string): void {
    this.deps.metrics.refusals.inc({ status: String(refusal.status) });
    writeRefusal(res, refusal, id);
  }

  private connectionFor(id: string, a: Admitted): Connection {
    return {
      id,
      accountId: a.principal.accountId,
      keyId: a.principal.keyId,
      key: a.key,
      clientAddress: a.clientAddress,
      lastId: a.lastId,
      resumeGap: false,
      mustReach: 0,
      openedAt: Date.now(),
      live: false,
      closed: false,
      closeReason: null,
      replayed: 0,
      drained: null,
    };
  }

  /** Sends the account's rows after last_id, then subscribes (see the header comment). */
  private async replay(ws: WebSocket<Connection>, c: Connection): Promise<void> {
    const { follower, hub, limits, log } = this.deps;
    let pos = c.lastId ?? follower.cursor;
    try {
      // The follower has reached the head the client saw (start() waited for it before the hello).
      while (!c.closed && pos < follower.cursor) {
        const upTo = follower.cursor;
        const budget = limits.max_replay_rows - c.replayed;
        const limit = Math.max(1, Math.min(REPLAY_PAGE_ROWS, budget));
        const rows = await readLog(this.deps.pool, { after: pos, upTo, accountId: c.accountId, limit });
        if (c.closed) return;
        if (budget <= 0) {
          if (rows.length > 0) return hub.close(ws, 'replay_limit');
          pos = upTo;
          continue;
        }
        if (!(await this.sendRows(ws, c, rows.map((r) => JSON.stringify(streamMessage(r)))))) return;
        pos = rows.length === limit ? rows[rows.length - 1]!.id : upTo;
      }
      if (c.closed) return;
      // Same tick as the loop's last check: nothing after the cursor has been published yet.
      hub.goLive(ws);
      ws.send(liveMessage(pos, c.replayed));
      this.deps.metrics.messages.inc({ type: 'live' });
    } catch (err) {
      if (c.closed) return;
      log.error({ err, connection_id: c.id, account_id: c.accountId }, 'stream: replay failed');
      hub.close(ws, 'log_unavailable');
    }
  }

  /** Sends replayed messages, pausing while more than half the buffer limit is waiting. */
  private async sendRows(ws: WebSocket<Connection>, c: Connection, messages: string[]): Promise<boolean> {
    const pauseAbove = this.deps.limits.max_buffered_bytes / 2;
    let i = 0;
    while (i < messages.length) {
      ws.cork(() => {
        while (i < messages.length && ws.getBufferedAmount() <= pauseAbove) ws.send(messages[i++]!, false, false);
      });
      if (i < messages.length) {
        await new Promise<void>((resolve) => (c.drained = resolve));
        if (c.closed) return false;
      }
    }
    c.replayed += messages.length;
    this.deps.metrics.messages.inc({ type: 'replay' }, messages.length);
    return true;
  }
}

/** Whether a comma-separated header value holds `token`, in any case (RFC 9110's token lists). */
function hasToken(value: string, token: string): boolean {
  return value.split(',').some((t) => t.trim().toLowerCase() === token);
}
