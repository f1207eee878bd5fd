// How a delivery passes from the dispatcher to its webhook's retry workflow
// (workflows/webhook-retries.ts): marked dispatched with the time it may go, and the workflow
// told, by signal-with-start, when that is earlier than it means to look anyway.
//
// `webhooks.retry_wake_at` is when the webhook's run will next read its waiting deliveries (null:
// no run will). A round writes it as it ends, under the webhook's row lock, in the transaction
// that reads what still waits (src/webhooks/due-retries.ts); a hand-over lowers it under the
// same lock. Either the round's read sees the handed-over delivery, or the hand-over sees what
// the round wrote: null (the run is ending) or a later time mean a signal, anything else means
// the run will find the delivery without one. Behind a dead endpoint, whose backlog is handed
// over message by message, that leaves out nearly every signal (each a workflow task on the
// Temporal server and the worker).
//
// The hand-over is written before its signal. A signal that fails (Temporal unreachable), or a
// process that dies in between, leaves deliveries a run may not know of: a sweep then signals the
// workflow of every webhook with deliveries waiting (soon after the failure, and at every start,
// which also covers a Temporal server whose state was lost), and every few minutes a lighter one
// signals the webhooks whose deliveries are long overdue.
import type { Client } from '@temporalio/client';
import type { Db } from '../../db/connection.ts';
import type { Logger } from '../logger.ts';
import { OutageLog } from '../runtime/outage-log.ts';
import { callTemporal } from '../../temporal/client.ts';
import { retryDueSignal, webhookRetries, webhookRetriesId } from '../../workflows/webhook-retries.ts';

/** A delivery handed over, to go at `dueAt` (ms since the epoch). */
export interface HandOverRow {
  id: string;
  webhookId: number;
  dueAt: number;
}

/**
 * How much later than due a run may look at a delivery before it is worth a signal: less than
 * the schedule's own jitter, and a busy endpoint's slot-free time is a guess anyway.
 */
const LATE_OK_MS = 1_000;
/** The sweep after a failed signal, then twice as long after each failure of its own, up to this. */
const FIRST_SWEEP_WAIT_MS = 2_000;
/** Short enough that retries refused during a Temporal outage are handed over within 15 s of its return (issue 26). */
const MAX_SWEEP_WAIT_MS = 8_000;
/**
 * The periodic sweep: how often, and how overdue a waiting delivery must be to count (well past a
 * round's 40 s; a dead endpoint's put-off backlog is overdue too, and costs a signal per sweep).
 */
const OVERDUE_SWEEP_EVERY_MS = 5 * 60_000;
const OVERDUE_MS = 2 * 60_000;

export interface HandOvers {
  handOver(rows: readonly HandOverRow[]): Promise<void>;
  /** Settles when the sweep made at start is done (or given up at stop). */
  firstSweep: Promise<void>;
  stop(): void;
}

export function startHandOvers(opts: { db: Db; client: Client; taskQueue: string; log: Logger }): HandOvers {
  const { db, client, log } = opts;
  let stopped = false;

  const signal = async (webhookId: number, dueAt: number): Promise<void> => {
    await callTemporal(client, () =>
      client.workflow.signalWithStart(webhookRetries, {
        workflowId: webhookRetriesId(webhookId),
        taskQueue: opts.taskQueue,
        args: [{ webhookId, dueAt }],
        signal: retryDueSignal,
        signalArgs: [dueAt],
      }),
    );
  };

  /**
   * In one transaction: locks the webhooks in id order, then, in one statement, marks the
   * deliveries dispatched with their times (`id` null: none, for the sweep) and lowers each
   * webhook's wake time to its soonest. The locks come first, in a statement of their own: inside
   * the one statement the order in which PostgreSQL runs its parts is its own, and two hand-overs
   * at once deadlocked on two webhooks' rows (bench:alerts, 2026-11-29: 5 hand-overs failed). A
   * delivery belongs to one webhook, so two hand-overs of one delivery wait on that webhook's row
   * before either touches it. Returns the webhooks whose run would have looked too late, or not
   * at all, with the time to signal. The lock is NO KEY UPDATE: a new
   * delivery's foreign key takes KEY SHARE on its webhook inside the notification log's serialized
   * append, and a FOR UPDATE here made every notification write wait behind it (bench:webhooks:
   * 140 writes timed out in phase B).
   */
  const record = async (rows: readonly { id: string | null; webhookId: number; dueAt: number }[]): Promise<Map<number, number>> => {
    const webhookIds = [...new Set(rows.map((r) => r.webhookId))].sort((a, b) => a - b);
    const woken = await db.transaction(async (trx) => {
      await trx.raw('SELECT id FROM webhooks WHERE id = ANY(?::bigint[]) ORDER BY id FOR NO KEY UPDATE', [webhookIds]);
      const { rows: changed } = await trx.raw(
        `WITH h AS (SELECT * FROM unnest(?::bigint[], ?::bigint[], ?::float8[]) AS h(id, webhook_id, due)),
              moved AS (
                UPDATE webhook_deliveries AS d SET dispatched = true, claimed_until = NULL, next_attempt_at = to_timestamp(h.due / 1000.0)
                FROM h WHERE d.id = h.id),
              s AS (SELECT webhook_id AS id, min(due) AS due FROM h GROUP BY webhook_id),
              -- Locked by the statement above: this statement's snapshot, taken after, reads their current wake times.
              old AS (SELECT w.id, w.retry_wake_at FROM webhooks w JOIN s ON s.id = w.id)
         UPDATE webhooks w SET retry_wake_at = least(old.retry_wake_at, to_timestamp(s.due / 1000.0))
         FROM old JOIN s ON s.id = old.id
         WHERE w.id = old.id
         RETURNING w.id, s.due, extract(epoch from old.retry_wake_at) * 1000 AS was`,
      [rows.map((r) => r.id) as string[], rows.map((r) => r.webhookId), rows.map((r) => r.dueAt)],
      );
      return changed;
    });
    const late = new Map<number, number>();
    for (const r of woken as { id: string; due: number; was: string | null }[]) {
      if (r.was === null || Number(r.was) > Number(r.due) + LATE_OK_MS) late.set(Number(r.id), Number(r.due));
    }
    return late;
  };

  const signalAll = async (late: Map<number, number>): Promise<void> => {
    for (const [webhookId, dueAt] of late) {
      try {
        await signal(webhookId, dueAt);
      } catch (err) {
        if (stopped) return;
        // The sweep that takes over retries until it works, and ends this outage's log lines.
        sweeps.failed(err, { webhook_id: webhookId });
        sweepSoon();
        return;
      }
    }
  };

  const handOver = async (rows: readonly HandOverRow[]): Promise<void> => {
    if (rows.length) await signalAll(await record(rows));
  };

  /** Signals the run of every webhook with deliveries waiting, or with deliveries overdue by `overdueMs`. */
  const sweep = async (overdueMs?: number): Promise<void> => {
    const q = db('webhook_deliveries').where({ state: 'pending', dispatched: true });
    if (overdueMs !== undefined) q.where('next_attempt_at', '<', db.raw(`now() - make_interval(secs => ?)`, [overdueMs / 1000]));
    const rows: { webhook_id: string; due: Date }[] = await q.groupBy('webhook_id').select('webhook_id', db.raw('min(next_attempt_at) AS due'));
    for (const r of rows) {
      if (stopped) return;
      const dueAt = new Date(r.due).getTime();
      await record([{ id: null, webhookId: Number(r.webhook_id), dueAt }]);
      await signal(Number(r.webhook_id), dueAt);
    }
    if (rows.length) log.info({ webhooks: rows.length, overdue_only: overdueMs !== undefined }, 'webhook retry workflows signalled by a sweep');
  };

  let sweeping: Promise<void> | null = null;
  const sweeps = new OutageLog(log, 'hand webhook retries over to their workflows');
  /** Sweeps after `firstWaitMs`, and again later until a sweep succeeds, unless one is under way. */
  const startSweep = (firstWaitMs: number): Promise<void> => {
    return (sweeping ??= (async () => {
      for (let wait = firstWaitMs; !stopped; wait = Math.min(Math.max(wait, FIRST_SWEEP_WAIT_MS) * 2, MAX_SWEEP_WAIT_MS)) {
        await new Promise((r) => setTimeout(r, wait).unref());
        if (stopped) return;
        try {
          await sweep();
          sweeps.succeeded();
          return;
        } catch (err) {
          if (!stopped) sweeps.failed(err);
        }
      }
    })().finally(() => (sweeping = null)));
  };
  const sweepSoon = () => void startSweep(FIRST_SWEEP_WAIT_MS);

  const firstSweep = startSweep(0);
  const overdue = setInterval(() => {
    if (!sweeping) sweep(OVERDUE_MS).catch((err: unknown) => log.warn({ err }, 'webhook overdue sweep failed'));
  }, OVERDUE_SWEEP_EVERY_MS);
  overdue.unref();

  return {
    handOver,
    firstSweep,
    stop: () => {
      stopped = true;
      clearInterval(overdue);
    },
  };
}
