// Takes each enqueued delivery (woken by NOTIFY on webhook_deliveries, and by a slow safety
// poll) and makes its first attempt here, at once: on the healthy path a message reaches its
// endpoint with no workflow at all, which is what lets one worker keep up with a hundred
// deliveries a second (bench:webhooks). Every other delivery is handed over to its webhook's
// webhookRetries workflow (src/webhooks/hand-over.ts): one that needs a retry, and one whose
// endpoint already has its share of this process's attempts in flight (a slow or hanging
// endpoint), which waits about as long as the endpoint's sends take. One workflow per webhook,
// however many messages wait, and the outbox holds only messages not yet looked at: a claim's
// cost does not grow with a dead endpoint's backlog.
//
// A delivery is claimed with a lease (claimed_until) and marked dispatched only once its first
// attempt is recorded. A dispatcher that dies mid-send leaves the claim to lapse, and another
// sends the same message again under the same webhook-id (at least once); one that dies after
// recording a failure leaves a row that, claimed again, is only handed over (its attempt is not
// repeated ahead of the schedule). Any number of processes may run it: claims use SKIP LOCKED.
import type { Client } from '@temporalio/client';
import { listen } from '../../db/listener.ts';
import type { Db } from '../../db/connection.ts';
import type { Logger } from '../logger.ts';
import type { DeliveryAttempts } from './attempt.ts';
import { startHandOvers, type HandOverRow } from './hand-over.ts';
import { DELIVERIES_CHANNEL } from './outbox.ts';

const BATCH = 200;
const SAFETY_POLL_MS = 2_000;
/**
 * Longer than an attempt (a send is abandoned at 10 s, then recorded in milliseconds), so a live
 * dispatcher's claim does not lapse; short, as a dead one's message waits this long to be resent.
 */
const CLAIM_MS = 15_000;
/** After a dispatch that failed (the database unreachable): claimed again this soon. */
const RETRY_CLAIM_MS = 2_000;
/** First attempts this process has in flight at once (each endpoint's own share is smaller). */
const MAX_IN_FLIGHT = 200;
/** How long stop() waits for first attempts in flight; the rest are sent again after their claim lapses. */
const STOP_WAIT_MS = 2_000;

export interface DispatcherOptions {
  db: Db;
  connectionString: string;
  client: Client;
  taskQueue: string;
  log: Logger;
  /** Makes first attempts here (shared with this process's retry activity for its per-endpoint bound). */
  attempts: DeliveryAttempts;
}

interface Claimed {
  id: string;
  webhook_id: string;
  state: string;
  attempt_count: number;
  next_attempt_at: Date | null;
}

export interface Dispatcher {
  /** Claims everything pending now and starts its first attempts (not waited for). */
  drain(): Promise<void>;
  stop(): Promise<void>;
}

export function startDispatcher(opts: DispatcherOptions): Dispatcher {
  const { db, client, log, attempts } = opts;
  let running: Promise<void> | null = null;
  let again = false;
  let stopped = false;
  /** The last claim found more than it had room for: a finished attempt makes room, so drain again. */
  let starved = false;
  const inFlight = new Set<Promise<void>>();
  const handOvers = startHandOvers({ db, client, taskQueue: opts.taskQueue, log });

  const claim = async (limit: number): Promise<Claimed[]> => {
    const { rows } = await db.raw(
      `UPDATE webhook_deliveries SET claimed_until = now() + make_interval(secs => ?)
       WHERE id IN (
         SELECT id FROM webhook_deliveries
         WHERE NOT dispatched AND (claimed_until IS NULL OR claimed_until < now())
         ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED)
       RETURNING id, webhook_id, state, attempt_count, next_attempt_at`,
      [CLAIM_MS / 1000, limit],
    );
    return rows;
  };

  const dispatch = async (row: Claimed): Promise<void> => {
    const id = Number(row.id);
    const webhookId = Number(row.webhook_id);
    try {
      // Attempted before (a dispatcher stopped after recording it): only the hand-over is left,
      // at the time the schedule gave.
      const dueAt =
        row.attempt_count > 0
          ? row.state === 'pending'
            ? (row.next_attempt_at?.getTime() ?? Date.now())
            : null
          : await attempts.attempt(id).then((o) => (o.done ? null : Date.now() + o.delayMs));
      // Only while this claim still stands. An attempt that parked the delivery (its account not
      // served) left it dispatched with no claim, and a sweep resuming the account may since have
      // handed it back (not dispatched, no claim): marking it dispatched then would leave it
      // pending with nothing to send it, for good.
      if (dueAt === null) await db('webhook_deliveries').where({ id }).whereNotNull('claimed_until').whereNull('parked_at').update({ dispatched: true, claimed_until: null });
      else await handOvers.handOver([{ id: row.id, webhookId, dueAt }]);
    } catch (err) {
      log.warn({ err, delivery_id: id }, 'webhook dispatch failed; will retry');
      await db('webhook_deliveries')
        .where({ id })
        .update({ claimed_until: db.raw(`now() + make_interval(secs => ?)`, [RETRY_CLAIM_MS / 1000]) })
        .catch(() => {});
    }
  };

  const drain = async (): Promise<void> => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      try {
        do {
          again = false;
          for (;;) {
            const room = Math.min(BATCH, MAX_IN_FLIGHT - inFlight.size);
            starved = room <= 0;
            if (stopped || starved) break;
            const rows = await claim(room);
            const busy: HandOverRow[] = [];
            for (const row of rows) {
              // An endpoint with no free slot: the delivery waits for one in its webhook's queue.
              const waitMs = row.attempt_count > 0 ? 0 : (attempts.slotFreeInMs?.(Number(row.webhook_id)) ?? 0);
              if (waitMs > 0) {
                busy.push({ id: row.id, webhookId: Number(row.webhook_id), dueAt: Date.now() + waitMs });
                continue;
              }
              const p: Promise<void> = dispatch(row).finally(() => {
                inFlight.delete(p);
                if (starved && !stopped) void drain();
              });
              inFlight.add(p);
            }
            // After the others' attempts have started: they never wait on a busy endpoint's hand-over.
            if (busy.length) {
              const p: Promise<void> = handOvers
                .handOver(busy)
                .catch((err: unknown) => log.warn({ err }, 'webhook hand-over failed; will retry'))
                .finally(() => inFlight.delete(p));
              inFlight.add(p);
            }
            if (rows.length < room) break;
          }
        } while (again && !stopped);
      } catch (err) {
        log.warn({ err }, 'webhook dispatch failed; will retry');
      } finally {
        running = null;
      }
    })();
    return running;
  };

  const listener = listen({ connectionString: opts.connectionString, channels: [DELIVERIES_CHANNEL], onWake: () => void drain(), log, applicationName: 'webhook-dispatcher' });
  const timer = setInterval(() => void drain(), SAFETY_POLL_MS);
  timer.unref();
  return {
    drain,
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      handOvers.stop();
      await listener.close();
      await running;
      let timeout: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled(inFlight), new Promise((r) => (timeout = setTimeout(r, STOP_WAIT_MS)))]);
      clearTimeout(timeout);
    },
  };
}
