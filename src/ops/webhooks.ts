// `npm run ops -- webhooks:failed` and `webhooks:retry`: the deliveries that gave up (a
// permanent answer, the schedule spent, the webhook turned off) and sending them again. Reads
// and writes the database only; the worker's dispatcher starts the new runs.
import type { Db } from '../../db/connection.ts';
import { requeueDelivery } from '../apis/webhooks/deliveries.ts';

export interface FailedDelivery {
  delivery_id: number;
  webhook_id: number;
  account_id: number;
  type: string;
  message_id: string;
  failure_reason: string | null;
  attempts: number;
  failed_at: string;
}

/** Failed deliveries finished since `since`, newest first (at most 1000). No URL or secret. */
export async function listFailedDeliveries(db: Db, since: Date): Promise<FailedDelivery[]> {
  const rows = await db('webhook_deliveries')
    .where({ state: 'failed' })
    .andWhere('updated_at', '>=', since)
    .orderBy('id', 'desc')
    .limit(1000);
  return rows.map((r: Record<string, unknown>) => ({
    delivery_id: Number(r.id),
    webhook_id: Number(r.webhook_id),
    account_id: Number(r.account_id),
    type: r.type as string,
    message_id: r.message_id as string,
    failure_reason: r.failure_reason as string | null,
    attempts: r.attempt_count as number,
    failed_at: (r.updated_at as Date).toISOString(),
  }));
}

export async function retryDelivery(db: Db, deliveryId: number): Promise<{ delivery_id: number; result: 'retried' | 'pending' | 'not_found' }> {
  const result = await db.transaction((trx) => requeueDelivery(trx, { id: String(deliveryId) }));
  return { delivery_id: deliveryId, result: result ?? 'not_found' };
}
