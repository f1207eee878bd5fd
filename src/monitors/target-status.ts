// A watched target's troubles, as the shard pollers keep them in monitor_target_status: failing,
// blocked by its platform (429/403, until its Retry-After), and the not-found clock that retires
// a target whose event is gone (issue 25).
//
// The clock. A not-found answer (ScrapeFailure `not_found`: the platform's 404 or 410 for the
// event) starts it, in `not_found_since`, unless it runs already. Any other answer about the event
// (a page read, or a page that could not be read) stops it. Failures that say nothing about the
// event (a 5xx, a time-out, a 429 or 403, no browser) neither start nor stop it. The first
// not-found answer MONITOR_RETIRE_AFTER_MS or more after the clock started retires the target:
// each item watching it is told once (a `target_retired` message in the notifications log, so
// the stream and its webhooks deliver it), and its poller stops polling it. The clock is in the
// database, on its clock, so a worker restart or another worker taking the shard over keeps it.
//
// Polling starts again when any item on the target is written after the retirement (created,
// updated with PATCH, resumed): the poller's reload sees a member row newer than `retired_at`,
// clears the row (a fresh clock) and polls the target like a new one.
import type { Db } from '../../db/connection.ts';
import type { LogEntry } from '../notifications/log.ts';
import type { ScrapeFailureKind } from '../scrapers/types.ts';
import { appendWithDeliveriesAndCommit } from '../webhooks/outbox.ts';
import { retirementHeld, type IncidentRule, type RetirementHold } from './platform-incidents.ts';
import { notificationKey } from './record-poll.ts';

/** Failures that say nothing about the event: they leave the not-found clock as it is. */
const SAYS_NOTHING: ReadonlySet<string> = new Set<ScrapeFailureKind | 'internal'>(['upstream', 'attempt_timeout', 'blocked', 'browser_missing', 'internal']);

export interface TargetFailure {
  target: string;
  platform: string;
  shard: number;
  kind: 'blocked' | 'failing';
  /** The ScrapeFailure's kind, or `internal` for anything else. */
  failure: ScrapeFailureKind | 'internal';
  failures: number;
  blockedUntil: number | null;
  message: string;
}

export interface ClockReading {
  /** How long the target has answered not-found (ms, the database's clock); null when it has not. */
  notFoundMs: number | null;
  /** When it started (null when it has not). */
  notFoundSince: Date | null;
}

/**
 * Writes the target's failure (its kind in `last_failure` too, which a watchlist item shows as
 * `not_found` or `failing`) and moves its not-found clock; returns the clock.
 */
export async function recordFailure(db: Db, f: TargetFailure): Promise<ClockReading> {
  const clock = f.failure === 'not_found' ? 'start' : SAYS_NOTHING.has(f.failure) ? 'keep' : 'stop';
  const { rows } = (await db.raw(
    `INSERT INTO monitor_target_status AS s (target, platform, shard, kind, failures, blocked_until, last_error, last_failure, not_found_since, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, CASE WHEN ? = 'start' THEN now() END, now())
     ON CONFLICT (target) DO UPDATE SET
       kind = CASE WHEN s.retired_at IS NULL THEN EXCLUDED.kind ELSE s.kind END,
       failures = EXCLUDED.failures, blocked_until = EXCLUDED.blocked_until, last_error = EXCLUDED.last_error,
       last_failure = EXCLUDED.last_failure, updated_at = EXCLUDED.updated_at,
       not_found_since = CASE ? WHEN 'start' THEN coalesce(s.not_found_since, now()) WHEN 'stop' THEN NULL ELSE s.not_found_since END
     RETURNING not_found_since, (extract(epoch FROM now() - not_found_since) * 1000)::float8 AS not_found_ms`,
    [f.target, f.platform, f.shard, f.kind, f.failures, f.blockedUntil === null ? null : new Date(f.blockedUntil), f.message.slice(0, 500), f.failure, clock, clock],
  )) as { rows: { not_found_since: Date | null; not_found_ms: number | null }[] };
  const row = rows[0];
  return { notFoundSince: row?.not_found_since ?? null, notFoundMs: row?.not_found_ms ?? null };
}

/**
 * The target answered at `checkedAt`: its troubles are over (the clock stops with its row). The
 * check is written in the same statement (src/monitors/check-log.ts writes the others once a
 * second), so an item never reads the failure gone without the success that ended it.
 */
export async function clearStatus(db: Db, target: string, checkedAt = new Date()): Promise<void> {
  await db.raw(
    `WITH cleared AS (DELETE FROM monitor_target_status WHERE target = ? AND retired_at IS NULL)
     INSERT INTO monitor_target_checks AS c (target, checked_at, ok) VALUES (?, ?, true)
     ON CONFLICT (target) DO UPDATE SET checked_at = EXCLUDED.checked_at, ok = true WHERE EXCLUDED.checked_at >= c.checked_at`,
    [target, target, checkedAt],
  );
}

interface MemberRow {
  item_id: string;
  account_id: string;
  item: { website: string; event: string; region: string };
}

/** The message each item of a retired target gets (the stream's `target_retired`). */
function retiredEntry(m: MemberRow, notFoundSince: Date, retiredAt: Date): LogEntry {
  const itemId = Number(m.item_id);
  return {
    accountId: Number(m.account_id),
    itemId,
    kind: 'target_retired',
    // Once per retirement: a target retired again later (after it came back) has a later clock.
    dedupeKey: notificationKey([itemId, 'retired', notFoundSince.getTime()]),
    payload: {
      item_id: itemId,
      platform: m.item.website,
      event: m.item.event,
      region: m.item.region,
      reason: 'not_found',
      not_found_since: notFoundSince.toISOString(),
      retired_at: retiredAt.toISOString(),
      // `message` is added by the database (monitor_append_notifications, db/migrations/036).
    },
  };
}

export interface Retirement {
  retired: boolean;
  told: number;
  /** Not retired, and to go on being polled. */
  held: boolean;
  /** Why, when its platform holds it (platform-incidents.ts retirementHeld). */
  hold?: RetirementHold;
}

/**
 * Retires the target: marks its row, and tells each item watching it, in one transaction (under
 * the target's advisory lock, as record-poll takes it). Returns whether this call retired it
 * (not when it was retired already), the messages written, and `held` when it is not retired and
 * must go on being polled: its platform holds it (an incident open or due, or the platform not
 * heard from since the clock started; `rule` is the incident rule), or its clock restarted since
 * `notFoundSince` was read (an incident ended), or it answered since.
 */
export async function retireTarget(db: Db, target: string, notFoundSince: Date, rule: IncidentRule): Promise<Retirement> {
  return db.transaction(async (trx) => {
    await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [target]);
    const status: { platform: string } | undefined = await trx('monitor_target_status').where({ target }).first('platform');
    // A platform-wide failure is the platform's, not this event's end (platform-incidents.ts).
    const hold = status ? await retirementHeld(trx, status.platform, target, notFoundSince, rule) : null;
    if (hold) return { retired: false, told: 0, held: true, hold };
    const marked: { retired_at: Date }[] = await trx('monitor_target_status')
      .where({ target })
      .whereNull('retired_at')
      // The clock the caller read: an incident's end restarts it, and a restarted clock has not run out.
      .whereRaw("not_found_since < ?::timestamptz + interval '1 millisecond'", [notFoundSince])
      .update({ kind: 'retired', retired_at: trx.fn.now(), updated_at: trx.fn.now() })
      .returning('retired_at');
    if (marked.length === 0) {
      // Retired already (another poller of it), or not to be: its clock restarted, or it answered since.
      const row: { retired_at: Date | null } | undefined = await trx('monitor_target_status').where({ target }).first('retired_at');
      return { retired: false, told: 0, held: !row?.retired_at };
    }
    const members: MemberRow[] = await trx('monitor_members').where({ target }).orderBy('item_id').select('item_id', 'account_id', 'item');
    // The last statement, committed with it (the log's writers' lock held for the server's time only).
    const ids = await appendWithDeliveriesAndCommit(
      trx,
      members.map((m) => retiredEntry(m, notFoundSince, marked[0]!.retired_at)),
    );
    return { retired: true, told: ids.length, held: false };
  });
}
