// Real WebSocket clients on the stream node, one per account (or for the first
// BENCH_STREAM_ACCOUNTS accounts), authenticated with the `apikey` header as customers do.
// Each notification is recorded with the time it arrived, keyed by what identifies the change
// (item, section, stock after), for the change-to-client latency. A connection the server
// closes is reopened from the last id received (the protocol's resume), and counted. A bench
// that needs every field (bench:alerts) passes `onNotification`, called with each notification
// as received and its arrival time.
import type { Change } from './changes.ts';
import type { Account } from './load.ts';
import { ResumingStreams } from './resuming-stream.ts';

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
  private readonly streams: ResumingStreams;

  private constructor(url: string, onNotification: NotificationListener | null) {
    this.streams = new ResumingStreams(url, (raw, at) => {
      if (raw.type !== 'notification') return;
      const n = raw as unknown as StreamNotification;
      this.notifications++;
      onNotification?.(n, at);
      const key = changeKey(n.item_id, n.section ?? '', Number(n.after?.stock));
      if (!this.arrivals.has(key)) this.arrivals.set(key, at);
      this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    });
  }

  static async connect(url: string, accounts: readonly Account[], onNotification?: NotificationListener): Promise<StreamClients> {
    const c = new StreamClients(url, onNotification ?? null);
    await c.streams.openAll(accounts);
    for (const a of accounts) c.accountIds.add(a.id);
    return c;
  }

  get reconnects(): number {
    return this.streams.reconnects;
  }

  get closes(): string[] {
    return this.streams.closes;
  }

  close(): void {
    this.streams.close();
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
