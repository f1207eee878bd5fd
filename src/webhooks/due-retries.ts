// The deliveries of one webhook whose time has come: what one round of the webhook's retry
// workflow does (workflows/webhook-retries.ts). A delivery the dispatcher could not complete
// waits in the database, dispatched and pending with its next_attempt_at: a retry on the
// schedule, or a first attempt put off because its endpoint had no free slot. This attempts those
// now due, at most the endpoint's share of this process's attempts at once, and says when the
// next falls due. One workflow per webhook rather than per message: a dead endpoint's backlog
// costs Temporal a timer and an activity per round of its sends, not a workflow, timers and
// activities per message (bench:webhooks; docs/webhooks.md#delivery).
import type { Knex } from 'knex';
import type { Db } from '../../db/connection.ts';
import type { DeliveryAttempts } from './attempt.ts';

/** A run stops taking new deliveries after this (its sends in flight still finish): the workflow's history stays short. */
export const DUE_RUN_BUDGET_MS = 30_000;
/** Deliveries read per query; the sends themselves are bounded by the endpoint's share. */
const BATCH = 50;
const IDLE_ROUND_GAP_MS = 1_000;

export interface DueRunOptions {
  /** The endpoint's share of this process's attempts (WEBHOOK_PER_ENDPOINT_CONCURRENCY). */
  concurrency: number;
  budgetMs?: number;
  /** Set when the run should take no new delivery (the activity was cancelled). */
  signal?: AbortSignal;
}

export interface DueRunResult {
  /** Attempts made (put-offs not counted). */
  attempted: number;
  /** When the webhook's next retry falls due (ms since the epoch); null when none is waiting. */
  nextDueAt: number | null;
}

/** Deliveries handed to this webhook's retries (the rest of the pending ones are the dispatcher's). */
function waitingOf(db: Db | Knex.Transaction, webhookId: number) {
  return db('webhook_deliveries').where({ webhook_id: webhookId, state: 'pending', dispatched: true });
}

/**
 * Attempts the webhook's due retries, oldest due first, until none is due or the budget is
 * spent. When the endpoint's slots are all held by first attempts (the dispatcher, same
 * process), the run ends early and the next wake is when a slot is likely to free.
 */
export async function attemptDueRetries(db: Db, attempts: DeliveryAttempts, webhookId: number, opts: DueRunOptions): Promise<DueRunResult> {
  const deadline = Date.now() + (opts.budgetMs ?? DUE_RUN_BUDGET_MS);
  const taking = new Set<number>();
  const running = new Set<Promise<void>>();
  let attempted = 0;
  let putOffUntil = 0;
  let queue: number[] = [];
  const open = () => putOffUntil === 0 && !opts.signal?.aborted && Date.now() < deadline;

  while (open()) {
    if (running.size >= opts.concurrency) {
      await Promise.race(running);
      continue;
    }
    if (!queue.length) {
      const rows: { id: string }[] = await waitingOf(db, webhookId)
        .where('next_attempt_at', '<=', db.fn.now())
        .whereNotIn('id', [...taking])
        .orderBy('next_attempt_at')
        .limit(BATCH)
        .select('id');
      queue = rows.map((r) => Number(r.id));
      if (!queue.length) {
        if (!running.size) break;
        // Nothing more due now; one finishing may leave another due (a 429 asking for 0 s).
        await Promise.race(running);
        continue;
      }
    }
    const id = queue.shift()!;
    if (taking.has(id)) continue;
    taking.add(id);
    attempted++;
    const p: Promise<void> = attempts
      .attempt(id)
      .then((outcome) => {
        if (outcome.done || !outcome.putOff) return;
        attempted--;
        putOffUntil = Math.max(putOffUntil, Date.now() + outcome.delayMs);
      })
      .finally(() => {
        taking.delete(id);
        running.delete(p);
      });
    running.add(p);
  }
  // An attempt's own failure (the database unreachable) fails the run; the activity is retried.
  await Promise.all(running);
  // What still waits, and the wake time hand-overs compare with, under the webhook's row lock
  // (src/webhooks/hand-over.ts): a delivery handed over from here on is seen by the next round
  // or signalled. NO KEY UPDATE: never in the way of a new delivery's foreign key (hand-over.ts).
  return db.transaction(async (trx) => {
    await trx('webhooks').where({ id: webhookId }).forNoKeyUpdate().first('id');
    const next = await waitingOf(trx, webhookId).min('next_attempt_at as at').first();
    const at = next?.at ? new Date(next.at as string | Date).getTime() : null;
    // A round that sent nothing waits a little before the next: a delivery this database does
    // not yet count as due (its clock behind the workflow's) is not asked about in a tight loop.
    const nextDueAt = at === null ? null : Math.max(at, putOffUntil, attempted ? 0 : Date.now() + IDLE_ROUND_GAP_MS);
    await trx('webhooks').where({ id: webhookId }).update({ retry_wake_at: nextDueAt === null ? null : new Date(nextDueAt) });
    return { attempted, nextDueAt };
  });
}
