// Billing retention: settled ledger rows go after the retention, reserved ones never, and with
// Stripe a charged row not yet reported stays; a past period's counter goes unless it is still
// current or has an open reservation; a sent or expired meter batch goes once no ledger row names
// it, a pending one never; Stripe event ids go after theirs.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { creditLedgerRule, meterBatchesRule, usageCountersRule } from '../../src/retention/billing.ts';
import { pruneTable } from '../../src/retention/rule.ts';
import { stripeEventsRule } from '../../src/retention/stripe-events.ts';
import { databaseUrl } from '../support/harness.ts';

let scratch: ScratchDatabase;
let db: Db;

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_retention_billing', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 2 });
});

afterAll(async () => {
  await db?.destroy();
  await scratch?.drop();
});

const DAY = 86_400_000;
const MINUTE = 60_000;
const daysAgo = (days: number) => new Date(Date.now() - days * DAY);
let seq = 0;

async function newAccount(customer: boolean): Promise<number> {
  const [row] = await db('accounts').insert({ name: `billing-${++seq}`, customer_id: customer ? `cus_retention_${seq}` : null }).returning('id');
  return Number(row.id);
}

async function newBatch(accountId: number, state: 'pending' | 'sent' | 'expired', ageDays: number): Promise<number> {
  const at = daysAgo(ageDays);
  const [row] = await db('meter_batches')
    .insert({
      account_id: accountId,
      customer_id: 'cus_retention',
      period_start: at,
      credits: 1,
      request_count: 1,
      identifier: `tm_retention_${++seq}`,
      event_timestamp: at,
      first_captured_at: at,
      last_captured_at: at,
      state,
      created_at: at,
      sent_at: state === 'sent' ? at : null,
    })
    .returning('id');
  return Number(row.id);
}

type LedgerState = 'reserved' | 'charged' | 'released';

interface LedgerRow {
  account: 0 | 1;
  state: LedgerState;
  ageDays: number;
  batched: boolean;
}

const RETENTION = 400;

describe('credit_ledger retention', () => {
  it('removes exactly the settled rows past the retention, keeping reserved rows and, with Stripe, unreported charges', async () => {
    const withCustomer = await newAccount(true);
    const withoutCustomer = await newAccount(false);
    const accounts = [withCustomer, withoutCustomer] as const;
    const batch = await newBatch(withCustomer, 'sent', 10);
    const rowArb: fc.Arbitrary<LedgerRow> = fc.record({
      account: fc.constantFrom(0 as const, 1 as const),
      state: fc.constantFrom<LedgerState>('reserved', 'charged', 'released'),
      // Whole days around the retention; a row settles 5 minutes after it is created.
      ageDays: fc.oneof(fc.integer({ min: 0, max: 800 }), fc.constantFrom(RETENTION - 1, RETENTION, RETENTION + 1)),
      batched: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(rowArb, { maxLength: 30 }), fc.boolean(), fc.integer({ min: 1, max: 8 }), async (rows, keepUnreported, batchSize) => {
        await db('credit_ledger').delete();
        const ids = rows.map(() => `req_${++seq}`);
        if (rows.length) {
          await db('credit_ledger').insert(
            rows.map((r, i) => {
              const created = daysAgo(r.ageDays);
              return {
                request_id: ids[i],
                account_id: accounts[r.account],
                key_id: 'key',
                period_start: created,
                operation: 'op',
                credits: 1,
                state: r.state,
                created_at: created,
                settled_at: r.state === 'reserved' ? null : new Date(created.getTime() + 5 * MINUTE),
                meter_batch: r.state === 'charged' && r.batched ? batch : null,
              };
            }),
          );
        }
        // The ground truth: settled more than RETENTION days ago (so older than RETENTION whole
        // days, the 5 minutes to settle included), and with Stripe not a charge the meter has yet to record.
        const goes = (r: LedgerRow) =>
          r.state !== 'reserved' && r.ageDays > RETENTION && !(keepUnreported && r.state === 'charged' && !r.batched && r.account === 0);
        const expected = ids.filter((_, i) => !goes(rows[i]!)).sort();

        const result = await pruneTable(db, creditLedgerRule({ retentionDays: RETENTION, keepUnreported }), { batchSize });
        expect(result.done).toBe(true);
        expect(result.deleted).toBe(rows.length - expected.length);
        expect((await db('credit_ledger').select('request_id')).map((r) => r.request_id as string).sort()).toEqual(expected);
      }),
      { numRuns: 60 },
    );
  });
});

describe('usage_counters retention', () => {
  it("removes a period's counter past the retention unless it is the current period or has an open reservation", async () => {
    const account = await newAccount(true);
    // A long period: current although it started before the retention.
    const current = daysAgo(RETENTION + 100);
    await db('subscriptions').insert({ id: `sub_retention_${account}`, account_id: account, plan_id: 'pro', status: 'active', current_period_start: current, current_period_end: daysAgo(-30) });
    const old = daysAgo(RETENTION + 60);
    const oldWithReservation = daysAgo(RETENTION + 30);
    const recent = daysAgo(RETENTION - 30);
    await db('usage_counters').insert([current, old, oldWithReservation, recent].map((period_start) => ({ account_id: account, period_start, used: 5 })));
    await db('credit_ledger').insert({ request_id: `req_open_${account}`, account_id: account, key_id: 'key', period_start: oldWithReservation, operation: 'op', credits: 1, state: 'reserved' });

    expect((await pruneTable(db, usageCountersRule({ retentionDays: RETENTION }), { batchSize: 1 })).deleted).toBe(1);
    const left = (await db('usage_counters').where({ account_id: account }).orderBy('period_start').select('period_start')).map((r) => (r.period_start as Date).getTime());
    expect(left).toEqual([current, oldWithReservation, recent].map((d) => d.getTime()).sort((a, b) => a - b));
  });
});

describe('meter_batches retention', () => {
  it('removes sent and expired batches past the retention that no ledger row names; never a pending one', async () => {
    await db('credit_ledger').delete();
    await db('meter_batches').delete();
    const account = await newAccount(true);
    const oldSent = await newBatch(account, 'sent', RETENTION + 5);
    const oldExpired = await newBatch(account, 'expired', RETENTION + 5);
    const oldPending = await newBatch(account, 'pending', RETENTION + 5);
    const oldNamed = await newBatch(account, 'sent', RETENTION + 5);
    const recentSent = await newBatch(account, 'sent', RETENTION - 5);
    await db('credit_ledger').insert({
      request_id: `req_named_${account}`,
      account_id: account,
      key_id: 'key',
      period_start: daysAgo(RETENTION + 6),
      operation: 'op',
      credits: 1,
      state: 'charged',
      created_at: daysAgo(RETENTION - 1),
      settled_at: daysAgo(RETENTION - 1),
      meter_batch: oldNamed,
    });

    const result = await pruneTable(db, meterBatchesRule({ retentionDays: RETENTION }), { batchSize: 1 });
    expect(result).toMatchObject({ deleted: 2, done: true });
    const left = (await db('meter_batches').orderBy('id').select('id')).map((r) => Number(r.id));
    expect(left).toEqual([oldPending, oldNamed, recentSent]);
    expect([oldSent, oldExpired].some((id) => left.includes(id))).toBe(false);
  });
});

describe('stripe_events retention', () => {
  it('removes event ids received longer ago than the retention, in batches', async () => {
    const at = (days: number) => daysAgo(days);
    await db('stripe_events').insert([
      ...Array.from({ length: 25 }, (_, i) => ({ id: `evt_old_${i}`, type: 'customer.subscription.updated', received_at: at(31 + i) })),
      ...Array.from({ length: 5 }, (_, i) => ({ id: `evt_new_${i}`, type: 'customer.subscription.updated', received_at: at(29 - i) })),
    ]);
    const result = await pruneTable(db, stripeEventsRule({ retentionDays: 30 }), { batchSize: 10 });
    expect(result).toMatchObject({ deleted: 25, done: true, batches: 3 });
    expect((await db('stripe_events').orderBy('id').select('id')).map((r) => r.id)).toEqual(['evt_new_0', 'evt_new_1', 'evt_new_2', 'evt_new_3', 'evt_new_4']);
  });
});
