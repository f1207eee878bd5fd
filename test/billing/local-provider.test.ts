// The PostgreSQL billing provider against the real database: reservations settle once
// (capture and release are idempotent and exclusive), the orphan sweeper returns credits of
// crashed requests exactly once, and an ended billing period rolls forward on the next paid
// request without losing the anchor day.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { setUsage } from '../../src/accounts/operations.ts';
import { LocalBillingProvider } from '../../src/billing/local-provider.ts';
import { createPool, type Pool } from '../../db/pool.ts';
import { addMonths, periodContaining } from '../../src/billing/periods.ts';
import { databaseUrl, newAccount, startTestGateway, type TestAccount, type TestGateway } from '../support/harness.ts';
import { clientFor, GATEWAY_ENV, gatewayCode, ledgerRows, usedCredits, type Client, type LedgerRow } from '../support/gateway-helpers.ts';

/** The provider is driven directly here and holds reservations open on purpose: read at once. */
const HELD = { settle: false } as const;

let db: Db;
let pool: Pool;
let billing: LocalBillingProvider;

beforeAll(() => {
  db = createDb({ connectionString: databaseUrl(), poolMax: 5 });
  pool = createPool({ connectionString: databaseUrl(), max: 5 });
  billing = new LocalBillingProvider(db, pool);
});
afterAll(async () => {
  await billing.flush();
  await pool.end();
  await db.destroy();
});

async function reserve(a: TestAccount, credits: number): Promise<string> {
  const requestId = randomUUID();
  const admission = await billing.admit({
    accountId: a.accountId,
    keyId: a.keyId,
    requestId,
    operation: 'test',
    credits,
    rate: { subject: `key:${a.keyId}`, windowStart: new Date(), limit: 1_000_000 },
  });
  expect(admission).toMatchObject({ rateLimited: false, authorization: { ok: true } });
  return requestId;
}

async function row(requestId: string): Promise<LedgerRow> {
  return db('credit_ledger').where({ request_id: requestId }).first();
}

describe('settling a reservation', () => {
  it('admit reserves: used goes up at once and the ledger row is reserved', async () => {
    const a = await newAccount(db);
    const id = await reserve(a, 4);
    expect(await usedCredits(db, a.accountId, HELD)).toBe(4);
    expect(await row(id)).toMatchObject({ state: 'reserved', credits: 4, account_id: a.accountId, key_id: a.keyId, settled_at: null });
  });

  it('capture is idempotent, and a release after a capture refunds nothing', async () => {
    const a = await newAccount(db);
    const id = await reserve(a, 5);
    await billing.capture(id, 200);
    await billing.capture(id, 200);
    await billing.release(id, 500);
    expect(await usedCredits(db, a.accountId, HELD)).toBe(5);
    expect(await row(id)).toMatchObject({ state: 'charged', status_code: 200 });
  });

  it('release returns the credits exactly once, even when called concurrently', async () => {
    const a = await newAccount(db);
    await setUsage(db, a.accountId, 100);
    const id = await reserve(a, 5);
    expect(await usedCredits(db, a.accountId, HELD)).toBe(105);
    await Promise.all(Array.from({ length: 8 }, () => billing.release(id, 503)));
    expect(await usedCredits(db, a.accountId, HELD)).toBe(100);
    await billing.capture(id, 200); // too late: it stays released
    expect(await row(id)).toMatchObject({ state: 'released', status_code: 503 });
    expect(await usedCredits(db, a.accountId, HELD)).toBe(100);
  });

  it('settling an unknown request id changes nothing', async () => {
    const a = await newAccount(db);
    await reserve(a, 2);
    await billing.release(randomUUID(), 500);
    await billing.capture(randomUUID(), 200);
    expect(await usedCredits(db, a.accountId, HELD)).toBe(2);
  });
});

describe('orphan sweeper', () => {
  const TIMEOUT_MS = 10 * 60_000;

  it('releases a reservation older than the timeout, returns its credits once, and leaves fresh ones alone', async () => {
    const a = await newAccount(db);
    await setUsage(db, a.accountId, 50);
    const orphan = await reserve(a, 7);
    const fresh = await reserve(a, 3);
    const charged = await reserve(a, 2);
    await billing.capture(charged, 200);
    // The process that made `orphan` crashed an hour ago.
    await db('credit_ledger').where({ request_id: orphan }).update({ created_at: db.raw("now() - interval '1 hour'") });
    await db('credit_ledger').where({ request_id: charged }).update({ created_at: db.raw("now() - interval '1 hour'") });
    expect(await usedCredits(db, a.accountId, HELD)).toBe(62);

    const released = await billing.releaseOrphans(TIMEOUT_MS);
    expect(released).toBeGreaterThanOrEqual(1);
    expect(await row(orphan)).toMatchObject({ state: 'released' });
    expect((await row(orphan)).settled_at).toBeInstanceOf(Date);
    expect(await row(fresh)).toMatchObject({ state: 'reserved' });
    expect(await row(charged)).toMatchObject({ state: 'charged' });
    expect(await usedCredits(db, a.accountId, HELD)).toBe(55);

    // Once only.
    await billing.releaseOrphans(TIMEOUT_MS);
    expect(await usedCredits(db, a.accountId, HELD)).toBe(55);
    expect(await row(orphan)).toMatchObject({ state: 'released' });
    // And the request that finally completes cannot charge it after all.
    await billing.capture(orphan, 200);
    expect(await row(orphan)).toMatchObject({ state: 'released' });
    expect(await usedCredits(db, a.accountId, HELD)).toBe(55);
  });

  it('two sweepers running at once release each orphan once', async () => {
    const a = await newAccount(db);
    const ids = [];
    for (let i = 0; i < 6; i++) ids.push(await reserve(a, 2));
    await db('credit_ledger').whereIn('request_id', ids).update({ created_at: db.raw("now() - interval '2 hours'") });
    expect(await usedCredits(db, a.accountId, HELD)).toBe(12);
    await Promise.all([billing.releaseOrphans(TIMEOUT_MS), billing.releaseOrphans(TIMEOUT_MS), billing.releaseOrphans(TIMEOUT_MS)]);
    expect(await usedCredits(db, a.accountId, HELD)).toBe(0);
    const rows = await ledgerRows(db, a.accountId, HELD);
    expect(rows.every((r) => r.state === 'released')).toBe(true);
  });

  it('credits of an orphan in an earlier period go back to that period', async () => {
    const a = await newAccount(db);
    const id = await reserve(a, 9);
    const { period_start } = await row(id);
    // The period moved on since.
    const sub = await db('subscriptions').where({ account_id: a.accountId }).first();
    await db('subscriptions').where({ account_id: a.accountId }).update({
      current_period_start: sub.current_period_end,
      current_period_end: addMonths(sub.current_period_end, 1),
    });
    await db('credit_ledger').where({ request_id: id }).update({ created_at: db.raw("now() - interval '1 hour'") });
    await billing.releaseOrphans(TIMEOUT_MS);
    const counter = await db('usage_counters').where({ account_id: a.accountId, period_start }).first('used');
    expect(counter.used).toBe(0);
  });
});

describe('period roll-forward on the next paid request', () => {
  let gw: TestGateway;
  let api: Client;

  beforeAll(async () => {
    gw = await startTestGateway({ env: GATEWAY_ENV });
    api = clientFor(gw.url);
  });
  afterAll(async () => {
    await gw.close();
  });

  async function endPeriod(a: TestAccount, start: Date, end: Date): Promise<void> {
    await gw.db('subscriptions').where({ account_id: a.accountId }).update({ current_period_start: start, current_period_end: end });
  }

  it('a subscription whose period ended gets the period containing now; the old period’s usage stays where it was', async () => {
    const a = await newAccount(gw.db, { plan: 'free' });
    const now = new Date();
    const oldStart = addMonths(now, -2);
    const oldEnd = addMonths(now, -1);
    await endPeriod(a, oldStart, oldEnd);
    await gw.db('usage_counters').insert({ account_id: a.accountId, period_start: oldStart, used: 1000 }); // at the cap back then

    const r = await api('GET', '/events/platforms', { key: a.key });
    expect(r.status).toBe(200);
    const sub = await gw.db('subscriptions').where({ account_id: a.accountId }).first();
    const expected = periodContaining(oldStart, new Date());
    expect(sub.current_period_start.toISOString()).toBe(expected.start.toISOString());
    expect(sub.current_period_end.toISOString()).toBe(expected.end.toISOString());
    expect(sub.current_period_start.getTime()).toBeGreaterThanOrEqual(oldEnd.getTime());
    expect(sub.status).toBe('active');
    expect(await usedCredits(gw.db, a.accountId)).toBe(5);
    expect((await gw.db('usage_counters').where({ account_id: a.accountId, period_start: oldStart }).first('used')).used).toBe(1000);
    expect((await ledgerRows(gw.db, a.accountId))[0]!.period_start.toISOString()).toBe(expected.start.toISOString());
    // The usage report agrees.
    const usage = await api('GET', '/usage', { key: a.key });
    expect(usage.body.credits.used).toBe(5);
    expect(usage.body.period.start).toBe(expected.start.toISOString());
  });

  it('a Jan 31 anchor stored as its clamped [Feb 28, Mar 31) period rolls to a period ending on the 30th/31st, not the 28th', async () => {
    const a = await newAccount(gw.db);
    const anchor = new Date('2025-01-31T10:00:00.000Z');
    await endPeriod(a, addMonths(anchor, 1), addMonths(anchor, 2));
    expect((await api('GET', '/svc/data/ping', { key: a.key })).status).toBe(200);
    const sub = await gw.db('subscriptions').where({ account_id: a.accountId }).first();
    const truth = periodContaining(anchor, new Date());
    expect([sub.current_period_start.toISOString(), sub.current_period_end.toISOString()]).toEqual([
      truth.start.toISOString(),
      truth.end.toISOString(),
    ]);
  });

  it('20 parallel paid requests on an ended period roll it once and are all charged to the new period', async () => {
    const a = await newAccount(gw.db);
    const now = new Date();
    await endPeriod(a, addMonths(now, -1), new Date(now.getTime() - 1000));
    const replies = await Promise.all(Array.from({ length: 20 }, () => api('GET', '/svc/data/ping', { key: a.key })));
    expect(replies.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(await usedCredits(gw.db, a.accountId)).toBe(20);
    const rows = await ledgerRows(gw.db, a.accountId);
    expect(new Set(rows.map((r) => r.period_start.toISOString())).size).toBe(1);
    expect(await gw.db('usage_counters').where({ account_id: a.accountId }).count({ n: '*' }).first()).toEqual({ n: 1 });
  });

  it('cancel_at_period_end: the ended period cancels the subscription and paid requests get 402 no_subscription', async () => {
    const a = await newAccount(gw.db);
    const now = new Date();
    await endPeriod(a, addMonths(now, -1), new Date(now.getTime() - 1000));
    await gw.db('subscriptions').where({ account_id: a.accountId }).update({ cancel_at_period_end: true });
    const r = await api('GET', '/svc/data/ping', { key: a.key });
    expect(r.status).toBe(402);
    expect(gatewayCode(r)).toBe('no_subscription');
    const sub = await gw.db('subscriptions').where({ account_id: a.accountId }).first();
    expect(sub.status).toBe('canceled');
    expect(await ledgerRows(gw.db, a.accountId)).toEqual([]);
    expect((await api('GET', '/watchlist', { key: a.key })).status).toBe(200);
  });
});
