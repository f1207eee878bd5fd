// Captures of served requests, written in batches: one UPDATE per batch instead of one round
// trip per request. A capture lost to a crash leaves its reservation to the orphan sweeper,
// which releases it: the failure mode under-bills a few milliseconds of traffic, never
// double-bills.
import type { Pool } from '../../db/pool.ts';

const CAPTURE_SQL = `
UPDATE credit_ledger l SET state = 'charged', status_code = v.status, settled_at = now()
FROM unnest($1::text[], $2::int[]) AS v(request_id, status)
WHERE l.request_id = v.request_id AND l.state = 'reserved'`;

interface Pending {
  requestId: string;
  status: number;
  resolve(): void;
  reject(err: unknown): void;
}

export class CaptureQueue {
  private pending: Pending[] = [];
  private timer: NodeJS.Timeout | null = null;
  private inflight = new Set<Promise<void>>();

  constructor(
    private readonly pool: Pool,
    private readonly delayMs = 5,
    private readonly maxBatch = 500,
  ) {}

  /** Resolves once the capture is stored. */
  capture(requestId: string, status: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ requestId, status, resolve, reject });
      if (this.pending.length >= this.maxBatch) this.flushNow();
      else this.timer ??= setTimeout(() => this.flushNow(), this.delayMs);
    });
  }

  /** Writes everything queued; resolves when every earlier capture is stored. */
  async flush(): Promise<void> {
    this.flushNow();
    await Promise.allSettled([...this.inflight]);
  }

  private flushNow(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending;
    if (!batch.length) return;
    this.pending = [];
    const write = this.pool
      .query(CAPTURE_SQL, [batch.map((p) => p.requestId), batch.map((p) => p.status)])
      .then(
        () => batch.forEach((p) => p.resolve()),
        (err) => batch.forEach((p) => p.reject(err)),
      )
      .finally(() => this.inflight.delete(write));
    this.inflight.add(write);
  }
}
