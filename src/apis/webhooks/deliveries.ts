// Reading and re-sending an account's webhook deliveries: the list (newest first, by id
// cursor), a ping enqueued by POST /webhooks/{id}/test and a manual retry, which puts the same
// message (same webhook-id, same body) through a new delivery run.
//
// Tests are free, so they are bounded (issue 38): a webhook has at most
// TEST_DELIVERIES_PENDING_MAX pings pending at once (in their retry schedule, or parked), a new
// test or a retry of a ping past that is refused, and an account that is not served is refused
// a test outright: nothing would be sent to it, and its ping would only wait, parked.
import type { Knex } from 'knex';
import { z } from 'zod';
import type { Db } from '../../../db/connection.ts';
import { DELIVERIES_CHANNEL, enqueuePing } from '../../webhooks/outbox.ts';

export const DELIVERIES_PAGE_DEFAULT = 20;
export const DELIVERIES_PAGE_MAX = 100;

/**
 * Test pings one webhook may have pending at once (their retry schedule running, or parked).
 * One is what a test needs; three lets a customer fix an endpoint and test again, twice, while
 * the first pings still wait for their retries (which deliver them once the endpoint works).
 */
export const TEST_DELIVERIES_PENDING_MAX = 3;

/** Why a test (or a ping's retry) was not enqueued. */
export type TestRefusal = { refused: 'not_served' } | { refused: 'too_many_pending'; pending: number[] };

const timestamp = z.iso.datetime();

export const attemptSchema = z.object({
  attempted_at: timestamp,
  status_code: z.number().int().nullable().meta({ description: 'The endpoint\'s status; null when no answer came' }),
  error: z.string().nullable().meta({ description: 'Why no answer came (timeout, connection refused, address refused); null with a status' }),
  latency_ms: z.number().int(),
});

export const deliverySchema = z
  .object({
    id: z.number().int(),
    webhook_id: z.number().int(),
    notification_id: z.number().int().nullable().meta({ description: 'The stream message delivered; null for a ping' }),
    type: z
      .enum(['notification', 'target_retired', 'platform_incident', 'ping'])
      .meta({ description: "The message's kind: a notification, its event's retirement, its platform's incident (failing or recovered), or a test ping" }),
    message_id: z.string().meta({ description: 'The `webhook-id` header: the same on every attempt and on a retry' }),
    state: z.enum(['pending', 'delivered', 'failed']),
    failure_reason: z.string().nullable(),
    next_attempt_at: timestamp.nullable(),
    created_at: timestamp,
    attempts: z.array(attemptSchema).meta({ description: 'Oldest first' }),
  })
  .meta({ id: 'WebhookDelivery' });

export const deliveryPageSchema = z
  .object({
    data: z.array(deliverySchema),
    next_before: z.number().int().nullable().meta({ description: 'Pass as `before` for the next (older) page; null on the last page' }),
  })
  .meta({ id: 'WebhookDeliveryPage' });

export const deliveriesQuery = z.strictObject({
  limit: z
    .string()
    .regex(/^[0-9]{1,3}$/, 'must be an integer')
    .transform(Number)
    .refine((n) => n >= 1 && n <= DELIVERIES_PAGE_MAX, `must be from 1 to ${DELIVERIES_PAGE_MAX}`)
    .optional()
    .meta({ description: `Deliveries per page, 1..${DELIVERIES_PAGE_MAX} (default ${DELIVERIES_PAGE_DEFAULT})` }),
  before: z
    .string()
    .regex(/^[1-9][0-9]{0,15}$/, 'must be a delivery id')
    .transform(Number)
    .optional()
    .meta({ description: 'Only deliveries older than this id (the previous page\'s next_before)' }),
});

export const deliveryParams = z.object({
  id: z.string().regex(/^[1-9][0-9]{0,15}$/).meta({ description: 'Webhook id' }),
  delivery_id: z.string().regex(/^[1-9][0-9]{0,15}$/).meta({ description: 'Delivery id' }),
});

export type Delivery = z.output<typeof deliverySchema>;
type Row = Record<string, unknown>;

const iso = (v: unknown) => (v == null ? null : (v as Date).toISOString());

export class DeliveryStore {
  constructor(private readonly db: Db) {}

  private async render(rows: Row[]): Promise<Delivery[]> {
    const ids = rows.map((r) => r.id as string);
    const attempts: Row[] = ids.length ? await this.db('webhook_attempts').whereIn('delivery_id', ids).orderBy('id') : [];
    return rows.map((r) => ({
      id: Number(r.id),
      webhook_id: Number(r.webhook_id),
      notification_id: r.notification_id == null ? null : Number(r.notification_id),
      type: r.type as Delivery['type'],
      message_id: r.message_id as string,
      state: r.state as Delivery['state'],
      failure_reason: r.failure_reason as string | null,
      next_attempt_at: iso(r.next_attempt_at),
      created_at: iso(r.created_at)!,
      attempts: attempts
        .filter((a) => a.delivery_id === r.id)
        .map((a) => ({
          attempted_at: iso(a.attempted_at)!,
          status_code: a.status_code as number | null,
          error: a.error as string | null,
          latency_ms: a.latency_ms as number,
        })),
    }));
  }

  async page(accountId: number, webhookId: number, limit: number, before?: number): Promise<{ data: Delivery[]; next_before: number | null }> {
    const q = this.db('webhook_deliveries').where({ account_id: accountId, webhook_id: String(webhookId) });
    if (before !== undefined) q.andWhere('id', '<', before);
    const rows: Row[] = await q.orderBy('id', 'desc').limit(limit + 1);
    const data = await this.render(rows.slice(0, limit));
    return { data, next_before: rows.length > limit ? data.at(-1)!.id : null };
  }

  async get(accountId: number, webhookId: number, id: number): Promise<Delivery | null> {
    const row = await this.db('webhook_deliveries').where({ id: String(id), account_id: accountId, webhook_id: String(webhookId) }).first();
    return row ? (await this.render([row]))[0]! : null;
  }

  /**
   * Enqueues a ping to the webhook (POST /webhooks/{id}/test), unless the account is not served
   * (as the service last acted on it: the state a delivery's attempt parks on) or the webhook
   * has TEST_DELIVERIES_PENDING_MAX pings pending already. Returns the delivery id or the refusal.
   */
  async ping(accountId: number, webhookId: number): Promise<{ id: number } | TestRefusal> {
    return this.db.transaction(async (trx) => {
      const state = await trx('account_service').where({ account_id: accountId }).first('served');
      if (state?.served === false) return { refused: 'not_served' as const };
      const pending = await pendingTests(trx, webhookId);
      if (pending.length >= TEST_DELIVERIES_PENDING_MAX) return { refused: 'too_many_pending' as const, pending };
      return { id: await enqueuePing(trx, accountId, webhookId) };
    });
  }

  /**
   * Whether the delivery still waits for its first attempt: pending, not parked (an attempt that
   * found its account not served parks it and records none) and no attempt recorded.
   */
  async awaitingFirstAttempt(id: number): Promise<boolean> {
    const row = await this.db('webhook_deliveries as d')
      .where('d.id', String(id))
      .first('d.state', 'd.parked_at', this.db.raw('EXISTS (SELECT 1 FROM webhook_attempts a WHERE a.delivery_id = d.id) AS attempted'));
    return row !== undefined && row.state === 'pending' && row.parked_at === null && !row.attempted;
  }

  /**
   * Sends the delivery again (requeueDelivery). A delivery still pending is left to its run; a
   * ping is refused while its webhook has TEST_DELIVERIES_PENDING_MAX pending. Null: no such delivery.
   */
  async retry(accountId: number, webhookId: number, id: number): Promise<'pending' | 'retried' | TestRefusal | null> {
    return this.db.transaction(async (trx) => {
      const where = { id: String(id), account_id: accountId, webhook_id: String(webhookId) };
      const row = await trx('webhook_deliveries').where(where).first('type', 'state');
      if (row?.type === 'ping' && row.state !== 'pending') {
        const pending = await pendingTests(trx, webhookId);
        if (pending.length >= TEST_DELIVERIES_PENDING_MAX) return { refused: 'too_many_pending' as const, pending };
      }
      return requeueDelivery(trx, where);
    });
  }
}

/**
 * The webhook's pending pings, oldest first, under a lock that serialises the writers of its
 * pings (a test, a ping's retry) until `trx` ends, so two tests at once cannot both pass the
 * bound. Only those writers take it: the dispatcher and retry rounds never wait on it.
 * webhook_deliveries_pending_tests (migration 034) holds exactly these rows.
 */
async function pendingTests(trx: Knex.Transaction, webhookId: number): Promise<number[]> {
  await trx.raw("SELECT pg_advisory_xact_lock(hashtext('webhook-tests'), hashtext(?))", [String(webhookId)]);
  const rows: { id: string }[] = await trx('webhook_deliveries').where({ webhook_id: String(webhookId), type: 'ping', state: 'pending' }).orderBy('id').select('id');
  return rows.map((r) => Number(r.id));
}

/**
 * Puts a finished delivery back to pending, in the outbox with its schedule from the start (the
 * same message: same webhook-id, same body; `generation` counts the manual retries), and wakes
 * the dispatcher, which makes its first attempt again. Used by the API's retry and by
 * `npm run ops -- webhooks:retry`.
 */
export async function requeueDelivery(trx: Knex.Transaction, where: Record<string, unknown>): Promise<'pending' | 'retried' | null> {
  const row = await trx('webhook_deliveries').where(where).forUpdate().first('id', 'state');
  if (!row) return null;
  if (row.state === 'pending') return 'pending';
  await trx('webhook_deliveries')
    .where({ id: row.id })
    .update({
      state: 'pending',
      failure_reason: null,
      attempt_count: 0,
      next_attempt_at: trx.raw('statement_timestamp()'),
      dispatched: false,
      generation: trx.raw('generation + 1'),
      updated_at: trx.raw('statement_timestamp()'),
    });
  await trx.raw('SELECT pg_notify(?, ?)', [DELIVERIES_CHANNEL, '']);
  return 'retried';
}
