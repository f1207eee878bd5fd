// A durable reader of watchlist_changes: every watchlist write leaves a row there in the same
// transaction (src/apis/watchlist/store.ts), and each consumer (the monitor relay, the
// membership relay) reads them in id order from a cursor of its own in relay_cursors. A batch is
// applied inside the transaction that moves the cursor, so a crash or an outage of what it
// applies to delays changes but never loses one; consumers only see each item's newest change
// in a batch (it carries the whole item) and must be idempotent, since a batch whose commit
// failed is applied again.
//
// Woken by NOTIFY on watchlist_changes (changes apply in milliseconds) and by a slow safety
// poll. A batch that fails (Temporal or the database down) is retried every few seconds, logged
// once when the failures start and once when they end. A costly consumer may yield to bulk
// imports (yieldToImports): it then runs behind them, at a floor rate, and catches up after.
// Any number of processes may run the same consumer: the cursor row is locked with SKIP LOCKED,
// so one drains at a time and the others skip.
import type { Knex } from 'knex';
import { listen, type Listener } from '../../db/listener.ts';
import type { Db } from '../../db/connection.ts';
import type { Logger } from '../logger.ts';
import { OutageLog } from '../runtime/outage-log.ts';
import { CHANGES_CHANNEL } from '../apis/watchlist/store.ts';
import type { WatchlistItem } from '../apis/watchlist/schema.ts';

const BATCH = 500;
const SAFETY_POLL_MS = 2_000;
/**
 * The longest wait between retries of a failed batch. Each retry is cheap (the batch's calls are
 * bounded: temporal/client.ts), and a part that comes back must see its work within seconds
 * (issue 26: applied within 15 s of Temporal's return; a 30 s cap missed that).
 */
const MAX_RETRY_MS = 4_000;

export interface ChangeRow {
  id: number;
  item_id: number;
  op: 'create' | 'update' | 'delete';
  item: WatchlistItem;
}

export interface ChangeFeedOptions {
  db: Db;
  connectionString: string;
  /** The consumer's cursor name in relay_cursors. */
  cursor: string;
  log: Logger;
  /**
   * Applies one batch (each item's newest change, in id order) inside the cursor's transaction.
   * A function it returns runs once the batch has committed, outside any transaction (calls to
   * Temporal, which must not run while the batch holds its rows' locks); it must not throw.
   */
  apply(changes: ChangeRow[], trx: Knex.Transaction): Promise<void | (() => Promise<void>)>;
  /**
   * For a consumer whose work per change costs far more than the write did (the monitor relay:
   * a workflow start): while at least `burst` changes were written in the last second (a bulk
   * import), it applies at most `perSecond` changes a second, and at full speed again once the
   * writes slow down. It runs behind the import instead of taking the machine from it. Without
   * this, full speed.
   */
  yieldToImports?: { burst: number; perSecond: number };
  /**
   * The least time from one batch's start to the next's. Writes arriving one after another each
   * wake the feed; with a gap, those of one gap are read as one batch (the membership relay: one
   * transaction and one reload of the touched shards for many creates). A write after a quiet
   * spell is read at once. Without this, each wake-up reads at once.
   */
  gatherMs?: number;
}

export interface ChangeFeed {
  /** Applies everything pending now (tests and shutdown use it). */
  drain(): Promise<void>;
  stop(): Promise<void>;
}

/** Runs `fn` over `items` with at most `limit` calls in flight. */
export async function inParallel<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

/**
 * How many changes were written in about the last second, from the log's head as each batch
 * reads it: the head now minus the head at the newest reading at least a second old (the oldest
 * reading when none is; none at all: 0). An older reading only widens the window, so a burst is
 * never missed; at worst writes are counted since the feed's previous batch (at most the safety
 * poll's 2 s apart when idle; after a long batch, one batch may yield for a trickle).
 */
export class WrittenLastSecond {
  private readings: { at: number; head: number }[] = [];

  count(head: number, at: number): number {
    const r = this.readings;
    let base = -1;
    for (let i = r.length - 1; i >= 0; i--) {
      if (at - r[i]!.at >= 1_000) {
        base = i;
        break;
      }
    }
    const from = base >= 0 ? r[base]!.head : r[0]?.head;
    // Readings older than the base are no longer needed.
    if (base > 0) r.splice(0, base);
    r.push({ at, head });
    return from === undefined ? 0 : Math.max(0, head - from);
  }
}

export function startChangeFeed(opts: ChangeFeedOptions): ChangeFeed {
  const { db, log } = opts;

  const yielding = opts.yieldToImports;
  const written = new WrittenLastSecond();
  /** Whether an import is being written: changes arrive faster than `yielding.burst` a second. */
  let slow = false;

  /** One batch under the cursor's row lock; says whether it was full (more may wait). */
  const drainBatch = async (): Promise<boolean> => {
    const { n, limit, afterCommit } = await db.transaction(async (trx) => {
      await trx('relay_cursors').insert({ name: opts.cursor, last_id: 0 }).onConflict('name').ignore();
      const cursor = await trx('relay_cursors').where({ name: opts.cursor }).forUpdate().skipLocked().first('last_id');
      if (!cursor) return { n: 0, limit: BATCH };
      if (yielding) {
        // Measured by what was written, not by what waits: a consumer that keeps up at full
        // speed slows the import to its own pace, so nothing would ever wait (issue 40: for its
        // first 5 s an import ran at 120 items/s while the monitor relay kept up with it). Decided
        // before this batch is read, so the batch that sees the import already yields.
        const head = Number((await trx('watchlist_changes').max('id as m').first())?.m ?? 0);
        slow = written.count(head, performance.now()) >= yielding.burst;
      }
      const limit = slow && yielding ? Math.max(1, Math.min(BATCH, Math.floor(yielding.perSecond))) : BATCH;
      const rows: ChangeRow[] = await trx('watchlist_changes').where('id', '>', cursor.last_id).orderBy('id').limit(limit).select('id', 'item_id', 'op', 'item');
      if (rows.length === 0) return { n: 0, limit };
      const newest = new Map<number, ChangeRow>();
      for (const r of rows) newest.set(Number(r.item_id), { ...r, id: Number(r.id), item_id: Number(r.item_id) });
      const started = performance.now();
      const after = await opts.apply([...newest.values()].sort((a, b) => a.id - b.id), trx);
      const last = Number(rows[rows.length - 1]!.id);
      await trx('relay_cursors').where({ name: opts.cursor }).update({ last_id: last, updated_at: trx.fn.now() });
      log.debug({ changes: rows.length, items: newest.size, last_id: last, ms: Math.round(performance.now() - started) }, 'applied watchlist changes');
      return { n: rows.length, limit, afterCommit: after || undefined };
    });
    await afterCommit?.();
    return n === limit;
  };

  let running: Promise<void> | null = null;
  /** When the last batch started (performance.now()): the next one waits for `gatherMs` after it. */
  let lastStart = -Infinity;
  let again = false;
  let stopped = false;
  let failures = 0;
  const outage = new OutageLog(log, 'apply watchlist changes', { cursor: opts.cursor });
  let retryTimer: NodeJS.Timeout | null = null;
  /** Ends a yielding wait early when the feed stops. */
  let wakePause: (() => void) | null = null;
  const pause = (ms: number) =>
    ms <= 0
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, ms);
          wakePause = () => {
            clearTimeout(timer);
            resolve();
          };
        }).finally(() => {
          wakePause = null;
        });

  const drain = (): Promise<void> => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        while (!stopped) {
          if (opts.gatherMs) await pause(lastStart + opts.gatherMs - performance.now());
          const started = performance.now();
          lastStart = started;
          if (!(await drainBatch())) break;
          // Outpaced by an import: the rest of this second is left to it.
          if (slow) await pause(1_000 - (performance.now() - started));
        }
      } while (again && !stopped);
    })()
      .then(
        () => {
          failures = 0;
          outage.succeeded();
        },
        (err: unknown) => {
          failures++;
          const wait = Math.min(MAX_RETRY_MS, 500 * 2 ** failures);
          outage.failed(err, { retry_ms: wait });
          if (!stopped && !retryTimer) {
            retryTimer = setTimeout(() => {
              retryTimer = null;
              void drain();
            }, wait);
          }
        },
      )
      .finally(() => {
        running = null;
      });
    return running;
  };

  const listener: Listener = listen({
    connectionString: opts.connectionString,
    channels: [CHANGES_CHANNEL],
    onWake: () => void drain(),
    log,
    applicationName: opts.cursor,
  });
  const poll = setInterval(() => void drain(), SAFETY_POLL_MS);
  poll.unref();

  return {
    drain,
    stop: async () => {
      stopped = true;
      wakePause?.();
      clearInterval(poll);
      if (retryTimer) clearTimeout(retryTimer);
      await listener.close();
      await running;
    },
  };
}
