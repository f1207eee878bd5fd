// Real WebSocket clients on the stream node, one per account (or for the first
// BENCH_STREAM_ACCOUNTS accounts), authenticated with the `apikey` header as customers do.
// Each notification is recorded with the time it arrived, keyed by what identifies the change
// (item, section, stock after), for the change-to-client latency. A connection the server
// closes is reopened from the last id received (the protocol's resume), and counted. A bench
// that needs every field (bench:alerts) passes `onNotification`, called with each notification
// as received and its arrival time.
import WebSocket from 'ws';
import type { Change } from './changes.ts';
import type { Account } from './load.ts';
import { sleep } from './support.ts';

export function changeKey(itemId: number, section: string, stock: number): string {
  return `${itemId}|${section}|${stock}`;
}

export interface StreamNotification {
  type: 'notification';
  id: number;
  item_id: number;
  change_type?: string;
  platform?: string;
  section?: string | null;
  before?: { stock?: number | null; min_price?: number | null; avg_price?: number | null };
  after?: { stock?: number | null; min_price?: number | null; avg_price?: number | null };
}

/** Told each notification as it arrives, with Date.now() of its arrival. */
export type NotificationListener = (n: StreamNotification, at: number) => void;

export class StreamClients {
  /** changeKey → Date.now() of the first arrival. */
  readonly arrivals = new Map<string, number>();
  /** changeKey → how many times it arrived (more than once: the stream sent it twice). */
  readonly counts = new Map<string, number>();
  readonly accountIds = new Set<number>();
  notifications = 0;
  reconnects = 0;
  closes: string[] = [];
  private readonly sockets = new Set<WebSocket>();
  private closing = false;

  private constructor(
    private readonly url: string,
    private readonly onNotification: NotificationListener | null,
  ) {}

  static async connect(url: string, accounts: readonly Account[], onNotification?: NotificationListener): Promise<StreamClients> {
    const c = new StreamClients(url, onNotification ?? null);
    await Promise.all(accounts.map((a) => c.open(a, null)));
    for (const a of accounts) c.accountIds.add(a.id);
    return c;
  }

  /** Opens one connection and resolves once the server said `live`. */
  private open(account: Account, lastId: number | null): Promise<void> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(lastId === null ? this.url : `${this.url}?last_id=${lastId}`, { headers: { apikey: account.key } });
      this.sockets.add(ws);
      let last = lastId;
      let live = false;
      ws.once('unexpected-response', (_req, res) => reject(new Error(`stream refused the connection: ${res.statusCode}`)));
      ws.once('error', (err) => {
        if (!live) reject(err);
      });
      ws.on('message', (data) => {
        const at = Date.now();
        const m = JSON.parse(data.toString()) as { type: string; id?: number };
        if (typeof m.id === 'number') last = m.id;
        if (m.type === 'live') {
          live = true;
          resolve();
        } else if (m.type === 'notification') {
          const n = m as StreamNotification;
          this.notifications++;
          this.onNotification?.(n, at);
          const key = changeKey(n.item_id, n.section ?? '', Number(n.after?.stock));
          if (!this.arrivals.has(key)) this.arrivals.set(key, at);
          this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
        }
      });
      ws.on('close', (code, reason) => {
        this.sockets.delete(ws);
        if (this.closing) return;
        this.closes.push(`${code} ${reason.toString()}`);
        if (!live) return;
        this.reconnects++;
        void (async () => {
          for (let attempt = 0; attempt < 10 && !this.closing; attempt++) {
            try {
              await this.open(account, last);
              return;
            } catch {
              await sleep(500);
            }
          }
        })();
      });
    });
  }

  close(): void {
    this.closing = true;
    for (const ws of this.sockets) ws.terminate();
    this.sockets.clear();
  }
}

export interface StreamFigures {
  accounts: number;
  /** Latencies (ms) from the simulator PUT to the client, for changes away from the kill. */
  steady: number[];
  /** The same for changes made around the kill (from 2 intervals before it until the recovery). */
  aroundKill: number[];
  /** (change, item) pairs in the log whose account has a client. */
  expected: number;
  /** Of those, never received. */
  notDelivered: number;
  /** Received more than once. */
  duplicates: number;
  reconnects: number;
  closes: string[];
}

/** Every logged (change, item) of an account with a client: when it arrived, after the PUT. */
export function streamFigures(clients: StreamClients, changes: readonly Change[], logged: ReadonlySet<string>, aroundKill: (c: Change) => boolean): StreamFigures {
  const f: StreamFigures = { accounts: clients.accountIds.size, steady: [], aroundKill: [], expected: 0, notDelivered: 0, duplicates: 0, reconnects: clients.reconnects, closes: clients.closes };
  for (const c of changes) {
    for (const item of c.target.items) {
      if (!clients.accountIds.has(item.account)) continue;
      const key = changeKey(item.id, c.section, c.stock);
      if (!logged.has(key)) continue;
      f.expected++;
      const at = clients.arrivals.get(key);
      if (at === undefined) {
        f.notDelivered++;
        continue;
      }
      if ((clients.counts.get(key) ?? 0) > 1) f.duplicates++;
      (aroundKill(c) ? f.aroundKill : f.steady).push(at - c.putAt);
    }
  }
  return f;
}
