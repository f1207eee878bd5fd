// A worker SIGKILLed in the middle of a delivery (issue 15), with the production worker entry
// (temporal/worker-main.ts, which also runs the dispatcher) in a child process: the receiver
// holds the first request open, the worker dies while it waits, and the delivery is sent again
// by the restarted worker, under the same webhook-id, and verified by the reference
// implementation. A webhook's deliveries are at-least-once, never lost.
import { afterAll, describe, expect, it } from 'vitest';
import { eventually, newAccount, TEST_WEBHOOK_KEY } from '../../support/harness.ts';
import { uniqueTaskQueue } from '../../support/temporal.ts';
import { startReceiver, type Receiver } from '../../support/webhook-receiver.ts';
import { writeNotification } from '../../support/webhook-stack.ts';
import { useWorkerStack, type WorkerStack } from '../../support/worker-stack.ts';
import { createItem } from '../watchlist/helpers.ts';
import { createWebhook, OPEN_ENV } from './helpers.ts';

const stack = useWorkerStack<WorkerStack>({
  database: 'tm_webhook_crash',
  env: { SCRAPE_TASK_QUEUE: uniqueTaskQueue('scrapes'), MONITOR_TASK_QUEUE: uniqueTaskQueue('monitors'), WEBHOOK_TASK_QUEUE: uniqueTaskQueue('webhooks') },
  gatewayEnv: OPEN_ENV,
  worker: 'child-process',
  queues: (config) => [config.WEBHOOK_TASK_QUEUE],
  childEnv: ({ config }) => ({
    ...OPEN_ENV,
    WEBHOOK_TASK_QUEUE: config.WEBHOOK_TASK_QUEUE,
    WEBHOOK_SECRET_KEY: TEST_WEBHOOK_KEY,
    WEBHOOK_RETRY_SCHEDULE_MS: '500,1000,2000,4000,8000',
  }),
  build: async (s) => {
    // Workflow ids name item and webhook ids, and every file shares the run's namespace.
    for (const seq of ['watchlist_items_id_seq', 'webhooks_id_seq']) {
      await s.db.raw(`ALTER SEQUENCE ${seq} RESTART WITH ${1 + Math.floor(Math.random() * 2 ** 40)}`);
    }
    return s;
  },
});

let receiver: Receiver | undefined;
afterAll(async () => {
  await receiver?.close();
});

describe('a worker killed mid-delivery', { timeout: 150_000 }, () => {
  it('the message is still delivered once the worker is back, under the same webhook-id', async () => {
    const acct = await newAccount(stack.db, { plan: 'enterprise' });
    const rx = (receiver = await startReceiver());
    const hook = await createWebhook(stack.gateway.url, acct.key, { url: rx.url });
    rx.secrets = [hook.secret as string];
    const item = await createItem(stack.gateway.url, acct.key, { webhook_setting_id: hook.id });
    // The first request is held open well past the moment the worker dies.
    rx.script = [{ status: 204, delayMs: 60_000 }];

    const nid = await writeNotification(stack.db, acct.accountId, item.id);
    await eventually(async () => (rx.received.length >= 1 ? true : undefined), 30_000);
    await stack.restartWorker({ downMs: 500 });

    const delivery = await eventually(async () => {
      const d = await stack.db('webhook_deliveries').where({ notification_id: nid }).first();
      return d?.state === 'delivered' ? d : undefined;
    }, 90_000);
    expect(rx.received.length).toBeGreaterThanOrEqual(2);
    // Every copy is the same message: one webhook-id, one body, each verified.
    expect(new Set(rx.received.map((r) => r.headers['webhook-id']))).toEqual(new Set([delivery.message_id]));
    expect(new Set(rx.received.map((r) => r.body)).size).toBe(1);
    expect(rx.received.every((r) => r.verified[0] === true)).toBe(true);
    // One delivery row for the notification; the attempt the crash cut short left no record.
    expect(await stack.db('webhook_deliveries').where({ notification_id: nid })).toHaveLength(1);
    const attempts = await stack.db('webhook_attempts').where({ delivery_id: delivery.id });
    expect(attempts.map((a) => a.status_code)).toEqual([204]);
  });
});
