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
   * a workflow start): while at least `backlog` changes wait for it and their number grew since
   * its previous batch was read (writers outpace it: a bulk import), it applies at most
   * `perSecond` changes a second, and at full speed again once the number stops growing. It
   * runs behind the import instead of taking the machine from it. Without this, full speed.
   */
  yieldToImports?: { backlog: number; perSecond: number };
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

export function startChangeFeed(opts: ChangeFeedOptions): ChangeFeed {
  const { db, log } = opts;

  const yielding = opts.yieldToImports;
  /** Changes not yet applied when the previous batch was read (null: none read yet), and whether an import outpaces this consumer. */
  let aheadBefore: number | null = null;
  let slow = false;

  /** One batch under the cursor's row lock; says whether it was full (more may wait). */
  const drainBatch = async (): Promise<boolean> => {
    const limit = slow && yielding ? Math.max(1, Math.min(BATCH, Math.floor(yielding.perSecond))) : BATCH;
    const { n, afterCommit } = await db.transaction(async (trx) => {
      await trx('relay_cursors').insert({ name: opts.cursor, last_id: 0 }).onConflict('name').ignore();
      const cursor = await trx('relay_cursors').where({ name: opts.cursor }).forUpdate().skipLocked().first('last_id');
      if (!cursor) return { n: 0 };
      const rows: ChangeRow[] = await trx('watchlist_changes').where('id', '>', cursor.last_id).orderBy('id').limit(limit).select('id', 'item_id', 'op', 'item');
      if (yielding) {
        const head = Number((await trx('watchlist_changes').max('id as m').first())?.m ?? 0);
        // Everything not yet applied, this batch included: at full speed a batch takes all of
        // it, so only its growth from batch to batch says that writers outpace this consumer.
        const ahead = head - Number(cursor.last_id);
        slow = ahead >= yielding.backlog && aheadBefore !== null && ahead > aheadBefore;
        aheadBefore = ahead;
      }
      if (rows.length === 0) return { n: 0 };
      const newest = new Map<number, ChangeRow>();
      for (const r of rows) newest.set(Number(r.item_id), { ...r, id: Number(r.id), item_id: Number(r.item_id) });
      const started = performance.now();
      const after = await opts.apply([...newest.values()].sort((a, b) => a.id - b.id), trx);
      const last = Number(rows[rows.length - 1]!.id);
      await trx('relay_cursors').where({ name: opts.cursor }).update({ last_id: last, updated_at: trx.fn.now() });
      log.debug({ changes: rows.length, items: newest.size, last_id: last, ms: Math.round(performance.now() - started) }, 'applied watchlist changes');
      return { n: rows.length, afterCommit: after || undefined };
    });
    await afterCommit?.();
    return n === limit;
  };

  let running: Promise<void> | null = null;
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
          const started = performance.now();
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
