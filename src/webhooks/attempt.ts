// One attempt of one webhook delivery: reads the delivery and its webhook, signs and sends
// (http-send.ts), records the attempt and the new state in one transaction, and says whether and
// when to try again. Made by the dispatcher for a delivery's first attempt (no workflow on the
// healthy path) and by the webhook's retry rounds for every retry (src/webhooks/due-retries.ts,
// workflows/webhook-retries.ts), sharing one per-endpoint bound per process.
import type { Knex } from 'knex';
import type { Db } from '../../db/connection.ts';
import type { Logger } from '../logger.ts';
import { DELIVERY_TIMEOUT_MS, send, type SendOutcome } from './http-send.ts';
import { DISABLE_AFTER_FAILING_MS, nextDelayMs, retryAfterMs, verdictFor } from './retry-schedule.ts';
import type { SecretBox } from './secret-box.ts';
import { signedHeaders } from './signing.ts';
import { discordMessage, discordRetryAfterMs } from './discord-message.ts';
import type { ItemRoles } from './role-ids.ts';
import type { DeliveryBody } from './outbox.ts';
import { parkDelivery } from './parking.ts';

/**
 * `putOff`: nothing was sent, the endpoint already had its share of this process's attempts in
 * flight; `delayMs` is then about when a slot frees.
 */
export type AttemptOutcome = { done: true } | { done: false; delayMs: number; putOff?: boolean };

export interface DeliveryAttemptDeps {
  db: Db;
  box: SecretBox;
  log: Logger;
  allowPrivateNetworks: boolean;
  /** Waits between attempts (retry-schedule.ts DEFAULT_SCHEDULE_MS unless configured). */
  scheduleMs: readonly number[];
  timeoutMs?: number;
  /** Attempts to one webhook this worker runs at once (WEBHOOK_PER_ENDPOINT_CONCURRENCY). */
  perEndpointConcurrency: number;
}

export interface DeliveryAttempts {
  /** Attempts to one webhook this process runs at once. */
  readonly perEndpointConcurrency: number;
  /**
   * 0 when the webhook has a free share of this process's attempts; otherwise about how long until
   * one frees, judged by its last send's time (up to the time-out, for an endpoint that hangs). A
   * busy endpoint's deliveries wait that long rather than ask again every second or so: behind a
   * hanging endpoint, most of that asking was wasted.
   */
  slotFreeInMs?(webhookId: number): number;
  attempt(deliveryId: number): Promise<AttemptOutcome>;
}

type Row = Record<string, unknown>;

/** Webhooks whose last send time is remembered (a few MB at most). */
const LAST_SEND_ENTRIES = 100_000;
/** A put-off waits at least this, plus up to the jitter, so put-offs to one endpoint do not wake together. */
const MIN_PUT_OFF_MS = 1_000;
const PUT_OFF_JITTER_MS = 1_000;

/** The secrets that sign now: the current one, and the one a rotation replaced until it expires. */
function signingSecrets(hook: Row, box: SecretBox, accountId: number, now: Date): string[] {
  const out = [box.open(hook.secret_sealed as string, accountId)];
  const expires = hook.previous_secret_expires_at as Date | null;
  if (hook.previous_secret_sealed && expires && expires > now) out.push(box.open(hook.previous_secret_sealed as string, accountId));
  return out;
}

export function createDeliveryAttempts(deps: DeliveryAttemptDeps): DeliveryAttempts {
  const { db, box, log } = deps;
  const timeoutMs = deps.timeoutMs ?? DELIVERY_TIMEOUT_MS;
  /** Per webhook id, when each of this worker's sends in flight to it started (ms since the epoch). */
  const inFlight = new Map<number, number[]>();
  /** Per webhook id, how long its last finished send took (a time-out counts as the whole time-out). */
  const lastSendMs = new Map<number, number>();
  /**
   * The soonest a slot is likely to free: when the oldest send in flight will have taken as long
   * as the endpoint's last one (the time-out itself for an endpoint that hangs). 1 ms when that
   * is already past or nothing is known yet: the caller's own short backoff then applies.
   */
  const slotFreeInMs = (webhookId: number): number => {
    const starts = inFlight.get(webhookId);
    if (!starts || starts.length < deps.perEndpointConcurrency) return 0;
    const expected = Math.min(lastSendMs.get(webhookId) ?? 0, timeoutMs);
    return Math.max(1, Math.min(...starts) + expected - Date.now());
  };

  async function finish(deliveryId: number, state: 'delivered' | 'failed', reason: string | null): Promise<AttemptOutcome> {
    await db('webhook_deliveries')
      .where({ id: deliveryId, state: 'pending' })
      .update({ state, failure_reason: reason, next_attempt_at: null, updated_at: db.raw('statement_timestamp()') });
    return { done: true };
  }

  /** The roles a Discord message mentions: the item's as they stand now (null for a ping). */
  async function itemRoles(notificationId: unknown): Promise<ItemRoles | null> {
    if (notificationId == null) return null;
    const row = await db('notifications as n').join('watchlist_items as i', 'i.id', 'n.item_id').where('n.id', notificationId).first('i.role_id', 'i.roles_json');
    // role_id is text (db/migrations/021): passed on as it is, since a 20-digit snowflake would
    // lose digits as a number.
    return row ? { role_id: (row.role_id as string | null) ?? null, roles_json: row.roles_json } : null;
  }

  return {
    perEndpointConcurrency: deps.perEndpointConcurrency,
    slotFreeInMs,
    async attempt(deliveryId) {
      // With its account's served state (null: not swept yet, and so not suspended either).
      const delivery = await db('webhook_deliveries as d').leftJoin('account_service as s', 's.account_id', 'd.account_id').where('d.id', deliveryId).first('d.*', 's.served');
      if (!delivery || delivery.state !== 'pending') return { done: true };
      // An account that is not served is sent nothing: the delivery waits, parked, until it is.
      if (delivery.served === false && (await parkDelivery(db, deliveryId, Number(delivery.account_id)))) return { done: true };
      // A slow or dead endpoint may hold only its share of the worker's slots: past it, this
      // attempt is put off (not counted, nothing read or sent) and the slot goes to other
      // endpoints. Taken before the webhook is read, with no wait in between, so the bound holds.
      const webhookId = Number(delivery.webhook_id);
      const slotIn = slotFreeInMs(webhookId);
      if (slotIn > 0) return { done: false, delayMs: Math.max(MIN_PUT_OFF_MS, slotIn) + Math.floor(Math.random() * PUT_OFF_JITTER_MS), putOff: true };
      const taken = Date.now();
      const starts = inFlight.get(webhookId);
      if (starts) starts.push(taken);
      else inFlight.set(webhookId, [taken]);

      let outcome: SendOutcome;
      let discord = false;
      let now = new Date();
      let sentAt: number | undefined;
      try {
        const accountId = Number(delivery.account_id);
        const hook = await db('webhooks').where({ id: webhookId }).first();
        if (!hook || hook.deleted) return await finish(deliveryId, 'failed', 'the webhook was deleted');
        if (!hook.active) return await finish(deliveryId, 'failed', 'the webhook is not active');

        now = new Date();
        const body = delivery.body as string;
        discord = hook.kind === 'discord';
        const payload = discord ? JSON.stringify(discordMessage(JSON.parse(body) as DeliveryBody, await itemRoles(delivery.notification_id))) : body;
        const headers = discord ? {} : signedHeaders(signingSecrets(hook, box, accountId, now), delivery.message_id, Math.floor(now.getTime() / 1000), body);
        const url = box.open(hook.url_sealed, accountId);
        sentAt = Date.now();
        outcome = await send(url, headers, payload, { allowPrivateNetworks: deps.allowPrivateNetworks, timeoutMs });
      } finally {
        const left = inFlight.get(webhookId) ?? [];
        left.splice(left.indexOf(taken), 1);
        if (!left.length) inFlight.delete(webhookId);
        if (sentAt !== undefined) {
          // One number per webhook this worker has sent to; a bound keeps a churn of webhooks from growing it.
          if (lastSendMs.size >= LAST_SEND_ENTRIES && !lastSendMs.has(webhookId)) lastSendMs.clear();
          lastSendMs.set(webhookId, Date.now() - sentAt);
        }
      }
      const verdict = verdictFor(outcome.status);
      const attempts = Number(delivery.attempt_count) + 1;
      // On a 429, Discord's `retry_after` (body, fractional seconds) before the Retry-After header.
      const wait = outcome.status === 429 ? ((discord ? discordRetryAfterMs(outcome.body) : null) ?? retryAfterMs(header(outcome.headers['retry-after']))) : null;
      const delayMs = verdict === 'retry' ? nextDelayMs(attempts, deps.scheduleMs, wait, Math.random()) : null;
      const state = verdict === 'delivered' ? 'delivered' : verdict === 'permanent' || delayMs === null ? 'failed' : 'pending';
      const reason =
        verdict === 'permanent' ? `the endpoint answered ${outcome.status} (not retried)` : state === 'failed' ? `no success after ${attempts} attempts` : null;
      // The message went out: only its record is left, and that is retried, not the send. A
      // record that failed once (the database refusing new connections for a moment) made the
      // dispatcher claim the delivery again and send it a second time under the same webhook-id
      // (9 such repeats in the rehearsal's Temporal outage, PostgreSQL at max_connections).
      await recordOutcome(log, deliveryId, () =>
        db.transaction(async (trx) => {
          // Only over the count this attempt read: a retried record whose first COMMIT did land
          // (its answer lost) finds it moved on, and writes nothing twice.
          const updated = await trx('webhook_deliveries')
            .where({ id: deliveryId, attempt_count: attempts - 1 })
            .update({
              state,
              attempt_count: attempts,
              failure_reason: reason,
              next_attempt_at: state === 'pending' ? new Date(Date.now() + delayMs!) : null,
              updated_at: trx.raw('statement_timestamp()'),
            });
          if (updated === 0) return;
          await trx('webhook_attempts').insert({
            delivery_id: deliveryId,
            attempted_at: now,
            status_code: outcome.status,
            error: outcome.error,
            latency_ms: outcome.latencyMs,
          });
          await trackHealth(trx, webhookId, verdict === 'delivered', now, outcome.status, outcome.error);
        }),
      );
      // The webhook's id only: its URL may carry a token and never reaches the log.
      log.debug({ delivery_id: deliveryId, webhook_id: webhookId, status: outcome.status, error: outcome.error, state }, 'webhook attempt');
      return state === 'pending' ? { done: false, delayMs: delayMs! } : { done: true };
    },
  };
}

/**
 * How long an attempt's outcome is retried after its send: under the dispatcher's claim (15 s),
 * so no other attempt of the delivery can start meanwhile. Past it the failure is thrown, and the
 * delivery is sent again later under the same webhook-id (at least once).
 */
export const RECORD_RETRY_MS = 10_000;

/** Runs `record` until it succeeds, retrying for RECORD_RETRY_MS (250 ms doubling to 2 s between tries). */
export async function recordOutcome(log: Logger, deliveryId: number, record: () => Promise<unknown>, retryMs = RECORD_RETRY_MS): Promise<void> {
  const started = Date.now();
  for (let wait = 250; ; wait = Math.min(2_000, wait * 2)) {
    try {
      await record();
      return;
    } catch (err) {
      if (Date.now() + wait - started > retryMs) throw err;
      log.warn({ err, delivery_id: deliveryId, retry_in_ms: wait }, 'webhook attempt sent but not recorded; recording it again (the message is not sent again)');
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

/**
 * A success ends the webhook's failing run; a failure starts one, and a run that has lasted
 * DISABLE_AFTER_FAILING_MS turns the webhook off, saying why. Its pending deliveries then fail
 * at their next attempt; PATCH {active: true} turns it back on.
 */
async function trackHealth(trx: Knex.Transaction, webhookId: number, ok: boolean, now: Date, status: number | null, error: string | null): Promise<void> {
  if (ok) {
    await trx('webhooks').where({ id: webhookId }).whereNotNull('failing_since').update({ failing_since: null });
    return;
  }
  // Written by the first failure of a run only: the attempts that fail together (a hanging
  // endpoint's sends time out at once) would otherwise queue on the webhook's row lock, each
  // holding a pooled connection the other endpoints' attempts are waiting for.
  const [started] = await trx('webhooks').where({ id: webhookId }).whereNull('failing_since').update({ failing_since: now }).returning(['failing_since', 'active']);
  const row = started ?? (await trx('webhooks').where({ id: webhookId }).first('failing_since', 'active'));
  const since = row?.failing_since as Date | undefined;
  if (!row?.active || !since || now.getTime() - since.getTime() < DISABLE_AFTER_FAILING_MS) return;
  const last = status === null ? (error ?? 'no answer') : `HTTP ${status}`;
  await trx('webhooks')
    .where({ id: webhookId })
    .update({
      active: false,
      disabled_reason: `every delivery attempt failed for 5 days (since ${since.toISOString()}; last: ${last})`,
      updated_at: trx.raw('statement_timestamp()'),
    });
}

function header(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}
