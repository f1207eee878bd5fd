// Webhook retention: finished deliveries (and their attempts) older than the retention are
// pruned, in batches; recent ones and pending ones of any age stay. A deleted webhook goes once
// it is past the retention and has no delivery left; a live one, or one with deliveries, stays.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { pruneTable } from '../../src/retention/rule.ts';
import { deletedWebhooksRule, webhookDeliveriesRule } from '../../src/retention/webhooks.ts';
import { databaseUrl } from '../support/harness.ts';

let scratch: ScratchDatabase;
let db: Db;

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_retention_webhooks', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 2 });
});

afterAll(async () => {
  await db?.destroy();
  await scratch?.drop();
});

const DAY = 86_400_000;
let n = 0;

async function newWebhook(accountId: number, deletedDaysAgo: number | null = null): Promise<number> {
  const deletedAt = deletedDaysAgo === null ? null : new Date(Date.now() - deletedDaysAgo * DAY);
  const [hook] = await db('webhooks')
    .insert({ account_id: accountId, kind: 'discord', url_sealed: 'sealed', active: deletedAt === null, created_at: new Date(), updated_at: new Date(), deleted: deletedAt !== null, deleted_at: deletedAt })
    .returning('id');
  return Number(hook.id);
}

async function addDeliveries(webhookId: number, accountId: number, count: number, state: string, ageDays: number): Promise<number[]> {
  const updatedAt = new Date(Date.now() - ageDays * DAY);
  const rows = Array.from({ length: count }, () => ({
    webhook_id: webhookId,
    account_id: accountId,
    type: 'ping',
    message_id: `msg_retention_${++n}`,
    body: '{}',
    state,
    dispatched: true,
    created_at: updatedAt,
    updated_at: updatedAt,
  }));
  const ids: { id: string }[] = await db('webhook_deliveries').insert(rows).returning('id');
  await db('webhook_attempts').insert(ids.map(({ id }) => ({ delivery_id: id, attempted_at: updatedAt, status_code: 204, latency_ms: 3 })));
  return ids.map((r) => Number(r.id));
}

describe('webhook delivery retention', () => {
  it('prunes finished deliveries past the retention with their attempts, across batches; keeps recent and pending ones', async () => {
    const [account] = await db('accounts').insert({ name: 'retention' }).returning('id');
    const hook = await newWebhook(account.id);
    // More old ones than one batch (1,000), so the loop is exercised.
    await addDeliveries(hook, account.id, 1_200, 'delivered', 31);
    await addDeliveries(hook, account.id, 50, 'failed', 45);
    const keptRecent = await addDeliveries(hook, account.id, 20, 'delivered', 29);
    const keptPending = await addDeliveries(hook, account.id, 10, 'pending', 90);

    const rule = webhookDeliveriesRule({ retentionDays: 30 });
    expect(await pruneTable(db, rule)).toMatchObject({ deleted: 1_250, done: true, batches: 2 });
    const left = (await db('webhook_deliveries').where({ webhook_id: hook }).select('id')).map((r) => Number(r.id)).sort((a, b) => a - b);
    expect(left).toEqual([...keptRecent, ...keptPending].sort((a, b) => a - b));
    expect(Number((await db('webhook_attempts').count({ n: '*' }).first())!.n)).toBe(30);
    expect((await pruneTable(db, rule)).deleted).toBe(0);
  });
});

describe('deleted webhook retention', () => {
  it('removes a webhook deleted longer ago than the retention once none of its deliveries is left', async () => {
    const [account] = await db('accounts').insert({ name: 'deleted-webhooks' }).returning('id');
    const gone = await newWebhook(account.id, 31);
    const live = await newWebhook(account.id);
    const recentlyDeleted = await newWebhook(account.id, 29);
    const withPending = await newWebhook(account.id, 60);
    await addDeliveries(withPending, account.id, 1, 'pending', 60);
    const withRecentDelivery = await newWebhook(account.id, 40);
    await addDeliveries(withRecentDelivery, account.id, 1, 'failed', 10);
    const withOldDelivery = await newWebhook(account.id, 40);
    await addDeliveries(withOldDelivery, account.id, 1, 'failed', 35);

    const hooks = deletedWebhooksRule({ retentionDays: 30 });
    expect((await pruneTable(db, hooks)).deleted).toBe(1);
    const left = async () => (await db('webhooks').where({ account_id: account.id }).orderBy('id').select('id')).map((r) => Number(r.id));
    expect(await left()).toEqual([live, recentlyDeleted, withPending, withRecentDelivery, withOldDelivery]);
    expect(gone).toBeLessThan(live);

    // The deliveries' rule runs first in the housekeeping: once the old delivery is gone, so is its webhook.
    await pruneTable(db, webhookDeliveriesRule({ retentionDays: 30 }));
    expect((await pruneTable(db, hooks)).deleted).toBe(1);
    expect(await left()).toEqual([live, recentlyDeleted, withPending, withRecentDelivery]);
  });
});
