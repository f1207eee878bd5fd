// Takes each enqueued delivery (woken by NOTIFY on webhook_deliveries, and by a slow safety
// poll) and makes its first attempt here, at once: on the healthy path a message reaches its
// endpoint with no workflow at all, which is what lets one worker keep up with a hundred
// deliveries a second (bench:webhooks). Only a delivery that needs a retry (or was put off: its
// endpoint had its share of attempts in flight) gets a webhookDelivery workflow, started to wait
// the first delay and carry on with the durable schedule (workflows/webhook-delivery.ts).
//
// A delivery is claimed with a lease (claimed_until) and marked dispatched only once its attempt
// is recorded or its workflow started. A dispatcher that dies mid-send leaves the claim to lapse,
// and another sends the same message again under the same webhook-id (at least once); a
// workflow started twice is refused by its id, one per generation (a manual retry is the next).
// A delivery whose endpoint already has its share of this process's attempts in flight (a slow
// or hanging endpoint) is not attempted: its claim is pushed back until one of those attempts
// times out at the latest, and at least 0.5 s then twice as long each time up to a minute,
// costing a row update rather than a workflow, so a hanging endpoint's backlog never slows the
// others. Any number of processes may run it: claims use SKIP LOCKED.
// Without `attempts` (a process that cannot open webhook secrets) every delivery goes straight
// to its workflow.
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { listen } from '../../db/listener.ts';
import type { Db } from '../../db/connection.ts';
import type { Logger } from '../logger.ts';
import { webhookDeliveryId, type webhookDelivery } from '../../workflows/webhook-delivery.ts';
import type { DeliveryAttempts } from './attempt.ts';
import { DELIVERIES_CHANNEL } from './outbox.ts';

const BATCH = 200;
const SAFETY_POLL_MS = 2_000;
/**
 * Longer than an attempt (a send is abandoned at 10 s, then recorded in milliseconds), so a live
 * dispatcher's claim does not lapse; short, as a dead one's message waits this long to be resent.
 */
const CLAIM_MS = 15_000;
/** After a dispatch that failed (Temporal or the database unreachable): claimed again this soon. */
const RETRY_CLAIM_MS = 2_000;
/** First attempts this process has in flight at once (each endpoint's own share is smaller). */
const MAX_IN_FLIGHT = 200;
/** A deferred delivery is looked at again after this, then twice as long each time, up to MAX_DEFER_MS. */
const FIRST_DEFER_MS = 500;
const MAX_DEFER_MS = 60_000;
/** How long stop() waits for first attempts in flight; the rest are sent again after their claim lapses. */
const STOP_WAIT_MS = 2_000;

export interface DispatcherOptions {
  db: Db;
  connectionString: string;
  client: Client;
  taskQueue: string;
  log: Logger;
  /**
   * A client on this process's own workers (clientOnWorkers, temporal/worker.ts) serving
   * `taskQueue`: workflows are then started eagerly on them. The server hands the first workflow
   * task back in the start response instead of dispatching it through the task queue, which
   * saves its matching work and a round trip per delivery (bench:webhooks, short runs at 100/s:
   * the server's CPU per delivery 19.5 → 13 ms). A worker with no free slot makes it fall back
   * to the queue, so it helps least when the worker is saturated.
   */
  localWorkers?: Client;
  /** Makes first attempts here (shared with this process's delivery activity for its per-endpoint bound). */
  attempts?: DeliveryAttempts;
}

interface Claimed {
  id: string;
  generation: number;
  webhook_id: string;
}

export interface Dispatcher {
  /** Claims everything pending now and starts its first attempts (not waited for). */
  drain(): Promise<void>;
  stop(): Promise<void>;
}

export function startDispatcher(opts: DispatcherOptions): Dispatcher {
  const { db, client, log } = opts;
  const starter = opts.localWorkers ?? client;
  let running: Promise<void> | null = null;
  let again = false;
  let stopped = false;
  /** The last claim found more than it had room for: a finished attempt makes room, so drain again. */
  let starved = false;
  const inFlight = new Set<Promise<void>>();

  const claim = async (limit: number): Promise<Claimed[]> => {
    const { rows } = await db.raw(
      `UPDATE webhook_deliveries SET claimed_until = now() + make_interval(secs => ?)
       WHERE id IN (
         SELECT id FROM webhook_deliveries
         WHERE NOT dispatched AND (claimed_until IS NULL OR claimed_until < now())
         ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED)
       RETURNING id, generation, webhook_id`,
      [CLAIM_MS / 1000, limit],
    );
    return rows;
  };

  const startWorkflow = async (deliveryId: number, generation: number, firstDelayMs?: number) => {
    try {
      await starter.workflow.start<typeof webhookDelivery>('webhookDelivery', {
        requestEagerStart: starter === opts.localWorkers,
        workflowId: webhookDeliveryId(deliveryId, generation),
        taskQueue: opts.taskQueue,
        args: [{ deliveryId, firstDelayMs }],
      });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  };

  /**
   * Pushes the claims of deliveries to a busy endpoint back: until a slot may free (`waitMs`), and
   * longer after each deferral.
   */
  const defer = async (busy: { id: string; waitMs: number }[]): Promise<void> => {
    if (!busy.length) return;
    await db.raw(
      `UPDATE webhook_deliveries AS d
       SET claimed_until = now() + make_interval(secs => least(?, greatest(b.wait, ? * 2 ^ d.deferrals)) * (0.8 + 0.4 * random())), deferrals = d.deferrals + 1
       FROM unnest(?::bigint[], ?::float8[]) AS b(id, wait)
       WHERE d.id = b.id`,
      [MAX_DEFER_MS / 1000, FIRST_DEFER_MS / 1000, busy.map((r) => r.id), busy.map((r) => r.waitMs / 1000)],
    );
  };

  const dispatch = async (row: Claimed): Promise<void> => {
    const id = Number(row.id);
    try {
      const outcome = opts.attempts ? await opts.attempts.attempt(id) : null;
      // The endpoint filled up since the claim: deferred like the ones seen busy at claim time.
      if (outcome && !outcome.done && outcome.putOff) return await defer([{ id: row.id, waitMs: outcome.delayMs }]);
      if (!outcome) await startWorkflow(id, row.generation);
      else if (!outcome.done) await startWorkflow(id, row.generation, outcome.delayMs);
      await db('webhook_deliveries').where({ id }).update({ dispatched: true, claimed_until: null });
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
            const busy = new Map<Claimed, number>();
            for (const r of rows) {
              const waitMs = opts.attempts?.slotFreeInMs?.(Number(r.webhook_id)) ?? 0;
              if (waitMs > 0) busy.set(r, waitMs);
            }
            await defer([...busy].map(([r, waitMs]) => ({ id: r.id, waitMs })));
            for (const row of rows) {
              if (busy.has(row)) continue;
              const p: Promise<void> = dispatch(row).finally(() => {
                inFlight.delete(p);
                if (starved && !stopped) void drain();
              });
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
      await listener.close();
      await running;
      let timeout: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled(inFlight), new Promise((r) => (timeout = setTimeout(r, STOP_WAIT_MS)))]);
      clearTimeout(timeout);
    },
  };
}
