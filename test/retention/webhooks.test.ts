// Webhook retention: finished deliveries (and their attempts) older than the retention are
// pruned, in batches; recent ones and pending ones in their retry schedule stay. A parked one
// (its account not served) older than the retry schedule's whole span is failed as expired, as
// its account's resume would fail it, and then ages out like any failed one (issue 38). A
// deleted webhook goes once it is past the retention and has no delivery left; a live one, or
// one with deliveries, stays.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { retentionRules } from '../../src/retention/rules.ts';
import { pruneTable } from '../../src/retention/rule.ts';
import { deletedWebhooksRule, webhookDeliveriesRule } from '../../src/retention/webhooks.ts';
import { EXPIRED_WHILE_PARKED } from '../../src/webhooks/parking.ts';
import { DEFAULT_SCHEDULE_MS, retryScheduleSpanMs } from '../../src/webhooks/retry-schedule.ts';
import { databaseUrl, testConfig } from '../support/harness.ts';

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
const HOUR = 3_600_000;
/** The production schedule's whole span: about 38 h. */
const SPAN_MS = retryScheduleSpanMs(DEFAULT_SCHEDULE_MS);
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

    const rule = webhookDeliveriesRule({ retentionDays: 30, parkedExpireAfterMs: SPAN_MS });
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
    await pruneTable(db, webhookDeliveriesRule({ retentionDays: 30, parkedExpireAfterMs: SPAN_MS }));
    expect((await pruneTable(db, hooks)).deleted).toBe(1);
    expect(await left()).toEqual([live, recentlyDeleted, withPending, withRecentDelivery]);
  });
});

type Kind = 'parked' | 'retrying' | 'delivered' | 'failed';

/** Deliveries as the service leaves them: parked (pending, no next attempt), in the schedule, or finished. */
async function addKinds(webhookId: number, accountId: number, rows: readonly { kind: Kind; ageMs: number }[]): Promise<number[]> {
  if (rows.length === 0) return [];
  const now = Date.now();
  const ids: { id: string }[] = await db('webhook_deliveries')
    .insert(
      rows.map(({ kind, ageMs }) => {
        const at = new Date(now - ageMs);
        const pending = kind === 'parked' || kind === 'retrying';
        return {
          webhook_id: webhookId,
          account_id: accountId,
          type: 'ping',
          message_id: `msg_retention_${++n}`,
          body: '{}',
          state: pending ? 'pending' : kind,
          dispatched: true,
          parked_at: kind === 'parked' ? new Date(now - Math.min(ageMs, HOUR)) : null,
          next_attempt_at: kind === 'retrying' ? new Date(now + HOUR) : null,
          created_at: at,
          updated_at: kind === 'parked' ? new Date(now - Math.min(ageMs, HOUR)) : at,
        };
      }),
    )
    .returning('id');
  return ids.map((r) => Number(r.id));
}

const states = async (ids: readonly number[]) =>
  (await db('webhook_deliveries').whereIn('id', ids).orderBy('id').select('id', 'state', 'failure_reason', 'parked_at')).map((r) => ({
    id: Number(r.id),
    state: r.state as string,
    failure_reason: r.failure_reason as string | null,
    parked: r.parked_at !== null,
  }));

describe('parked delivery retention', () => {
  it('the housekeeping’s rule takes the span from WEBHOOK_RETRY_SCHEDULE_MS', async () => {
    const [account] = await db('accounts').insert({ name: 'parked-config' }).returning('id');
    const hook = await newWebhook(account.id);
    // 1 s and 2 s, jittered at their longest: 3.6 s.
    const rule = retentionRules(testConfig({ WEBHOOK_RETRY_SCHEDULE_MS: '1000,2000' })).find((r) => r.table === 'webhook_deliveries')!;
    const [stale] = await addKinds(hook, account.id, [{ kind: 'parked', ageMs: 10_000 }]);
    const [fresh] = await addKinds(hook, account.id, [{ kind: 'parked', ageMs: 1_000 }]);
    expect(await pruneTable(db, rule)).toMatchObject({ ended: 1 });
    expect((await states([stale!, fresh!])).map((d) => d.state)).toEqual(['failed', 'pending']);
  });

  it('fails as expired the parked deliveries older than the retry schedule’s span, in batches; then they age out as failed ones', async () => {
    const [account] = await db('accounts').insert({ name: 'parked' }).returning('id');
    const hook = await newWebhook(account.id);
    // A lapsed account's backlog: more old parked ones than one batch.
    const old = await addKinds(hook, account.id, Array.from({ length: 25 }, () => ({ kind: 'parked' as const, ageMs: SPAN_MS + HOUR })));
    const young = await addKinds(hook, account.id, [{ kind: 'parked', ageMs: SPAN_MS - HOUR }]);
    // In its schedule (a served account's): its schedule ends it, not this rule.
    const retrying = await addKinds(hook, account.id, [{ kind: 'retrying', ageMs: SPAN_MS + HOUR }]);

    const rule = webhookDeliveriesRule({ retentionDays: 30, parkedExpireAfterMs: SPAN_MS });
    expect(await pruneTable(db, rule, { batchSize: 10 })).toMatchObject({ ended: 25, deleted: 0, done: true, batches: 3 });
    for (const d of await states(old)) expect(d).toMatchObject({ state: 'failed', failure_reason: EXPIRED_WHILE_PARKED, parked: false });
    expect(await states(young)).toEqual([{ id: young[0], state: 'pending', failure_reason: null, parked: true }]);
    expect(await states(retrying)).toEqual([{ id: retrying[0], state: 'pending', failure_reason: null, parked: false }]);
    expect(await pruneTable(db, rule)).toMatchObject({ ended: 0, deleted: 0, done: true });

    // Ended now: shown in the deliveries list for the retention, then pruned like any failed one.
    await db('webhook_deliveries').whereIn('id', old).update({ updated_at: new Date(Date.now() - 31 * DAY) });
    expect(await pruneTable(db, rule)).toMatchObject({ ended: 0, deleted: 25, done: true });
    expect(await states(old)).toEqual([]);
  });

  it('for any set of deliveries: exactly the parked ones past the span end, nothing else changes', async () => {
    const [account] = await db('accounts').insert({ name: 'parked-property' }).returning('id');
    const rowArb = fc.record({
      kind: fc.constantFrom<Kind>('parked', 'retrying', 'delivered', 'failed'),
      // Whole hours on either side of the span (about 38.05 h), never on it.
      ageMs: fc.integer({ min: 0, max: 100 }).map((h) => h * HOUR),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(rowArb, { maxLength: 30 }), fc.integer({ min: 1, max: 8 }), async (rows, batchSize) => {
        const hook = await newWebhook(account.id);
        const ids = await addKinds(hook, account.id, rows);
        const result = await pruneTable(db, webhookDeliveriesRule({ retentionDays: 30, parkedExpireAfterMs: SPAN_MS }), { batchSize });
        const expired = (r: (typeof rows)[number]) => r.kind === 'parked' && r.ageMs > SPAN_MS;
        expect(result).toMatchObject({ done: true, deleted: 0, ended: rows.filter(expired).length });
        expect(await states(ids)).toEqual(
          rows.map((r, i) => ({
            id: ids[i],
            state: expired(r) ? 'failed' : r.kind === 'parked' || r.kind === 'retrying' ? 'pending' : r.kind,
            failure_reason: expired(r) ? EXPIRED_WHILE_PARKED : null,
            parked: r.kind === 'parked' && !expired(r),
          })),
        );
      }),
      { numRuns: 40 },
    );
  });
});
