// The webhook delivery path for a test file, all real: the file's own scratch database (its
// dispatcher sees only its deliveries), a gateway over it that lets webhooks reach loopback
// (WEBHOOK_ALLOW_PRIVATE_NETWORKS), a worker on a unique queue with the real delivery activity
// and workflow, and the dispatcher. Retry waits are short so a schedule plays out in seconds.
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll } from 'vitest';
import { createWebhookActivities } from '../../activities/webhooks.ts';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { createLogger } from '../../src/logger.ts';
import { createDeliveryAttempts, type DeliveryAttempts } from '../../src/webhooks/attempt.ts';
import { startDispatcher, type Dispatcher } from '../../src/webhooks/dispatcher.ts';
import { appendWithDeliveries } from '../../src/webhooks/outbox.ts';
import { SecretBox } from '../../src/webhooks/secret-box.ts';
import { connectTemporal } from '../../temporal/client.ts';
import { WORKFLOWS_PATH } from '../../temporal/runtime.ts';
import { startWorkers, type Workers } from '../../temporal/worker.ts';
import { databaseUrl, startTestGateway, TEST_WEBHOOK_KEY, type TestGateway } from './harness.ts';
import { cachedBundle, temporalAddress, TEST_NAMESPACE, uniqueTaskQueue } from './temporal.ts';

export interface WebhookStack {
  db: Db;
  gateway: TestGateway;
  client: Client;
  taskQueue: string;
  /** The worker's and dispatcher's attempts (one per-endpoint bound for both). */
  attempts: DeliveryAttempts;
  /** Writes one notification for the item, as a poll does (log row and deliveries in one transaction). */
  notify(accountId: number, itemId: number, payload?: Record<string, unknown>): Promise<number>;
}

export interface WebhookStackOptions {
  /** Waits between attempts, ms. */
  scheduleMs?: number[];
  /** Per-attempt timeout, ms (production: 10 s). */
  timeoutMs?: number;
  perEndpointConcurrency?: number;
  /** How long a retry round takes new deliveries, ms (production: 5 minutes). */
  roundMaxMs?: number;
  /**
   * Runs after each of the dispatcher's first attempts, before the dispatcher records its outcome:
   * for a test to put another writer (a sweep) in that gap. The attempt itself is the real one.
   */
  afterDispatchAttempt?: (deliveryId: number) => Promise<void>;
}

let counter = 0;

/**
 * One notification for the item, as a poll writes it: the log row and its deliveries in one
 * transaction, with the payload's every field (the database refuses any other shape, and a
 * target other than the item's: db/migrations/036). `payload` replaces the change's fields.
 */
export function writeNotification(db: Db, accountId: number, itemId: number, payload: Record<string, unknown> = {}): Promise<number> {
  return db.transaction(async (trx) => {
    const item: { website: string; event: string; region: string } = await trx('watchlist_items').where({ id: itemId }).first('website', 'event', 'region');
    const ids = await appendWithDeliveries(trx, [
      {
        accountId,
        itemId,
        kind: 'notification',
        dedupeKey: `test:${process.pid}:${++counter}:${Math.random()}`,
        payload: {
          item_id: itemId,
          change_type: 'stock_increase',
          platform: item.website,
          event: item.event,
          region: item.region,
          section: 'Floor A',
          currency: null,
          before: { stock: 1, min_price: null, avg_price: null },
          after: { stock: 5, min_price: null, avg_price: null },
          snapshot_id: counter,
          detected_at: new Date().toISOString(),
          ...payload,
        },
      },
    ]);
    return ids[0]!;
  });
}

export function useWebhookStack(opts: WebhookStackOptions = {}): WebhookStack {
  const stack = {} as WebhookStack;
  let scratch: ScratchDatabase;
  let workers: Workers;
  let dispatcher: Dispatcher;
  let closeClient: () => Promise<void>;
  beforeAll(async () => {
    scratch = await createScratchDatabase('tm_webhooks', databaseUrl());
    stack.db = createDb({ connectionString: scratch.url, poolMax: 5 });
    stack.gateway = await startTestGateway({ env: { DATABASE_URL: scratch.url, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } });
    stack.taskQueue = uniqueTaskQueue('webhooks');
    const log = createLogger(process.env.TEST_LOG_LEVEL ?? 'warn');
    const attempts = (stack.attempts = createDeliveryAttempts({
      db: stack.db,
      box: new SecretBox(TEST_WEBHOOK_KEY),
      log,
      allowPrivateNetworks: true,
      scheduleMs: opts.scheduleMs ?? [300, 600, 1_200, 2_400, 4_800],
      timeoutMs: opts.timeoutMs,
      perEndpointConcurrency: opts.perEndpointConcurrency ?? 4,
    }));
    const activities = createWebhookActivities(stack.db, attempts, { roundMaxMs: opts.roundMaxMs });
    workers = await startWorkers({
      connection: { address: temporalAddress() },
      namespace: TEST_NAMESPACE,
      queues: [{ taskQueue: stack.taskQueue, workflowsPath: WORKFLOWS_PATH, activities, workflowBundle: await cachedBundle(WORKFLOWS_PATH) }],
      log,
      shutdownGraceMs: 1_000,
    });
    const temporal = await connectTemporal({ address: temporalAddress(), namespace: TEST_NAMESPACE });
    stack.client = temporal.client;
    closeClient = temporal.close;
    // Workflow ids name webhook ids and every file shares the run's namespace.
    await stack.db.raw(`ALTER SEQUENCE webhooks_id_seq RESTART WITH ${1 + Math.floor(Math.random() * 2 ** 40)}`);
    const after = opts.afterDispatchAttempt;
    const dispatcherAttempts: DeliveryAttempts = after
      ? { perEndpointConcurrency: attempts.perEndpointConcurrency, slotFreeInMs: attempts.slotFreeInMs, attempt: async (id) => attempts.attempt(id).then(async (o) => (await after(id), o)) }
      : attempts;
    dispatcher = startDispatcher({ db: stack.db, connectionString: scratch.url, client: stack.client, attempts: dispatcherAttempts, taskQueue: stack.taskQueue, log });
    stack.notify = (accountId, itemId, payload = {}) => writeNotification(stack.db, accountId, itemId, payload);
  }, 120_000);
  afterAll(async () => {
    await dispatcher?.stop();
    await workers?.stop();
    await closeClient?.();
    await stack.gateway?.close();
    await stack.db?.destroy();
    await scratch?.drop();
  });
  return stack;
}
