// When each watched target was last checked (issue 38: a watchlist item shows it as
// `last_checked_at`, src/apis/watchlist/health.ts). A poll whose content did not change writes
// nothing else, and at 1,000 targets polled every 5 s a write per poll would be 200 statements a
// second for a timestamp. So the shard pollers of a worker process note each check here, in
// memory (the newest per target: its time, and whether it read the event), and one statement a
// second writes them all: one upsert of one row per target checked in that second into
// monitor_target_checks (db/migrations/033), whose rows are updated in place (HOT: no index
// covers them). A second with no check writes nothing. The one other writer is clearStatus
// (target-status.ts): the first success after a failure writes its check at once, in the
// statement that clears the failure, so the item never reads the failure gone but not the
// success.
//
// What counts as a check: a poll that got the platform's answer (the content, or a failure about
// the event: not found, blocked, a 5xx, a time-out). Not a poll that was never sent (the target
// backing off, the run stopping) nor a refusal blamed on the exit (the target goes out at once
// through another). The time is the poller's clock when the answer (or the failure) came.
//
// A write that fails (the database away) keeps its times for the next one, merged with newer
// ones: at most one entry per target is held, and the greatest time wins in the database too,
// so two pollers of one target (a takeover) never move it back.
import type { Db } from '../../db/connection.ts';
import type { Logger } from '../logger.ts';
import { OutageLog } from '../runtime/outage-log.ts';

/** How often the checks noted are written (one statement per worker process each time). */
export const CHECKS_FLUSH_MS = 1_000;

/** The newest check wins: an older one (another poller's, a retried write) changes nothing. */
const UPSERT = `INSERT INTO monitor_target_checks AS c (target, checked_at, ok)
  SELECT * FROM unnest(?::text[], ?::timestamptz[], ?::boolean[])
  ON CONFLICT (target) DO UPDATE SET checked_at = EXCLUDED.checked_at, ok = EXCLUDED.ok
  WHERE EXCLUDED.checked_at >= c.checked_at`;

/** A check: when it ended (ms, epoch) and whether it read the event. */
interface Check {
  at: number;
  ok: boolean;
}

export class CheckLog {
  private pending = new Map<string, Check>();
  private timer: NodeJS.Timeout | null = null;
  private users = 0;
  private writing: Promise<void> | null = null;
  private readonly outage: OutageLog;
  /** Statements written so far (for the tests and the cost figures in docs/monitoring.md). */
  statements = 0;

  constructor(
    private readonly db: Db,
    log: Logger,
    private readonly everyMs = CHECKS_FLUSH_MS,
  ) {
    this.outage = new OutageLog(log, 'record when targets were checked');
  }

  /** A poll of `target` ended at `at` (ms, epoch): it read the event (`ok`), or it failed. */
  checked(target: string, at: number, ok: boolean): void {
    const known = this.pending.get(target);
    if (known === undefined || at >= known.at) this.pending.set(target, { at, ok });
  }

  /** A shard run starts: the writes run while any run does. */
  acquire(): void {
    if (this.users++ > 0) return;
    this.timer = setInterval(() => {
      if (!this.writing) void this.flush();
    }, this.everyMs);
    this.timer.unref();
  }

  /** A shard run ends: what it noted is written now (and the writes stop with the last run). */
  async release(): Promise<void> {
    if (--this.users === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
    await this.flush();
  }

  /** Writes every check noted so far, after the write in progress if there is one. Never throws. */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
    if (this.pending.size === 0) return;
    this.writing = this.write().finally(() => (this.writing = null));
    await this.writing;
  }

  private async write(): Promise<void> {
    // In key order: two writers of overlapping targets (a takeover) lock the rows in one order.
    const batch = [...this.pending].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    this.pending = new Map();
    try {
      this.statements++;
      await this.db.raw(UPSERT, [batch.map(([target]) => target), batch.map(([, c]) => new Date(c.at).toISOString()), batch.map(([, c]) => c.ok)]);
      this.outage.succeeded();
    } catch (err) {
      for (const [target, c] of batch) this.checked(target, c.at, c.ok);
      this.outage.failed(err, { targets: batch.length });
    }
  }
}
