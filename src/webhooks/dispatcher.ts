// Starts one webhookDelivery workflow per enqueued delivery. Woken by NOTIFY on
// webhook_deliveries (a notification reaches its workflow in milliseconds) and by a slow safety
// poll. A delivery is marked dispatched only after its workflow started; a crash in between
// starts it again under the same workflow id, which Temporal refuses as already started, so
// each message has one workflow per generation (a manual retry is the next generation). Started
// eagerly on the process's own workers when it has them (`localWorkers`).
// Any number of processes may run it: rows are claimed with SKIP LOCKED.
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { listen } from '../../db/listener.ts';
import type { Db } from '../../db/connection.ts';
import type { Logger } from '../logger.ts';
import { webhookDeliveryId, type webhookDelivery } from '../../workflows/webhook-delivery.ts';
import { DELIVERIES_CHANNEL } from './outbox.ts';

const BATCH = 200;
const SAFETY_POLL_MS = 2_000;

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
}

export interface Dispatcher {
  /** Dispatches everything pending now. */
  drain(): Promise<void>;
  stop(): Promise<void>;
}

export function startDispatcher(opts: DispatcherOptions): Dispatcher {
  const { db, client, log } = opts;
  const starter = opts.localWorkers ?? client;
  let running: Promise<void> | null = null;
  let again = false;
  let stopped = false;

  const batch = () =>
    db.transaction(async (trx) => {
      const rows: { id: string; generation: number }[] = await trx('webhook_deliveries')
        .where({ dispatched: false })
        .orderBy('id')
        .limit(BATCH)
        .forUpdate()
        .skipLocked()
        .select('id', 'generation');
      await Promise.all(
        rows.map(async (r) => {
          try {
            await starter.workflow.start<typeof webhookDelivery>('webhookDelivery', {
              requestEagerStart: starter === opts.localWorkers,
              workflowId: webhookDeliveryId(Number(r.id), r.generation),
              taskQueue: opts.taskQueue,
              args: [{ deliveryId: Number(r.id) }],
            });
          } catch (err) {
            if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
          }
        }),
      );
      if (rows.length) await trx('webhook_deliveries').whereIn('id', rows.map((r) => r.id)).update({ dispatched: true });
      return rows.length;
    });

  const drain = async (): Promise<void> => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      try {
        do {
          again = false;
          while (!stopped && (await batch()) === BATCH);
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
    },
  };
}
