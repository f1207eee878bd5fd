// The meter sync run by run (src/billing/stripe/meter-sync.ts), against its own scratch database
// and stripe-mock behind the recording proxy, without Temporal (meter-sync-worker.test.ts runs
// it on the Schedule, with a worker killed mid-send and Stripe down):
//   - one event per account and billing period, its identifier derived from the rows it covers
//     (the SQL and TypeScript derivations agree), its timestamp inside that period;
//   - released and still-reserved credits are not reported; a reservation captured after later
//     rows is reported by the next run, not skipped;
//   - 500 and 429 stop the run with the batch still pending (Retry-After kept) and the resend
//     carries the same identifier; a 4xx leaves that batch pending while others go;
//   - credits past Stripe's 35 days are kept as expired, never sent;
//   - property: any sequence of reserve/capture/release over two periods ends, after a sync, with
//     the proxy's total per customer and period equal to the captured credits;
//   - billing:sync-status, in code and on the command line.
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import type Stripe from 'stripe';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../../db/connection.ts';
import { createPool, type Pool } from '../../../db/pool.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../../db/scratch.ts';
import { LocalBillingProvider } from '../../../src/billing/local-provider.ts';
import { createStripeClient } from '../../../src/billing/stripe/client.ts';
import {
  meterIdentifier,
  meterSyncStatus,
  meterTimestamp,
  MeterSyncRetryable,
  syncMeter,
  type MeterSyncDeps,
} from '../../../src/billing/stripe/meter-sync.ts';
import { createLogger } from '../../../src/logger.ts';
import { databaseUrl, newAccount, runTs } from '../../support/harness.ts';
import { startStripeProxy, type MeterEvent, type StripeProxy } from '../../support/stripe-mock.ts';

const EVENT = 'api_credits';
const DAY = 86_400_000;
// Two adjacent periods in whole seconds, both within Stripe's 35 days.
const NOW = Math.floor(Date.now() / 1000) * 1000;
const P1 = { start: new Date(NOW - 20 * DAY), end: new Date(NOW - 5 * DAY) };
const P2 = { start: P1.end, end: new Date(NOW + 25 * DAY) };
type Period = typeof P1;

let scratch: ScratchDatabase;
let db: Db;
let pool: Pool;
let billing: LocalBillingProvider;
let proxy: StripeProxy;
let stripe: Stripe;
let deps: MeterSyncDeps;

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_meter_sync', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 5 });
  pool = createPool({ connectionString: scratch.url, max: 5 });
  billing = new LocalBillingProvider(db, pool);
  proxy = await startStripeProxy();
  stripe = createStripeClient({ STRIPE_SECRET_KEY: 'sk_test_meter', STRIPE_API_BASE: proxy.url }, { timeoutMs: 10_000 });
  deps = { db, stripe, eventName: EVENT, log: createLogger('silent') };
}, 60_000);

afterAll(async () => {
  await billing?.flush();
  await pool?.end();
  await db?.destroy();
  await proxy?.close();
  await scratch?.drop();
});

beforeEach(() => proxy.failNext(0, 500));

interface Acct {
  accountId: number;
  customerId: string;
}

async function account(): Promise<Acct> {
  const a = await newAccount(db, { plan: 'pro' });
  const row = await db('accounts').where({ id: a.accountId }).first('customer_id');
  return { accountId: a.accountId, customerId: row.customer_id };
}

/** A reservation as gateway_admit writes it, in `period`, used at `at` (default: inside it). */
async function reserve(a: Acct, period: Period, credits: number, at = new Date(period.start.getTime() + 60_000)): Promise<string> {
  const requestId = randomUUID();
  await db('credit_ledger').insert({
    request_id: requestId,
    account_id: a.accountId,
    key_id: 'k_test',
    period_start: period.start,
    operation: 'ping',
    credits,
    state: 'reserved',
    created_at: at,
  });
  return requestId;
}

async function capture(requestId: string): Promise<void> {
  await billing.capture(requestId, 200);
}

async function release(requestId: string): Promise<void> {
  await billing.release(requestId, 503);
}

const eventsOf = (a: Acct): MeterEvent[] => proxy.meterEvents.filter((e) => e.customer === a.customerId);
const sendsOf = (a: Acct) => proxy.requests.filter((r) => r.path === '/v1/billing/meter_events' && r.form['payload[stripe_customer_id]'] === a.customerId);
const inside = (p: Period, ts: number) => ts * 1000 >= p.start.getTime() && ts * 1000 < p.end.getTime();

/** Runs the sync until nothing is left to retry (an injected fault stops a run). */
async function syncAll(): Promise<void> {
  for (let i = 0; i < 10; i++) {
    try {
      await syncMeter(deps);
      return;
    } catch (err) {
      if (!(err instanceof MeterSyncRetryable)) throw err;
    }
  }
  throw new Error('meter sync did not finish in 10 runs');
}

describe('batching and identifiers', () => {
  it('one event per account and period, identifier from the rows it covers, timestamp inside the period', async () => {
    const a = await account();
    const r1 = [await reserve(a, P1, 3), await reserve(a, P1, 2, new Date(P1.start.getTime() + 5 * DAY))];
    const r2 = [await reserve(a, P2, 7)];
    for (const r of [...r1, ...r2]) await capture(r);
    await syncAll();

    const events = eventsOf(a);
    expect(events).toHaveLength(2);
    const e1 = events.find((e) => inside(P1, e.timestamp!))!;
    const e2 = events.find((e) => inside(P2, e.timestamp!))!;
    expect(e1).toMatchObject({ eventName: EVENT, value: 5, identifier: meterIdentifier(a.accountId, P1.start, r1) });
    expect(e2).toMatchObject({ eventName: EVENT, value: 7, identifier: meterIdentifier(a.accountId, P2.start, r2) });
    // The latest use in the period, in whole seconds.
    expect(e1.timestamp).toBe((P1.start.getTime() + 5 * DAY) / 1000);
    expect(e1.identifier!.length).toBeLessThanOrEqual(100);
    const batches = await db('meter_batches').where({ account_id: a.accountId }).orderBy('id');
    expect(batches.map((b) => [b.state, Number(b.credits), b.request_count])).toEqual([
      ['sent', 5, 2],
      ['sent', 7, 1],
    ]);
    const stamped = await db('credit_ledger').where({ account_id: a.accountId }).whereNull('meter_batch');
    expect(stamped).toEqual([]);

    // Nothing new: a run sends nothing.
    const before = sendsOf(a).length;
    expect(await syncMeter(deps)).toMatchObject({ formed: 0 });
    expect(sendsOf(a).length).toBe(before);
  });

  it('the identifier depends on the rows only, not their order; the timestamp never falls before the period', () => {
    const start = new Date('2026-03-01T00:00:00Z');
    expect(meterIdentifier(1, start, ['b', 'a'])).toBe(meterIdentifier(1, start, ['a', 'b']));
    expect(meterIdentifier(1, start, ['a'])).not.toBe(meterIdentifier(1, start, ['a', 'b']));
    expect(meterIdentifier(2, start, ['a'])).not.toBe(meterIdentifier(1, start, ['a']));
    expect(meterTimestamp(new Date('2026-03-01T00:00:00.400Z'), new Date('2026-03-01T00:00:00.900Z'))).toBe(Date.parse('2026-03-01T00:00:01Z') / 1000);
    expect(meterTimestamp(start, new Date('2026-03-09T10:00:00.700Z'))).toBe(Date.parse('2026-03-09T10:00:00Z') / 1000);
  });

  it('released and reserved credits are not reported; a reservation captured late is reported by the next run', async () => {
    const a = await account();
    const early = await reserve(a, P2, 4);
    const failed = await reserve(a, P2, 100);
    const later = await reserve(a, P2, 1);
    await capture(later);
    await release(failed);
    await syncAll();
    expect(eventsOf(a).map((e) => e.value)).toEqual([1]);

    // Captured after `later` was already reported: not behind a cursor, just not yet stamped.
    await capture(early);
    await release(early);
    await syncAll();
    expect(eventsOf(a).map((e) => e.value)).toEqual([1, 4]);
    expect(proxy.meterTotal(a.customerId, EVENT)).toBe(5);
  });
});

describe('Stripe failing', () => {
  it('a 500 stops the run with the batch pending; the resend carries the same identifier, counted once', async () => {
    const a = await account();
    await capture(await reserve(a, P2, 6));
    proxy.failNext(1, 500);
    const err = await syncMeter(deps).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MeterSyncRetryable);
    const [batch] = await db('meter_batches').where({ account_id: a.accountId });
    expect(batch).toMatchObject({ state: 'pending', attempts: 1 });
    expect(batch.last_error).toMatch(/^500 /);

    await syncMeter(deps);
    const sends = sendsOf(a);
    expect(sends.map((s) => [s.status, s.form.identifier])).toEqual([
      [500, batch.identifier],
      [200, batch.identifier],
    ]);
    expect(proxy.meterTotal(a.customerId, EVENT)).toBe(6);
    expect(await db('meter_batches').where({ id: batch.id }).first()).toMatchObject({ state: 'sent', attempts: 2, last_error: null });
  });

  it('a 429 keeps its Retry-After for the retry', async () => {
    const a = await account();
    await capture(await reserve(a, P2, 2));
    proxy.failNext(1, 429, { retryAfter: 7 });
    const err = await syncMeter(deps).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MeterSyncRetryable);
    expect((err as MeterSyncRetryable).retryAfterMs).toBe(7_000);
    await syncMeter(deps);
    expect(proxy.meterTotal(a.customerId, EVENT)).toBe(2);
    expect(new Set(sendsOf(a).map((s) => s.form.identifier)).size).toBe(1);
  });

  it('a resend after a lost answer (Stripe accepted, the mark never written) is deduplicated', async () => {
    const a = await account();
    await capture(await reserve(a, P2, 9));
    await syncMeter(deps);
    // As if the worker died between Stripe's 200 and the mark.
    await db('meter_batches').where({ account_id: a.accountId }).update({ state: 'pending', sent_at: null });
    await syncMeter(deps);
    expect(sendsOf(a).filter((s) => s.status === 200)).toHaveLength(2);
    expect(proxy.meterTotal(a.customerId, EVENT)).toBe(9);
  });

  it('a 4xx for one event leaves it pending with its error while the others are sent', async () => {
    const a = await account();
    const b = await account();
    await capture(await reserve(a, P2, 3));
    await capture(await reserve(b, P2, 4));
    proxy.failNext(1, 400);
    expect(await syncMeter(deps)).toMatchObject({ formed: 2, sent: 1, refused: 1 });
    const refused = await db('meter_batches').whereIn('account_id', [a.accountId, b.accountId]).andWhere({ state: 'pending' });
    expect(refused).toHaveLength(1);
    expect(refused[0].last_error).toMatch(/^400 invalid_request_error/);
    const [status] = await meterSyncStatus(db).then((all) => all.filter((s) => s.account_id === Number(refused[0].account_id)));
    expect(status).toMatchObject({ pending_batches: 1, last_error: refused[0].last_error });
    // The next run sends it.
    await syncMeter(deps);
    expect(proxy.meterTotal(a.customerId, EVENT) + proxy.meterTotal(b.customerId, EVENT)).toBe(7);
  });

  it('credits older than Stripe takes (35 days) are kept as expired, never sent', async () => {
    const a = await account();
    const old = { start: new Date(NOW - 70 * DAY), end: new Date(NOW - 40 * DAY) };
    await capture(await reserve(a, old, 8));
    await capture(await reserve(a, P2, 1));
    await syncAll();
    expect(eventsOf(a).map((e) => e.value)).toEqual([1]);
    const batches = await db('meter_batches').where({ account_id: a.accountId }).orderBy('period_start');
    expect(batches.map((b) => [b.state, Number(b.credits)])).toEqual([
      ['expired', 8],
      ['sent', 1],
    ]);
    const [status] = (await meterSyncStatus(db, { all: true })).filter((s) => s.account_id === a.accountId);
    expect(status).toMatchObject({ unreported_credits: 0, expired_credits: 8 });
  });
});

describe('property: what Stripe totals is what was captured', () => {
  it('for any reserve/capture/release sequence over two periods, per customer and period', async () => {
    const op = fc.record({
      period: fc.constantFrom(P1, P2),
      credits: fc.integer({ min: 1, max: 10 }),
      offsetMs: fc.integer({ min: 0, max: 15 * DAY - 1 }),
      fate: fc.constantFrom('capture', 'release', 'reserved', 'capture_after_sync'),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 12 }), fc.integer({ min: 0, max: 12 }), async (ops, syncAt) => {
        const a = await account();
        const expected = new Map<Period, number>([
          [P1, 0],
          [P2, 0],
        ]);
        const late: string[] = [];
        for (const [i, o] of ops.entries()) {
          if (i === syncAt) await syncAll();
          const id = await reserve(a, o.period, o.credits, new Date(o.period.start.getTime() + o.offsetMs));
          if (o.fate === 'capture') await capture(id);
          if (o.fate === 'release') await release(id);
          if (o.fate === 'capture_after_sync') late.push(id);
          if (o.fate === 'capture' || o.fate === 'capture_after_sync') expected.set(o.period, expected.get(o.period)! + o.credits);
        }
        await syncAll();
        for (const id of late) await capture(id);
        await syncAll();

        const events = eventsOf(a);
        for (const e of events) expect(inside(P1, e.timestamp!) || inside(P2, e.timestamp!)).toBe(true);
        const got = (p: Period) => events.filter((e) => inside(p, e.timestamp!)).reduce((s, e) => s + e.value, 0);
        expect([got(P1), got(P2)]).toEqual([expected.get(P1), expected.get(P2)]);
        expect(proxy.meterTotal(a.customerId, EVENT)).toBe(expected.get(P1)! + expected.get(P2)!);
        // Each batch stays in its rows' period.
        const mixed = await db('credit_ledger as l')
          .join('meter_batches as b', 'b.id', 'l.meter_batch')
          .where('l.account_id', a.accountId)
          .andWhereRaw('l.period_start <> b.period_start')
          .count({ n: '*' })
          .first();
        expect(Number(mixed!.n)).toBe(0);
      }),
      { numRuns: 50 },
    );
  }, 120_000);
});

describe('billing:sync-status', () => {
  it('shows unreported credits, the oldest capture and the last report per account', async () => {
    const a = await account();
    await capture(await reserve(a, P2, 5));
    await syncAll();
    const second = await reserve(a, P2, 3);
    await capture(second);
    const captured = (await db('credit_ledger').where({ request_id: second }).first('settled_at')).settled_at as Date;

    const status = (await meterSyncStatus(db)).find((s) => s.account_id === a.accountId);
    expect(status).toMatchObject({ customer_id: a.customerId, unreported_credits: 3, pending_batches: 0, oldest_unreported_at: captured.toISOString(), expired_credits: 0, last_error: null });
    expect(status!.lag_seconds).toBeGreaterThanOrEqual(0);
    expect(Date.parse(status!.last_reported_at!)).toBeLessThanOrEqual(Date.now());

    const env = { ...process.env, DATABASE_URL: scratch.url, LOG_LEVEL: 'silent' };
    const cli = await runTs('src/ops/cli.ts', ['billing:sync-status'], env);
    expect(cli.code, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout).find((s: { account_id: number }) => s.account_id === a.accountId)).toEqual(
      expect.objectContaining({ unreported_credits: 3, oldest_unreported_at: captured.toISOString(), last_reported_at: status!.last_reported_at }),
    );

    // Caught up: gone from the default list, still in --all.
    await syncAll();
    expect((await meterSyncStatus(db)).find((s) => s.account_id === a.accountId)).toBeUndefined();
    const all = await runTs('src/ops/cli.ts', ['billing:sync-status', '--all'], env);
    expect(JSON.parse(all.stdout).find((s: { account_id: number }) => s.account_id === a.accountId)).toMatchObject({ unreported_credits: 0, lag_seconds: null });
  });
});
