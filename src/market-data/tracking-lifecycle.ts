// When a tracked event is scraped, paused or ended (issue 25). Before each tick the tracker asks
// the database once (trackingGate), and the answer is decided here:
//
// - ended: the event's date is known from a scrape of this tracking (its chain, since it was
//   added or re-added) and it is TRACKING_END_AFTER_EVENT_MS past; or its date is not known
//   (none on the marketplace, or no successful scrape yet) and the tracking started
//   TRACKING_UNDATED_MAX_MS ago; or no account tracks it any more (an add that never
//   committed). A tracking from before accounts were recorded (`unattributed`, migration 027)
//   counts as held and served while an account may still claim it (add it again, which makes it
//   that account's): for TRACKING_UNATTRIBUTED_MAX_MS after `unattributed_since` (migration 034).
//   After that nobody holds it, and it ends as `untracked` like any tracking no account holds.
//   The end is recorded in the same transaction
//   (status `ended`, end_reason, every account's link ended) and the workflow completes.
// - paused: none of the accounts that track it is served (account_served, migration 026). A
//   shared tracking needs one served account; nothing is deleted. The paused workflow waits for
//   the resumeTracking signal (trackingServiceSignals), which the signal relay sends once the
//   service sweep has recorded that an account of it is served again.
// - scrape: otherwise.
//
// Every clock here is the database's now(), so the worker's clock and the workflow's play no
// part, and a setting changed on the worker applies at its next tick.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Knex } from 'knex';
import type { Db } from '../../db/connection.ts';
import { callTemporal } from '../../temporal/client.ts';
import { resumeTrackingSignal } from '../../workflows/track-event-messages.ts';
import type { ServiceSignals } from '../accounts/service-signals.ts';
import { inParallel } from '../monitors/change-feed.ts';
import type { Config } from '../config.ts';
import { trackingWorkflowId, type TrackableMarketplace } from './tracking-ref.ts';

type Trx = Knex.Transaction;

export type TrackingStatus = 'pending' | 'active' | 'failing' | 'failed' | 'ended';

/** Why a tracking ended: its event is past, it has no date for too long, no account tracks it, or the marketplace has no such event (`failed`). */
export type EndReason = 'event_passed' | 'undated' | 'untracked' | 'not_found';
export const END_REASONS = ['event_passed', 'undated', 'untracked', 'not_found'] as const satisfies readonly EndReason[];

export interface TrackingLimits {
  /** TRACKING_END_AFTER_EVENT_MS */
  endAfterEventMs: number;
  /** TRACKING_UNDATED_MAX_MS */
  undatedMaxMs: number;
  /** TRACKING_UNATTRIBUTED_MAX_MS */
  unattributedMaxMs: number;
}

export function trackingLimits(config: Pick<Config, 'TRACKING_END_AFTER_EVENT_MS' | 'TRACKING_UNDATED_MAX_MS' | 'TRACKING_UNATTRIBUTED_MAX_MS'>): TrackingLimits {
  return { endAfterEventMs: config.TRACKING_END_AFTER_EVENT_MS, undatedMaxMs: config.TRACKING_UNDATED_MAX_MS, unattributedMaxMs: config.TRACKING_UNATTRIBUTED_MAX_MS };
}

/** What the gate reads about one tracking, all at one moment of the database. */
export interface TrackingFacts {
  status: TrackingStatus;
  /** At least one account's link is live. */
  held: boolean;
  /** At least one account with a live link is served. */
  served: boolean;
  /**
   * A tracking from before accounts were recorded (`unattributed`): since when it has waited for
   * an account to claim it (`unattributed_since`). Null for every other tracking.
   */
  unattributedSince: Date | null;
  /** The catalog event's date (null when unknown). */
  eventDate: Date | null;
  /** A tick of the asking chain was applied: the date above is this tracking's own reading. */
  scrapedThisChain: boolean;
  startedAt: Date;
  now: Date;
}

export type TrackingDecision =
  | { action: 'scrape' }
  | { action: 'pause' }
  /** `record`: write the end; false when the tracking had ended already (a stale chain) or has no row. */
  | { action: 'end'; reason: EndReason; record: boolean };

/** When the tracking ends, as things stand. */
export function trackingEndsAt(facts: Pick<TrackingFacts, 'eventDate' | 'scrapedThisChain' | 'startedAt'>, limits: TrackingLimits): Date {
  return facts.eventDate !== null && facts.scrapedThisChain
    ? new Date(facts.eventDate.getTime() + limits.endAfterEventMs)
    : new Date(facts.startedAt.getTime() + limits.undatedMaxMs);
}

/**
 * Whether an unattributed tracking still waits for an account to claim it: it then counts as
 * held and served (nothing says whose it is, so no account's state can pause it).
 */
export function awaitingClaim(facts: Pick<TrackingFacts, 'unattributedSince' | 'now'>, limits: Pick<TrackingLimits, 'unattributedMaxMs'>): boolean {
  return facts.unattributedSince !== null && facts.now.getTime() < facts.unattributedSince.getTime() + limits.unattributedMaxMs;
}

/** The gate's rule; `facts` null: the tracking has no row. */
export function decideTracking(facts: TrackingFacts | null, limits: TrackingLimits): TrackingDecision {
  if (facts === null) return { action: 'end', reason: 'untracked', record: false };
  if (facts.status === 'failed') return { action: 'end', reason: 'not_found', record: false };
  if (facts.status === 'ended') return { action: 'end', reason: 'untracked', record: false };
  const unclaimed = awaitingClaim(facts, limits);
  const endsAt = trackingEndsAt(facts, limits).getTime();
  const dated: TrackingDecision = { action: 'end', reason: facts.eventDate !== null && facts.scrapedThisChain ? 'event_passed' : 'undated', record: true };
  if (!facts.held && !unclaimed) {
    // An unattributed tracking whose wait ran out ends for whichever came first, its date or its
    // wait, so the reason does not change as time passes (decided once, read again later).
    const waitEnded = facts.unattributedSince === null ? -Infinity : facts.unattributedSince.getTime() + limits.unattributedMaxMs;
    return endsAt <= waitEnded ? dated : { action: 'end', reason: 'untracked', record: true };
  }
  if (facts.now.getTime() >= endsAt) return dated;
  return facts.served || unclaimed ? { action: 'scrape' } : { action: 'pause' };
}

/**
 * Serialises an add of the event (tracking-service.ts) with its tracker's gate: the gate of a
 * workflow an add just started waits for that add to commit (or roll back) before it reads.
 */
export async function lockTracking(trx: Trx, marketplace: TrackableMarketplace, externalId: string): Promise<void> {
  await trx.raw("SELECT pg_advisory_xact_lock(hashtext('tracking'), hashtext(?))", [trackingWorkflowId(marketplace, externalId)]);
}

/** Ends a tracking and every account's link to it (the links stop counting against the cap). */
export async function endTracking(trx: Trx, trackingId: number, reason: EndReason, extra: Record<string, unknown> = {}): Promise<void> {
  await trx('tracked_events')
    .where({ id: trackingId })
    .update({ status: reason === 'not_found' ? 'failed' : 'ended', ended_at: trx.fn.now(), end_reason: reason, updated_at: trx.fn.now(), ...extra });
  await trx('tracked_event_accounts').where({ tracked_event_id: trackingId }).whereNull('ended_at').update({ ended_at: trx.fn.now() });
}

interface GateRow {
  id: string;
  status: TrackingStatus;
  started_at: Date;
  tick_epoch: string | null;
  last_tick: number | null;
  event_id: string | null;
  event_date: Date | null;
  now: Date;
  held: boolean;
  served: boolean;
  unattributed_since: Date | null;
}

export interface GateResult {
  decision: TrackingDecision;
  /** The tracking's row as read (null: none), for the tick's applied check. */
  row: Pick<GateRow, 'tick_epoch' | 'last_tick' | 'event_id'> | null;
}

/**
 * One check before a tick: reads the tracking, its accounts' served state and its event's date,
 * decides, and records an end. A few milliseconds: a transaction of three short statements.
 */
export async function trackingGate(db: Db, ref: { marketplace: TrackableMarketplace; externalId: string; epoch: string }, limits: TrackingLimits): Promise<GateResult> {
  return db.transaction(async (trx) => {
    await lockTracking(trx, ref.marketplace, ref.externalId);
    const { rows } = (await trx.raw(
      `SELECT t.id, t.status, t.started_at, t.tick_epoch, t.last_tick, t.event_id, e.event_date, now() AS now,
              EXISTS (SELECT 1 FROM tracked_event_accounts l WHERE l.tracked_event_id = t.id AND l.ended_at IS NULL) AS held,
              EXISTS (SELECT 1 FROM tracked_event_accounts l WHERE l.tracked_event_id = t.id AND l.ended_at IS NULL AND account_served(l.account_id)) AS served,
              CASE WHEN t.unattributed THEN t.unattributed_since END AS unattributed_since
         FROM tracked_events t LEFT JOIN events e ON e.id = t.event_id
        WHERE t.marketplace = ? AND t.external_id = ?`,
      [ref.marketplace, ref.externalId],
    )) as { rows: GateRow[] };
    const row = rows[0];
    const facts: TrackingFacts | null = row
      ? {
          status: row.status,
          held: row.held,
          served: row.served,
          unattributedSince: row.unattributed_since,
          eventDate: row.event_date,
          scrapedThisChain: row.tick_epoch === ref.epoch,
          startedAt: row.started_at,
          now: row.now,
        }
      : null;
    const decision = decideTracking(facts, limits);
    if (row && decision.action === 'end' && decision.record) await endTracking(trx, Number(row.id), decision.reason);
    return { decision, row: row ?? null };
  });
}

/** Signals sent at once while the relay wakes an account's paused trackings. */
const WAKE_PARALLEL = 16;

/**
 * What event tracking asks of Temporal when an account's state changes (sent by the signal
 * relay, src/accounts/service-signals.ts, after the sweep committed the change): pausing is the
 * gate's, at each tick, so a suspension asks nothing; an account served again wakes its paused
 * trackings at once (the resumeTracking signal), so a paused tracking needs no frequent checks of
 * its own. The signal only sets a flag the workflow clears when it pauses again: a repeat at most
 * makes a tracking check the gate once more, so delivering it again is harmless.
 */
export function trackingServiceSignals(opts: { db: Db; client: Client }): ServiceSignals {
  const { db, client } = opts;
  return {
    name: 'tracking wake-ups',
    resumed: async (accountIds) => {
      const rows: { workflow_id: string }[] = await db('tracked_events as t')
        .join('tracked_event_accounts as l', 'l.tracked_event_id', 't.id')
        .whereIn('l.account_id', accountIds)
        .whereNull('l.ended_at')
        .whereIn('t.status', ['pending', 'active', 'failing'])
        .distinct('t.workflow_id');
      await inParallel(rows, WAKE_PARALLEL, async (r) => {
        // A tracking whose workflow has just ended has nothing to wake.
        await callTemporal(client, () => client.workflow.getHandle(r.workflow_id).signal(resumeTrackingSignal)).catch((err: unknown) => {
          if (!(err instanceof WorkflowNotFoundError)) throw err;
        });
      });
    },
  };
}
