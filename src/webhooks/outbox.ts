// The webhook outbox: a delivery row for every new notification (a change, its event's
// retirement: `target_retired`, its platform's incident) of an item that names an active
// webhook, written inside the transaction that appends the notification (so the notification
// and its deliveries commit together or not at all), then a NOTIFY that wakes the dispatcher
// (src/webhooks/dispatcher.ts). Also the ping that POST /webhooks/{id}/test sends.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { commitWithLastStatement, LAST_STATEMENT_VALUES } from '../../db/last-statement.ts';
import type { LogEntry, LogKind } from '../notifications/log.ts';

export const DELIVERIES_CHANNEL = 'webhook_deliveries';

/** The `webhook-id` of a new message: unique, and the same on every attempt of it. */
export function newMessageId(): string {
  return `msg_${randomBytes(16).toString('base64url')}`;
}

/** Log kinds delivered to the item's webhook: a change, the retirement of its event, its platform's incident. */
export const DELIVERED_KINDS = ['notification', 'target_retired', 'platform_incident'] as const satisfies readonly LogKind[];

/** The body every webhook kind is built from (Standard Webhooks' `{type, timestamp, data}`). */
export interface DeliveryBody {
  type: (typeof DELIVERED_KINDS)[number] | 'ping';
  timestamp: string;
  data: Record<string, unknown>;
}

/**
 * Appends the monitors' notifications to the log with their deliveries, in the caller's
 * transaction, through the database's monitor_append_notifications() (db/migrations/036): the
 * scrape worker's role writes neither table itself. The function takes each recipient from its
 * item, refuses a payload that is not the kind's exact shape (or names another target than its
 * item watches), adds the customer-facing `message` of a retirement or an incident, and builds
 * each delivery's body ({type, timestamp, data}: data is the stream's message for the row) from
 * the notification it stored. Every writer of the monitors' kinds (recordPoll, retirement,
 * incidents, the webhooks bench) comes through here, so none can append one and forget its
 * deliveries. Returns the ids appended (entries whose dedupe key was used already are skipped).
 */
export async function appendWithDeliveries(trx: Knex.Transaction, entries: readonly LogEntry[]): Promise<number[]> {
  if (entries.length === 0) return [];
  const { rows } = (await trx.raw('SELECT id FROM monitor_append_notifications(?::jsonb) AS id', [JSON.stringify(monitorEntries(entries))])) as { rows: { id: string }[] };
  return rows.map((r) => Number(r.id));
}

/**
 * appendWithDeliveries as the transaction's last statement, sent with its commit
 * (db/last-statement.ts): the log's writers' lock, which every writer of the service queues on,
 * is held for the server's time only. Nothing may follow it in the transaction; with no entries
 * it does nothing and the caller's transaction commits as usual.
 */
export async function appendWithDeliveriesAndCommit(trx: Knex.Transaction, entries: readonly LogEntry[]): Promise<number[]> {
  if (entries.length === 0) return [];
  const rows = await commitWithLastStatement<{ id: string }>(trx, `SELECT id FROM monitor_append_notifications(${LAST_STATEMENT_VALUES}) AS id`, monitorEntries(entries));
  return rows.map((r) => Number(r.id));
}

/** The function's argument: only the monitors' kinds. */
function monitorEntries(entries: readonly LogEntry[]): Record<string, unknown>[] {
  for (const e of entries) {
    if (!(DELIVERED_KINDS as readonly LogKind[]).includes(e.kind)) throw new Error(`appendWithDeliveries: ${e.kind} is not a monitor's kind (the gateway appends it: appendToLog)`);
  }
  return entries.map((e) => ({ account_id: e.accountId, item_id: e.itemId, kind: e.kind, dedupe_key: e.dedupeKey, payload: e.payload }));
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
