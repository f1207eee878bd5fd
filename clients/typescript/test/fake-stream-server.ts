// A small loopback WebSocket server that speaks the stream protocol of /asyncapi.json (hello,
// replay after last_id, 1013 replay_limit past max_replay_rows, live, heartbeats, live rows)
// and can be told to misbehave on a schedule: drop the TCP connection, close with 1013 or 1001,
// or go silent (no heartbeats, no rows, socket left open). The real stream node cannot be made
// to stop its heartbeats or to fail at an exact message, so those cases run against this.
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';

export type Fault = 'terminate' | 'close1013' | 'close1001' | 'silence';

export interface Row {
  type: 'notification';
  id: number;
  item_id: number;
  change_type: 'stock_increase';
  platform: string;
  event: string;
  region: string;
  before: { stock: number };
  after: { stock: number };
  detected_at: string;
}

export class FakeStreamServer {
  readonly rows: Row[] = [];
  readonly connections: { lastId: number | null; apikey: string | undefined }[] = [];
  private readonly live = new Set<WebSocket>();
  private readonly silenced = new WeakSet<WebSocket>();
  private readonly sent = new WeakMap<WebSocket, number>();
  private nextId = 1;
  /** Faults still to happen: each fires after that many row messages on a connection. */
  faults: { after: number; fault: Fault }[] = [];
  private constructor(
    private readonly wss: WebSocketServer,
    readonly opts: { heartbeatMs: number; maxReplayRows: number },
  ) {}

  static async start(opts: { heartbeatMs?: number; maxReplayRows?: number } = {}): Promise<FakeStreamServer> {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((r) => wss.once('listening', () => r()));
    const s = new FakeStreamServer(wss, { heartbeatMs: opts.heartbeatMs ?? 100, maxReplayRows: opts.maxReplayRows ?? 10_000 });
    wss.on('connection', (ws, req) => s.connected(ws, req.url ?? '/', req.headers.apikey as string | undefined));
    return s;
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${(this.wss.address() as AddressInfo).port}`;
  }

  get head(): number {
    return this.nextId - 1;
  }

  /** Writes rows to the log and pushes them to live connections. */
  append(n: number): number[] {
    const ids: number[] = [];
    for (let i = 0; i < n; i++) {
      const id = this.nextId++;
      // Ids move past other accounts' rows too: leave gaps now and then.
      if (id % 7 === 0) this.nextId++;
      const row: Row = {
        type: 'notification', id, item_id: 1, change_type: 'stock_increase', platform: 'pf_03',
        event: 'https://pf03.example/e/fake', region: 'us', before: { stock: id }, after: { stock: id + 1 }, detected_at: new Date().toISOString(),
      };
      this.rows.push(row);
      ids.push(id);
      for (const ws of this.live) this.send(ws, row);
    }
    return ids;
  }

  private connected(ws: WebSocket, url: string, apikey: string | undefined): void {
    const q = new URL(url, 'http://x').searchParams;
    const lastId = q.has('last_id') ? Number(q.get('last_id')) : null;
    this.connections.push({ lastId, apikey: apikey ?? q.get('apikey') ?? undefined });
    this.sent.set(ws, 0);
    ws.send(JSON.stringify({
      type: 'hello', connection_id: `fake-${this.connections.length}`, account_id: 1, head: this.head, last_id: lastId, resume_gap: false,
      limits: { max_buffered_bytes: 1_048_576, heartbeat_interval_ms: this.opts.heartbeatMs, max_replay_rows: this.opts.maxReplayRows, retention_seconds: 604_800 },
      server_time: new Date().toISOString(),
    }));
    const after = lastId ?? this.head;
    const pending = this.rows.filter((r) => r.id > after);
    let replayed = 0;
    for (const row of pending) {
      if (replayed === this.opts.maxReplayRows) {
        ws.close(1013, 'replay_limit');
        return;
      }
      if (!this.send(ws, row)) return;
      replayed++;
    }
    if (ws.readyState !== WebSocket.OPEN || this.silenced.has(ws)) return;
    ws.send(JSON.stringify({ type: 'live', head: this.head, replayed }));
    this.live.add(ws);
    const beat = setInterval(() => {
      if (ws.readyState !== WebSocket.OPEN) return clearInterval(beat);
      if (!this.silenced.has(ws)) ws.send(JSON.stringify({ type: 'heartbeat', head: this.head, server_time: new Date().toISOString() }));
    }, this.opts.heartbeatMs);
    ws.on('close', () => {
      clearInterval(beat);
      this.live.delete(ws);
    });
  }

  /** Sends a row unless a fault fires first; false when the connection is finished. */
  private send(ws: WebSocket, row: Row): boolean {
    if (ws.readyState !== WebSocket.OPEN || this.silenced.has(ws)) return false;
    const n = this.sent.get(ws)!;
    const due = this.faults[0];
    if (due && n >= due.after) {
      this.faults.shift();
      this.live.delete(ws);
      if (due.fault === 'terminate') ws.terminate();
      else if (due.fault === 'close1013') ws.close(1013, 'slow_consumer');
      else if (due.fault === 'close1001') ws.close(1001, 'server_shutdown');
      else this.silenced.add(ws); // the link goes quiet, the socket stays open
      return false;
    }
    ws.send(JSON.stringify(row));
    this.sent.set(ws, n + 1);
    return true;
  }

  async close(): Promise<void> {
    for (const ws of this.wss.clients) ws.terminate();
    await new Promise((r) => this.wss.close(r));
  }
}
