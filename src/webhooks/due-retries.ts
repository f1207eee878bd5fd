// The deliveries of one webhook whose time has come: what one round of the webhook's retry
// workflow does (workflows/webhook-retries.ts). A delivery the dispatcher could not complete
// waits in the database, dispatched and pending with its next_attempt_at: a retry on the
// schedule, or a first attempt put off because its endpoint had no free slot. A round attempts
// those due, at most the endpoint's share of this process's attempts at once, and keeps looking
// (every second) while another falls due within a minute, for up to 5 minutes; then it says when
// the next falls due and the workflow sleeps on a timer. A dead endpoint, whose backlog keeps
// falling due as its sends time out, so costs Temporal one activity every 5 minutes, not a round
// trip through the workflow per batch of sends: each of those was a burst of work on the Temporal
// server and the worker that the healthy endpoints' messages waited behind (bench:webhooks).
import { setTimeout as delay } from 'node:timers/promises';
import type { Knex } from 'knex';
import type { Db } from '../../db/connection.ts';
import type { DeliveryAttempts } from './attempt.ts';

/** A round takes no new delivery after this (its sends in flight still finish); the activity's time-out allows for it. */
export const ROUND_MAX_MS = 5 * 60_000;
/** A round with nothing due keeps looking while the next delivery falls due within this. */
const LINGER_MS = 60_000;
/** How often a round with nothing due reads again (a hand-over from another process is seen within this). */
const POLL_MS = 1_000;
/** Deliveries read per query; the sends themselves are bounded by the endpoint's share. */
const BATCH = 50;
/**
 * A round that sent nothing has the next wait at least this: a delivery this database does not
 * yet count as due (its clock behind the workflow's) is not asked about in a tight loop.
 */
const IDLE_ROUND_GAP_MS = 1_000;

export interface DueRunOptions {
  /** The endpoint's share of this process's attempts (WEBHOOK_PER_ENDPOINT_CONCURRENCY). */
  concurrency: number;
  /** ROUND_MAX_MS unless given. */
  maxMs?: number;
  /** Set when the round should take no new delivery (the activity was cancelled). */
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

/** When the webhook's soonest waiting delivery falls due (ms since the epoch); null when none waits. */
async function nextDue(db: Db | Knex.Transaction, webhookId: number): Promise<number | null> {
  const row = await waitingOf(db, webhookId).min('next_attempt_at as at').first();
  return row?.at ? new Date(row.at as string | Date).getTime() : null;
}

/**
 * Attempts the webhook's due deliveries, soonest due first, for as long as some fall due within
 * LINGER_MS (up to `maxMs`). When the endpoint's slots are all held by first attempts (the
 * dispatcher, same process), it waits until one is likely to free.
 */
export async function attemptDueRetries(db: Db, attempts: DeliveryAttempts, webhookId: number, opts: DueRunOptions): Promise<DueRunResult> {
  const deadline = Date.now() + (opts.maxMs ?? ROUND_MAX_MS);
  const taking = new Set<number>();
  const running = new Set<Promise<void>>();
  let attempted = 0;
  /** The endpoint's slots are held elsewhere: no attempt before this. */
  let blockedUntil = 0;
  let queue: number[] = [];
  /** Until `ms` pass, an attempt finishes or the round is cancelled. */
  const pause = (ms: number) => Promise.race([delay(Math.max(0, ms), undefined, { signal: opts.signal, ref: false }).catch(() => {}), ...running]);

  while (!opts.signal?.aborted && Date.now() < deadline) {
    if (running.size >= opts.concurrency) {
      await Promise.race(running);
      continue;
    }
    if (Date.now() < blockedUntil) {
      await pause(blockedUntil - Date.now());
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
    }
    if (!queue.length) {
      // Nothing due now. One in flight may leave another due soon (a 429 asking for 0 s).
      if (running.size) {
        await pause(POLL_MS);
        continue;
      }
      const next = await nextDue(db, webhookId);
      if (next === null || next - Date.now() > LINGER_MS) break;
      await pause(Math.min(next - Date.now(), POLL_MS));
      continue;
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
        blockedUntil = Math.max(blockedUntil, Date.now() + outcome.delayMs);
        // Read again once a slot frees: what is due may have changed by then.
        queue = [];
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
    const at = await nextDue(trx, webhookId);
    const nextDueAt = at === null ? null : Math.max(at, blockedUntil, attempted ? 0 : Date.now() + IDLE_ROUND_GAP_MS);
    await trx('webhooks').where({ id: webhookId }).update({ retry_wake_at: nextDueAt === null ? null : new Date(nextDueAt) });
    return { attempted, nextDueAt };
  });
}
