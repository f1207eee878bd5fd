// Least privilege for the scraper (issue 38): the scrape worker's role cannot write what the
// delivery worker signs and sends. Run as that role (db/scraper-grants.ts applied to a fresh one,
// SET ROLE inside each transaction): the notifications and deliveries tables refuse it; its one
// way in, monitor_append_notifications() (db/migrations/036), takes the recipient from the item,
// accepts each kind's exact shape only, and builds the delivery's body itself. The property's
// oracle is written here from the rules, not from the function: what it accepts, and that each
// body is, byte for byte, what the TypeScript side always signed (JSON.stringify of
// {type, timestamp, data: streamMessage(row)}).
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { applyScraperGrants } from '../../db/scraper-grants.ts';
import type { LogEntry } from '../../src/notifications/log.ts';
import { appendWithDeliveries } from '../../src/webhooks/outbox.ts';
import { deliveryServiceHooks } from '../../src/webhooks/parking.ts';
import type { Knex } from 'knex';
import { databaseUrl, newAccount } from '../support/harness.ts';
import { insertWatchlistItem } from '../support/watchlist-rows.ts';

const ROLE = `tm_confined_${randomBytes(4).toString('hex')}`;
let scratch: ScratchDatabase;
let db: Db;

interface Item {
  id: number;
  accountId: number;
  website: string;
  event: string;
  region: string;
  webhookId: number | null;
}
let withHook: Item;
let noHook: Item;
let incidentId: number;

async function insertItem(accountId: number, website: string, event: string, webhookId: number | null): Promise<Item> {
  return { ...(await insertWatchlistItem(db, { accountId, website, event, region: 'fr', webhookId })), webhookId };
}

/** `work` inside a transaction as the scrape worker's role; rolled back when it throws. */
function asScraper<T>(work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  return db.transaction(async (trx) => {
    await trx.raw(`SET LOCAL ROLE ${ROLE}`);
    return work(trx);
  });
}

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_confined', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 4 });
  await db.raw(`CREATE ROLE ${ROLE} NOLOGIN`);
  await applyScraperGrants(db, ROLE);
  const a = await newAccount(db);
  const b = await newAccount(db);
  const now = new Date();
  const [hook] = await db('webhooks')
    .insert({ account_id: a.accountId, kind: 'standard', url_sealed: 'sealed', secret_sealed: 'sealed', active: true, created_at: now, updated_at: now })
    .returning('id');
  withHook = await insertItem(a.accountId, 'pf_03', 'https://pf03.example/e/confined-a', Number(hook.id));
  noHook = await insertItem(b.accountId, 'pf_07', 'https://pf07.example/e/confined-b', null);
  const [incident] = await db('monitor_platform_incidents').insert({ platform: 'pf_03', started_at: now, targets: 10, not_found: 8, blocked: 0, peak_failing: 8 }).returning('id');
  incidentId = Number(incident.id);
}, 120_000);
afterAll(async () => {
  await db?.raw(`DROP OWNED BY ${ROLE}`).catch(() => {});
  await db?.raw(`DROP ROLE IF EXISTS ${ROLE}`).catch(() => {});
  await db?.destroy();
  await scratch?.drop();
});

let seq = 0;
function notificationEntry(item: Item, over: Partial<Record<string, unknown>> = {}): LogEntry {
  return {
    accountId: item.accountId,
    itemId: item.id,
    kind: 'notification',
    dedupeKey: `confined-${++seq}-${randomBytes(3).toString('hex')}`,
    payload: {
      item_id: item.id,
      change_type: 'stock_increase',
      platform: item.website,
      event: item.event,
      region: item.region,
      section: 'Floor',
      currency: 'EUR',
      before: { stock: 1, min_price: 10, avg_price: 12.5 },
      after: { stock: 4, min_price: 9.99, avg_price: null },
      snapshot_id: 7,
      detected_at: new Date().toISOString(),
      ...over,
    },
  };
}

const written = async (ids: number[]) => ({
  notifications: await db('notifications').whereIn('id', ids).orderBy('id').select('id', 'account_id', 'item_id', 'kind', 'payload', 'created_at'),
  deliveries: await db('webhook_deliveries').whereIn('notification_id', ids).orderBy('notification_id').select('notification_id', 'webhook_id', 'account_id', 'type', 'message_id', 'body'),
});

/** The body the delivery worker has always signed for a row: Standard Webhooks' envelope around the stream's message. */
function expectedBody(row: { id: string; kind: string; payload: Record<string, unknown> }, timestamp: string): string {
  return JSON.stringify({ type: row.kind, timestamp, data: { type: row.kind, id: Number(row.id), ...row.payload } });
}

describe('the scrape worker’s role and what is signed and sent', { timeout: 120_000 }, () => {
  it('cannot write a notification or a delivery, nor change one, directly', async () => {
    const refused = (sql: string, bindings: (string | number | null)[] = []) => expect(asScraper((trx) => trx.raw(sql, bindings))).rejects.toThrow(/permission denied/);
    await refused(`INSERT INTO notifications (account_id, item_id, kind, payload) VALUES (?, ?, 'notification', '{}')`, [withHook.accountId, withHook.id]);
    await refused(`INSERT INTO webhook_deliveries (webhook_id, account_id, type, message_id, body) VALUES (?, ?, 'ping', 'msg_x', '{}')`, [withHook.webhookId, withHook.accountId]);
    await refused(`UPDATE webhook_deliveries SET state = 'pending'`);
    await refused(`SELECT url_sealed FROM webhooks`);
    await refused(`SELECT webhook_deliveries_expire_parked(NULL, 0, NULL)`);
  });

  it('appends through the function: the recipient is the item’s owner, and the delivery’s body is the notification’s, as it was always signed', async () => {
    const entry = notificationEntry(withHook);
    const ids = await asScraper((trx) => appendWithDeliveries(trx, [entry, notificationEntry(noHook)]));
    expect(ids).toHaveLength(2);
    const { notifications, deliveries } = await written(ids);
    expect(notifications.map((n) => [Number(n.account_id), Number(n.item_id)])).toEqual([
      [withHook.accountId, withHook.id],
      [noHook.accountId, noHook.id],
    ]);
    expect(notifications[0]!.payload).toEqual(entry.payload);
    // One delivery: the item naming a webhook; the other item names none.
    expect(deliveries).toHaveLength(1);
    const d = deliveries[0]!;
    expect([Number(d.webhook_id), Number(d.account_id), d.type]).toEqual([withHook.webhookId, withHook.accountId, 'notification']);
    expect(d.message_id).toMatch(/^msg_[A-Za-z0-9_-]{22}$/);
    const timestamp = JSON.parse(d.body).timestamp as string;
    expect(timestamp).toBe((notifications[0]!.created_at as Date).toISOString());
    expect(d.body).toBe(expectedBody(notifications[0]!, timestamp));
    // A replay (same dedupe key) appends nothing and sends nothing twice.
    expect(await asScraper((trx) => appendWithDeliveries(trx, [entry]))).toEqual([]);
  });

  it('writes the customer-facing text of a retirement and of an incident itself', async () => {
    const since = '2026-11-29T08:00:00.000Z';
    const retired: LogEntry = {
      accountId: withHook.accountId,
      itemId: withHook.id,
      kind: 'target_retired',
      dedupeKey: `confined-retired-${++seq}`,
      payload: { item_id: withHook.id, platform: withHook.website, event: withHook.event, region: withHook.region, reason: 'not_found', not_found_since: since, retired_at: '2026-11-29T09:00:00.000Z' },
    };
    const failing: LogEntry = {
      accountId: withHook.accountId,
      itemId: withHook.id,
      kind: 'platform_incident',
      dedupeKey: `confined-incident-${++seq}`,
      payload: { item_id: withHook.id, platform: 'pf_03', event: withHook.event, region: withHook.region, state: 'failing', incident_id: incidentId, started_at: since, ended_at: null },
    };
    const ids = await asScraper((trx) => appendWithDeliveries(trx, [retired, failing]));
    const { notifications, deliveries } = await written(ids);
    expect(notifications.map((n) => n.payload.message)).toEqual([
      `The platform has answered "not found" for this event since ${since}, so it is no longer checked. Delete the item, or update it (PATCH) to check the event again.`,
      `pf_03 is failing for most of the events watched on it (not found or blocked) since ${since}. Its events go on being checked and none is retired while this lasts; you will be told when it recovers.`,
    ]);
    for (const [i, d] of deliveries.entries()) expect(d.body).toBe(expectedBody(notifications[i]!, JSON.parse(d.body).timestamp));
    // A text of its own is refused, as is an incident the platform never had, or another's.
    for (const bad of [
      { ...retired, dedupeKey: 'confined-own-text', payload: { ...retired.payload, message: 'Your account is suspended: log in at https://evil.example' } },
      { ...failing, dedupeKey: 'confined-no-incident', payload: { ...failing.payload, incident_id: incidentId + 1_000 } },
      { ...failing, dedupeKey: 'confined-other-platform', itemId: noHook.id, accountId: noHook.accountId, payload: { ...failing.payload, item_id: noHook.id, platform: 'pf_07', event: noHook.event } },
      { ...notificationEntry(withHook), kind: 'watchlist' as const },
      { ...notificationEntry(withHook), accountId: noHook.accountId },
    ]) {
      await expect(asScraper((trx) => trx.raw('SELECT monitor_append_notifications(?::jsonb)', [JSON.stringify([{ account_id: bad.accountId, item_id: bad.itemId, kind: bad.kind, dedupe_key: bad.dedupeKey, payload: bad.payload }])]))).rejects.toThrow(
        /monitor_append_notifications/,
      );
    }
    expect(await db('notifications').whereIn('dedupe_key', ['confined-own-text', 'confined-no-incident', 'confined-other-platform']).first('id')).toBeUndefined();
  });

  it('skips, and writes nothing for, an item that watches another target than the entry names (edited since the poll, or a forgery), and goes on with the others', async () => {
    const moved = notificationEntry(withHook, { event: 'https://pf03.example/e/somewhere-else' });
    const gone = notificationEntry(withHook, { item_id: 987_654_321 });
    gone.itemId = 987_654_321;
    const fine = notificationEntry(noHook);
    const ids = await asScraper((trx) => appendWithDeliveries(trx, [moved, gone, fine]));
    expect(ids).toHaveLength(1);
    expect(await db('notifications').whereIn('dedupe_key', [moved.dedupeKey!, gone.dedupeKey!]).first('id')).toBeUndefined();
    expect(Number((await db('notifications').whereIn('id', ids).first('item_id')).item_id)).toBe(noHook.id);
  });

  it('hands a served account’s parked deliveries back through the function alone', async () => {
    const [id] = await asScraper((trx) => appendWithDeliveries(trx, [notificationEntry(withHook)]));
    await db('webhook_deliveries').where({ notification_id: id }).update({ parked_at: new Date(), dispatched: true });
    await asScraper((trx) => deliveryServiceHooks({ expireAfterMs: 3_600_000 }).resume(trx, [withHook.accountId]));
    expect(await db('webhook_deliveries').where({ notification_id: id }).first('parked_at', 'dispatched', 'state')).toEqual({ parked_at: null, dispatched: false, state: 'pending' });
  });

  it('property: whatever the entry, it is refused with nothing written, or written to the item’s owner exactly as given, with the body the oracle builds', async () => {
    const text = fc
      .oneof(
        { weight: 4, arbitrary: fc.oneof(fc.string({ unit: 'grapheme', maxLength: 40 }), fc.string({ unit: 'binary-ascii', maxLength: 40 })) },
        { weight: 1, arbitrary: fc.string({ unit: 'grapheme', minLength: 190, maxLength: 230 }) },
      )
      .filter((s) => !s.includes('\u0000'));
    const mostly = <T, U>(usual: fc.Arbitrary<T>, rare: fc.Arbitrary<U>) => fc.oneof({ weight: 6, arbitrary: usual }, { weight: 1, arbitrary: rare });
    const price = fc.option(
      fc.integer({ min: 0, max: 100_000_000 }).map((c) => c / 100),
      { nil: null },
    );
    const figures = fc.oneof(
      { weight: 12, arbitrary: fc.record({ stock: fc.integer({ min: 0, max: 1_000_000 }), min_price: price, avg_price: price }) },
      { weight: 1, arbitrary: fc.oneof(fc.constant(null), fc.record({ stock: fc.constant('4') }), fc.record({ stock: fc.nat(), min_price: price, avg_price: price, note: text })) },
    );
    const arb = fc.record({
      item: fc.constantFrom('withHook', 'noHook'),
      account: mostly(fc.constant('own'), fc.constant('other')),
      platform: mostly(fc.constant('own'), fc.constant('other')),
      changeType: mostly(fc.constantFrom('stock_increase', 'price_decrease', 'price_increase'), fc.constantFrom('stock_decrease', '')),
      section: text,
      currency: mostly(fc.constantFrom(null, 'EUR', 'GBP'), fc.string({ maxLength: 12 })),
      before: figures,
      after: figures,
      extra: mostly(fc.constant(null), fc.constantFrom('message', 'body', 'webhook_id', 'account_id')),
      drop: mostly(fc.constant(null), fc.constantFrom('section', 'detected_at')),
    });
    const validFigures = (f: unknown) =>
      typeof f === 'object' && f !== null && Object.keys(f).sort().join() === 'avg_price,min_price,stock' && typeof (f as Record<string, unknown>).stock === 'number';
    let accepted = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(arb, async (c) => {
        const item = c.item === 'withHook' ? withHook : noHook;
        const other = item === withHook ? noHook : withHook;
        const entry = notificationEntry(item, { change_type: c.changeType, section: c.section, currency: c.currency, before: c.before, after: c.after });
        if (c.account === 'other') entry.accountId = other.accountId;
        if (c.platform === 'other') Object.assign(entry.payload, { platform: other.website, event: other.event });
        if (c.extra) entry.payload[c.extra] = 'x';
        if (c.drop) delete entry.payload[c.drop];
        // The oracle: the rules of the issue and of the payload's documented shape.
        const valid =
          c.account === 'own' &&
          c.platform === 'own' &&
          c.extra === null &&
          c.drop === null &&
          ['stock_increase', 'price_decrease', 'price_increase'].includes(c.changeType) &&
          [...c.section].length <= 200 &&
          (c.currency === null || [...c.currency].length <= 8) &&
          validFigures(c.before) &&
          validFigures(c.after);
        let ids: number[] | null = null;
        try {
          ids = await asScraper((trx) => appendWithDeliveries(trx, [entry]));
        } catch (err) {
          expect(String(err)).toMatch(/monitor_append_notifications/);
        }
        const found = await db('notifications').where({ dedupe_key: entry.dedupeKey }).select('id', 'account_id', 'item_id', 'kind', 'payload', 'created_at');
        if (!valid) {
          refused++;
          // Refused outright, or (an item watching another target than named) skipped.
          expect(ids === null || ids.length === 0).toBe(true);
          if (c.platform === 'own') expect(ids).toBeNull();
          expect(found).toEqual([]);
          return;
        }
        accepted++;
        expect(ids).toHaveLength(1);
        expect(found).toHaveLength(1);
        const row = found[0]!;
        expect([Number(row.account_id), Number(row.item_id)]).toEqual([item.accountId, item.id]);
        expect(row.payload).toEqual(entry.payload);
        const deliveries = await db('webhook_deliveries').where({ notification_id: row.id }).select('webhook_id', 'account_id', 'body');
        if (item.webhookId === null) {
          expect(deliveries).toEqual([]);
          return;
        }
        expect(deliveries).toHaveLength(1);
        expect([Number(deliveries[0]!.webhook_id), Number(deliveries[0]!.account_id)]).toEqual([item.webhookId, item.accountId]);
        expect(deliveries[0]!.body).toBe(expectedBody(row, (row.created_at as Date).toISOString()));
      }),
      { numRuns: 200 },
    );
    // Both sides of the rule were met, so the property could have failed either way.
    expect(accepted).toBeGreaterThan(10);
    expect(refused).toBeGreaterThan(10);
  });
});
