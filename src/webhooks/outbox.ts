// The webhook outbox: a delivery row for every new notification (a change, or its event's
// retirement: `target_retired`) of an item that names an active webhook, written inside the
// transaction that appends the notification (so the notification and its deliveries commit
// together or not at all), then a NOTIFY that wakes the dispatcher (src/webhooks/dispatcher.ts). Also the ping that POST /webhooks/{id}/test sends.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { appendToLog, streamMessage, type LogEntry, type LogKind } from '../notifications/log.ts';

export const DELIVERIES_CHANNEL = 'webhook_deliveries';

/** The `webhook-id` of a new message: unique, and the same on every attempt of it. */
export function newMessageId(): string {
  return `msg_${randomBytes(16).toString('base64url')}`;
}

/** Log kinds delivered to the item's webhook: a change, and the retirement of its event. */
export const DELIVERED_KINDS = ['notification', 'target_retired'] as const satisfies readonly LogKind[];

/** The body every webhook kind is built from (Standard Webhooks' `{type, timestamp, data}`). */
export interface DeliveryBody {
  type: (typeof DELIVERED_KINDS)[number] | 'ping';
  timestamp: string;
  data: Record<string, unknown>;
}

/**
 * Enqueues the deliveries of the notifications `ids` (just appended in `trx`): one per
 * notification whose item names an active webhook of the same account. Returns how many.
 */
export async function enqueueDeliveries(trx: Knex.Transaction, ids: readonly number[]): Promise<number> {
  if (ids.length === 0) return 0;
  const rows: { id: string; account_id: string; kind: LogKind; payload: Record<string, unknown>; created_at: Date; webhook_id: string }[] = await trx(
    'notifications as n',
  )
    .join('watchlist_items as i', 'i.id', 'n.item_id')
    .join('webhooks as w', function () {
      this.on('w.id', '=', 'i.webhook_setting_id').andOn('w.account_id', '=', 'n.account_id');
    })
    .whereIn('n.id', ids)
    .whereIn('n.kind', DELIVERED_KINDS)
    .where({ 'w.active': true, 'w.deleted': false, 'i.deleted': false })
    .orderBy('n.id')
    .select('n.id', 'n.account_id', 'n.kind', 'n.payload', 'n.created_at', 'w.id as webhook_id');
  if (rows.length === 0) return 0;
  await trx('webhook_deliveries').insert(
    rows.map((r) => {
      const body: DeliveryBody = {
        type: r.kind as DeliveryBody['type'],
        timestamp: r.created_at.toISOString(),
        // Exactly the message the stream sends for this row.
        data: streamMessage({ id: Number(r.id), kind: r.kind, payload: r.payload }),
      };
      return {
        webhook_id: r.webhook_id,
        account_id: r.account_id,
        notification_id: r.id,
        type: body.type,
        message_id: newMessageId(),
        body: JSON.stringify(body),
      };
    }),
  );
  await trx.raw('SELECT pg_notify(?, ?)', [DELIVERIES_CHANNEL, '']);
  return rows.length;
}

/**
 * Appends notifications to the log and enqueues their deliveries, in the caller's transaction:
 * how every writer of notifications (recordPoll, the webhooks bench) writes them, so none can
 * append one and forget its deliveries. Returns the ids appended.
 */
export async function appendWithDeliveries(trx: Knex.Transaction, entries: readonly LogEntry[]): Promise<number[]> {
  const ids = await appendToLog(trx, entries);
  await enqueueDeliveries(trx, ids);
  return ids;
}

/** Enqueues a `ping` to one webhook; returns the delivery id. */
export async function enqueuePing(trx: Knex.Transaction, accountId: number, webhookId: number): Promise<number> {
  const body: DeliveryBody = { type: 'ping', timestamp: new Date().toISOString(), data: { webhook_id: webhookId } };
  const [row] = await trx('webhook_deliveries')
    .insert({ webhook_id: webhookId, account_id: accountId, notification_id: null, type: 'ping', message_id: newMessageId(), body: JSON.stringify(body) })
    .returning('id');
  await trx.raw('SELECT pg_notify(?, ?)', [DELIVERIES_CHANNEL, '']);
  return Number(row.id);
}
