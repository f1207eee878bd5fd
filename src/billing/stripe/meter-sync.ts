// Meter sync: charged credits reported to the Stripe Billing Meter, never lost and never doubled.
//
// The unit is a meter batch (migration 015): every charged ledger row of one account and one
// billing period not yet in a batch, summed into one meter event. A run
//   1. forms batches: in one transaction, a `pending` batch row (identifier, credits, timestamp)
//      is written and its ledger rows are stamped with it; nothing is sent yet;
//   2. sends every pending batch (from this run or from one a crash cut short) and marks it
//      `sent` only once Stripe accepted it.
// A row is reported by being stamped, not by lying before a cursor position, so a reservation
// captured after later rows is picked up by whichever run comes next. A crash before the
// formation commits leaves the rows unstamped (formed again later, with the same or more
// rows); a crash after it leaves the batch pending and it is sent again with the same
// identifier, which Stripe deduplicates. Charged is a final state (capture and release both
// only move `reserved` rows), so a stamped row's credits cannot change under its batch.
import { createHash } from 'node:crypto';
import Stripe from 'stripe';
import type { Db } from '../../../db/connection.ts';
import type { Logger } from '../../logger.ts';
import { retryAfterMs } from '../../webhooks/retry-schedule.ts';

/** Stripe refuses meter events older than 35 days; an hour's margin for clocks and queues. */
export const METER_MAX_AGE_MS = 35 * 86_400_000 - 3_600_000;
/** Ledger rows stamped per formation statement, so one transaction stays short. */
const FORM_ROWS = 50_000;
/** Formation rounds per run: a run under heavy traffic still ends; the next tick goes on. */
const FORM_ROUNDS = 20;
const SEND_PAGE = 100;

export type MeterBatchState = 'pending' | 'sent' | 'expired';

export interface MeterSyncResult {
  formed: number;
  sent: number;
  expired: number;
  /** Pending batches Stripe refused (4xx): left pending with their error, sent again next run. */
  refused: number;
}

/**
 * The event's identifier, from the rows it covers: the same rows always give the same
 * identifier, and no two batches share a row. At most 100 characters (Stripe's limit).
 * formMeterBatches computes the same digest in SQL; the unit test holds the two together.
 */
export function meterIdentifier(accountId: number, periodStart: Date, requestIds: readonly string[]): string {
  const digest = createHash('sha256').update([...requestIds].sort(byCodePoint).join('\n')).digest('hex');
  return `tm_${accountId}_${Math.floor(periodStart.getTime() / 1000)}_${digest.slice(0, 40)}`;
}

// PostgreSQL's COLLATE "C" order, so the SQL and the TypeScript digests agree.
function byCodePoint(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/**
 * The event's timestamp (whole seconds): when the batch's last credit was used, never before
 * its period's start. Admission only reserves while the period has not ended (gateway_admit
 * refuses at period_end <= now(), the same now() the row's created_at takes), so the latest
 * created_at lies inside the period and Stripe bills the credits in that period.
 */
export function meterTimestamp(periodStart: Date, lastUsedAt: Date): number {
  return Math.max(Math.ceil(periodStart.getTime() / 1000), Math.floor(lastUsedAt.getTime() / 1000));
}

// The SQL twins of meterIdentifier and meterTimestamp. A batch whose timestamp is already past
// Stripe's 35 days is formed `expired`: Stripe would refuse it, and it stays on record instead.
const FORM_SQL = `
WITH picked AS (
  SELECT l.request_id, l.account_id, l.period_start, l.credits, l.created_at, l.settled_at, a.customer_id
  FROM credit_ledger l JOIN accounts a ON a.id = l.account_id
  WHERE l.state = 'charged' AND l.meter_batch IS NULL AND a.customer_id IS NOT NULL
  ORDER BY l.account_id, l.period_start, l.request_id
  LIMIT :limit
  FOR UPDATE OF l
), groups AS (
  SELECT account_id, period_start, min(customer_id) AS customer_id, CAST(sum(credits) AS bigint) AS credits, CAST(count(*) AS int) AS n,
         min(settled_at) AS first_captured_at, max(settled_at) AS last_captured_at,
         CAST(greatest(ceil(extract(epoch FROM period_start)), floor(extract(epoch FROM max(created_at)))) AS bigint) AS ts,
         encode(sha256(convert_to(string_agg(request_id, E'\\n' ORDER BY request_id COLLATE "C"), 'UTF8')), 'hex') AS digest
  FROM picked GROUP BY account_id, period_start
), batches AS (
  INSERT INTO meter_batches (account_id, customer_id, period_start, credits, request_count, identifier, event_timestamp, first_captured_at, last_captured_at, state)
  SELECT account_id, customer_id, period_start, credits, n,
         'tm_' || account_id || '_' || CAST(floor(extract(epoch FROM period_start)) AS bigint) || '_' || left(digest, 40),
         to_timestamp(ts), first_captured_at, last_captured_at,
         CASE WHEN to_timestamp(ts) < now() - make_interval(secs => :maxAgeSeconds) THEN 'expired' ELSE 'pending' END
  FROM groups
  RETURNING id, account_id, period_start
), stamped AS (
  UPDATE credit_ledger l SET meter_batch = b.id
  FROM picked p JOIN batches b ON b.account_id = p.account_id AND b.period_start = p.period_start
  WHERE l.request_id = p.request_id
  RETURNING l.request_id
)
SELECT CAST((SELECT count(*) FROM batches) AS int) AS batches, CAST((SELECT count(*) FROM stamped) AS int) AS rows`;

/** Writes pending batches for the charged rows not yet in one. Returns how many rows it stamped and batches it wrote. */
export async function formMeterBatches(db: Db, opts: { limit?: number } = {}): Promise<{ batches: number; rows: number }> {
  // READ COMMITTED and FOR UPDATE: two runs racing (a zombie attempt) re-check meter_batch on
  // the locked rows, so the second stamps only what the first left.
  const { rows } = await db.raw(FORM_SQL, { limit: opts.limit ?? FORM_ROWS, maxAgeSeconds: METER_MAX_AGE_MS / 1000 });
  return { batches: Number(rows[0]?.batches ?? 0), rows: Number(rows[0]?.rows ?? 0) };
}

interface PendingBatch {
  id: number;
  customer_id: string;
  credits: number;
  identifier: string;
  event_timestamp: Date;
}

/** A failure worth retrying whole (Stripe down, 5xx, 429): the run stops and Temporal retries it. */
export class MeterSyncRetryable extends Error {
  constructor(
    message: string,
    /** Stripe's Retry-After, when it sent one. */
    readonly retryAfterMs: number | null,
    cause: unknown,
  ) {
    super(message, { cause });
  }
}

/** A 4xx other than 429 is about this event (a customer Stripe does not know, a bad value): the others may still go. */
function refusedOnly(err: unknown): boolean {
  return err instanceof Stripe.errors.StripeInvalidRequestError && err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500 && err.statusCode !== 429 && err.statusCode !== 409;
}

function errorText(err: unknown): string {
  if (err instanceof Stripe.errors.StripeError) return `${err.statusCode ?? 'no answer'} ${err.rawType ?? err.type}: ${err.message}`.slice(0, 500);
  return (err instanceof Error ? err.message : String(err)).slice(0, 500);
}

export interface MeterSyncDeps {
  db: Db;
  stripe: Stripe;
  /** STRIPE_METER_EVENT_NAME. */
  eventName: string;
  log: Logger;
}

/** Sends every pending batch once, oldest first, marking each sent as soon as Stripe accepts it. */
export async function sendPendingBatches(deps: MeterSyncDeps, opts: { progress?: () => void } = {}): Promise<Omit<MeterSyncResult, 'formed'>> {
  const { db } = deps;
  const out = { sent: 0, expired: 0, refused: 0 };
  let after = 0;
  for (;;) {
    const page = (await db('meter_batches')
      .where({ state: 'pending' })
      .andWhere('id', '>', after)
      .orderBy('id')
      .limit(SEND_PAGE)
      .select('id', 'customer_id', 'credits', 'identifier', 'event_timestamp')) as PendingBatch[];
    if (page.length === 0) return out;
    for (const b of page) {
      after = b.id;
      // Pending past Stripe's 35 days (Stripe was down or refusing that long): Stripe would refuse it.
      if (b.event_timestamp.getTime() < Date.now() - METER_MAX_AGE_MS) {
        await db('meter_batches').where({ id: b.id, state: 'pending' }).update({ state: 'expired', last_error: 'older than Stripe accepts (35 days)' });
        deps.log.error({ batch: b.id, credits: Number(b.credits), customer: b.customer_id }, 'meter batch expired before Stripe accepted it; bill it by hand');
        out.expired++;
        continue;
      }
      await db('meter_batches').where({ id: b.id }).update({ attempts: db.raw('attempts + 1'), last_attempt_at: db.fn.now() });
      try {
        // No Idempotency-Key: Stripe replays a key's first answer, a 500 included, for 24 h;
        // the identifier is the meter's own deduplication and a resend needs nothing else.
        await deps.stripe.billing.meterEvents.create({
          event_name: deps.eventName,
          payload: { stripe_customer_id: b.customer_id, value: String(b.credits) },
          identifier: b.identifier,
          timestamp: Math.floor(b.event_timestamp.getTime() / 1000),
        });
      } catch (err) {
        await db('meter_batches').where({ id: b.id }).update({ last_error: errorText(err) });
        if (refusedOnly(err)) {
          deps.log.error({ batch: b.id, err: errorText(err) }, 'Stripe refused a meter event; it stays pending');
          out.refused++;
          continue;
        }
        const headers = err instanceof Stripe.errors.StripeError ? err.headers : undefined;
        throw new MeterSyncRetryable(`meter event not accepted: ${errorText(err)}`, retryAfterMs(headers?.['retry-after']), err);
      }
      await db('meter_batches').where({ id: b.id, state: 'pending' }).update({ state: 'sent', sent_at: db.fn.now(), last_error: null });
      out.sent++;
      opts.progress?.();
    }
  }
}

/** One run: form batches for everything charged so far, then send every pending batch. */
export async function syncMeter(deps: MeterSyncDeps, opts: { progress?: () => void } = {}): Promise<MeterSyncResult> {
  let formed = 0;
  for (let round = 0; round < FORM_ROUNDS; round++) {
    const r = await formMeterBatches(deps.db);
    formed += r.batches;
    opts.progress?.();
    if (r.rows < FORM_ROWS) break;
  }
  const sent = await sendPendingBatches(deps, opts);
  return { formed, ...sent };
}

export interface AccountSyncStatus {
  account_id: number;
  customer_id: string | null;
  /** Charged credits Stripe has not accepted yet: not in a batch, or in a pending one. */
  unreported_credits: number;
  pending_batches: number;
  /** When the oldest of those credits was captured; null when there are none. */
  oldest_unreported_at: string | null;
  /** Seconds since then. */
  lag_seconds: number | null;
  /** When Stripe last accepted a batch of this account. */
  last_reported_at: string | null;
  /** Credits Stripe will no longer take (older than 35 days when sent): to be billed by hand. */
  expired_credits: number;
  last_error: string | null;
}

const STATUS_SQL = `
WITH unbatched AS (
  SELECT account_id, sum(credits)::bigint AS credits, min(settled_at) AS oldest
  FROM credit_ledger WHERE state = 'charged' AND meter_batch IS NULL GROUP BY account_id
), batches AS (
  SELECT account_id,
         coalesce(sum(credits) FILTER (WHERE state = 'pending'), 0)::bigint AS pending_credits,
         count(*) FILTER (WHERE state = 'pending')::int AS pending_batches,
         min(first_captured_at) FILTER (WHERE state = 'pending') AS oldest,
         max(sent_at) AS last_reported_at,
         coalesce(sum(credits) FILTER (WHERE state = 'expired'), 0)::bigint AS expired_credits,
         (array_agg(last_error ORDER BY id DESC) FILTER (WHERE state = 'pending' AND last_error IS NOT NULL))[1] AS last_error
  FROM meter_batches GROUP BY account_id
)
SELECT a.id AS account_id, a.customer_id,
       coalesce(u.credits, 0) + coalesce(b.pending_credits, 0) AS unreported_credits,
       coalesce(b.pending_batches, 0) AS pending_batches,
       least(u.oldest, b.oldest) AS oldest_unreported_at,
       b.last_reported_at, coalesce(b.expired_credits, 0) AS expired_credits, b.last_error
FROM accounts a
LEFT JOIN unbatched u ON u.account_id = a.id
LEFT JOIN batches b ON b.account_id = a.id
WHERE u.account_id IS NOT NULL OR b.account_id IS NOT NULL
ORDER BY least(u.oldest, b.oldest) ASC NULLS LAST, a.id`;

/**
 * The meter sync's lag per account (`npm run ops -- billing:sync-status`): accounts with
 * credits not yet accepted by Stripe or expired, or, with `all`, every account ever reported.
 */
export async function meterSyncStatus(db: Db, opts: { all?: boolean; now?: Date } = {}): Promise<AccountSyncStatus[]> {
  const now = opts.now ?? new Date();
  const { rows } = await db.raw(STATUS_SQL);
  return (rows as Record<string, unknown>[])
    .map((r) => {
      const oldest = r.oldest_unreported_at as Date | null;
      return {
        account_id: Number(r.account_id),
        customer_id: r.customer_id as string | null,
        unreported_credits: Number(r.unreported_credits),
        pending_batches: Number(r.pending_batches),
        oldest_unreported_at: oldest?.toISOString() ?? null,
        lag_seconds: oldest ? Math.max(0, Math.round((now.getTime() - oldest.getTime()) / 1000)) : null,
        last_reported_at: (r.last_reported_at as Date | null)?.toISOString() ?? null,
        expired_credits: Number(r.expired_credits),
        last_error: r.last_error as string | null,
      };
    })
    .filter((s) => opts.all || s.unreported_credits > 0 || s.expired_credits > 0);
}
