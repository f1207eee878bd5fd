// The one message source both bench servers publish from: log rows shaped like the monitors'
// notifications (a timestamp `t` added for latency), spread round-robin over the accounts, at a
// fixed rate or as fast as the server's event loop takes them. Each server hands the rows to its
// own fan-out: our node to StreamHub.publish (what its log follower calls), the `ws` server to a
// loop of ws.send over the account's sockets.
import type { LogRow } from '../../src/notifications/log.ts';
import { nowMs } from './measure.ts';

/** Publishes rows from `start` and returns the index of the first row not yet published. */
export type FanOut = (rows: readonly LogRow[], start: number) => number;

/** Bytes waiting to be sent on a sample of the server's connections (the largest). */
export type Backlog = () => number;

/**
 * Saturation is closed-loop: a new batch is published only while the sampled connections hold
 * less than this unsent. Without it the fastest publisher wins by queueing (the `ws` server's
 * queues grow without bound; ours would close clients as slow consumers), not by delivering.
 */
const SATURATION_BACKLOG_BYTES = 64 * 1024;

export class Source {
  private nextId = 1;
  private next = 0;
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  published = 0;

  constructor(
    private readonly fanout: FanOut,
    private readonly backlog: Backlog,
    private readonly accounts: readonly number[],
    private readonly padBytes = 0,
  ) {}

  private row(): LogRow {
    const accountId = this.accounts[this.next++ % this.accounts.length]!;
    const id = this.nextId++;
    return {
      id,
      accountId,
      itemId: 17,
      kind: 'notification',
      createdAt: new Date(),
      payload: {
        item_id: 17,
        change_type: 'price_decrease',
        platform: 'pf_03',
        event: 'https://pf03.example/e/summer-open-air-4411',
        region: 'us',
        section: 'Floor A',
        before: { stock: 4, min_price: 120.5, avg_price: 131.25 },
        after: { stock: 4, min_price: 99, avg_price: 118.75 },
        currency: 'EUR',
        detected_at: new Date().toISOString(),
        ...(this.padBytes ? { pad: 'x'.repeat(this.padBytes) } : {}),
        t: nowMs(),
      },
    };
  }

  private async publish(n: number): Promise<void> {
    const rows = Array.from({ length: n }, () => this.row());
    // Like the follower: the fan-out may take a page in several ticks.
    for (let i = 0; i < rows.length; ) {
      i = this.fanout(rows, i);
      if (i < rows.length) await new Promise((r) => setTimeout(r, 0));
    }
    this.published += n;
  }

  /** As fast as the server delivers: `rowsPerTick` rows every turn of the loop while its connections keep up. */
  saturate(rowsPerTick: number): void {
    this.stop();
    this.running = true;
    const tick = async () => {
      if (!this.running) return;
      if (this.backlog() > SATURATION_BACKLOG_BYTES) {
        setTimeout(() => void tick(), 1);
        return;
      }
      await this.publish(rowsPerTick);
      setImmediate(() => void tick());
    };
    void tick();
  }

  /**
   * A fixed rate, published every 5 ms. Like the log follower, one batch at a time: rows that
   * come due while a batch is still being published wait for it (and are counted as late by
   * their timestamp), instead of piling up as concurrent batches in memory.
   */
  rate(rowsPerSecond: number): void {
    this.stop();
    this.running = true;
    let owed = 0;
    let busy = false;
    let last = performance.now();
    this.timer = setInterval(() => {
      const now = performance.now();
      owed += ((now - last) / 1000) * rowsPerSecond;
      last = now;
      if (busy) return;
      const n = Math.floor(owed);
      owed -= n;
      if (n === 0) return;
      busy = true;
      void this.publish(n).finally(() => (busy = false));
    }, 5);
  }

  stop(): void {
    this.running = false;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
