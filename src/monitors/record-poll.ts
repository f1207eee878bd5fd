// What one poll of a target leaves in the database, in one transaction: the snapshot row (only
// when the content changed), the notifications of every member item whose rules the change
// passes, and each member's baseline moved to the new snapshot. A member without a baseline
// (new, or resumed) gets this snapshot as its baseline and no notification, so creating an item
// never notifies about what is already on sale.
//
// Exactly once, whoever runs it and however often: the target's advisory lock serialises two
// pollers of one target (a worker taken for dead while still running), a poll whose request went
// out before the newest snapshot of other content was scraped is dropped (it is older news), the member rows are
// locked while their baselines move, and every notification carries a dedupe key (item, from
// snapshot, to snapshot, section, kind) that turns a second write into a no-op. The webhook
// deliveries of new notifications are enqueued in the same transaction (src/webhooks/outbox.ts).
//
// Items with a cooldown (cooldown.ts) go through their cooldown rows here too, in the same
// transaction: a change in a cooling section is held, and a poll after a hold's end releases it
// (the poller comes back for that even when nothing changed: `cooldownDueAt`).
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { Db } from '../../db/connection.ts';
import type { LogEntry } from '../notifications/log.ts';
import { appendWithDeliveriesAndCommit } from '../webhooks/outbox.ts';
import { detectChanges, type Change, type MonitorConfig, type SectionView } from './changes.ts';
import { applyCooldown, type CooldownState } from './cooldown.ts';
import { sameFormat, type TargetSnapshot } from './snapshot.ts';

/** Snapshots kept per target: members diff the newest; older ones only take space. */
const KEEP_SNAPSHOTS = 20;

export interface PollResult {
  target: string;
  snapshot: TargetSnapshot;
  hash: string;
  /** When the scrape's answer was in. */
  scrapedAt: Date;
  /** When its request was sent: a snapshot recorded after that may be newer than this one. */
  startedAt: Date;
}

export interface KnownSnapshot {
  id: number;
  data: TargetSnapshot;
}

export interface Recorded {
  snapshotId: number;
  /** When the earliest held cooldown of the target's members ends (ms); null when none is held. */
  cooldownDueAt: number | null;
  /** A new snapshot row was written (the content differs from the newest stored). */
  changed: boolean;
  notifications: number;
  /** Members that got their first baseline. */
  baselined: number;
  /**
   * Nothing was recorded: the target's newest snapshot, of other content, was scraped after this
   * poll's request was sent (a poller frozen past its heartbeat timeout, whose shard another
   * worker took over, finishing a scrape it began before). Recording it would diff backwards and
   * then repeat the forward change.
   */
  stale: boolean;
}

interface MemberRow {
  item_id: string;
  account_id: string;
  item: { website: string; event: string; region: string };
  config: MonitorConfig;
  baseline_snapshot_id: string | null;
}

export function notificationKey(parts: (string | number)[]): string {
  // Hashed: section names are the platform's and may be long; the unique index wants short keys.
  return `n:${createHash('sha256').update(JSON.stringify(parts)).digest('base64url')}`;
}

interface CooldownRow {
  item_id: string;
  section: string;
  notified: SectionView;
  notified_at: Date;
  held: boolean;
  held_from: TargetSnapshot | null;
}

function isMuted(m: MemberRow, detectedAt: Date): boolean {
  // Muted against the time the change was seen, not the time this (possibly retried) write runs.
  return m.config.muted_until !== null && Date.parse(m.config.muted_until) > detectedAt.getTime();
}

/**
 * The notification entry for one change of one member. Its dedupe key names the two snapshots
 * compared, or, for a cooldown's release, the hold it ends: written twice, it is written once.
 */
function entryOf(m: MemberRow, c: Change, from: KnownSnapshot | null, to: KnownSnapshot, detectedAt: Date, release: number | null): LogEntry {
  const itemId = Number(m.item_id);
  const key = release === null ? [itemId, from?.id ?? 0, to.id, c.section, c.change_type] : [itemId, 'cooldown', release, c.section, c.change_type];
  return {
    accountId: Number(m.account_id),
    itemId,
    kind: 'notification',
    dedupeKey: notificationKey(key),
    payload: {
      item_id: itemId,
      change_type: c.change_type,
      platform: m.item.website,
      event: m.item.event,
      region: m.item.region,
      section: c.section,
      currency: c.currency,
      before: c.before,
      after: c.after,
      snapshot_id: to.id,
      detected_at: detectedAt.toISOString(),
    },
  };
}

async function storeSnapshot(trx: Knex.Transaction, poll: PollResult): Promise<{ id: number; changed: boolean; stale: boolean }> {
  const latest: { id: string; hash: string; scraped_at: Date } | undefined = await trx('target_snapshots').where({ target: poll.target }).orderBy('id', 'desc').first('id', 'hash', 'scraped_at');
  if (latest && latest.hash === poll.hash) return { id: Number(latest.id), changed: false, stale: false };
  if (latest && latest.scraped_at > poll.startedAt) return { id: Number(latest.id), changed: false, stale: true };
  const [row] = await trx('target_snapshots')
    .insert({ target: poll.target, hash: poll.hash, data: JSON.stringify(poll.snapshot), scraped_at: poll.scrapedAt })
    .returning('id');
  await trx('target_snapshots')
    .where({ target: poll.target })
    .andWhere('id', '<', trx('target_snapshots').where({ target: poll.target }).orderBy('id', 'desc').offset(KEEP_SNAPSHOTS - 1).limit(1).select('id'))
    .delete();
  return { id: Number(row.id), changed: true, stale: false };
}

/**
 * Records a poll whose content differs from `previous` (the poller's last known snapshot of the
 * target), or whose target has members waiting for a baseline.
 */
export async function recordPoll(db: Db, poll: PollResult, previous: KnownSnapshot | null): Promise<Recorded> {
  return db.transaction(async (trx) => {
    await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [poll.target]);
    const stored = await storeSnapshot(trx, poll);
    if (stored.stale) return { snapshotId: stored.id, cooldownDueAt: null, changed: false, notifications: 0, baselined: 0, stale: true };
    const current: KnownSnapshot = { id: stored.id, data: poll.snapshot };
    // Members to move to this snapshot, and those in a cooldown (a hold may end at this poll).
    const members: MemberRow[] = await trx('monitor_members')
      .where({ target: poll.target })
      .andWhere((q) =>
        q
          .whereNull('baseline_snapshot_id')
          .orWhereNot('baseline_snapshot_id', stored.id)
          .orWhereIn('item_id', trx('monitor_cooldowns').where({ target: poll.target }).select('item_id')),
      )
      .orderBy('item_id')
      .forUpdate()
      .select('item_id', 'account_id', 'item', 'config', 'baseline_snapshot_id');
    if (members.length === 0) return { snapshotId: stored.id, cooldownDueAt: null, changed: stored.changed, notifications: 0, baselined: 0, stale: false };
    const cooldownRows: CooldownRow[] = await trx('monitor_cooldowns')
      .where({ target: poll.target })
      .whereIn(
        'item_id',
        members.map((m) => m.item_id),
      )
      .select('item_id', 'section', 'notified', 'notified_at', 'held', 'held_from');
    const rowsOf = new Map<string, CooldownState[]>();
    for (const r of cooldownRows) {
      rowsOf.set(r.item_id, [...(rowsOf.get(r.item_id) ?? []), { section: r.section, notified: r.notified, notifiedAt: r.notified_at.getTime(), held: r.held, heldFrom: r.held_from }]);
    }

    // Baselines other than the poller's previous snapshot (a member that joined between two
    // changes, a takeover) are read from the table; one that was pruned moves on silently.
    const known = new Map<number, KnownSnapshot>();
    if (previous) known.set(previous.id, previous);
    const wanted = [...new Set(members.map((m) => m.baseline_snapshot_id).filter((id): id is string => id !== null).map(Number))].filter((id) => !known.has(id));
    if (wanted.length) {
      const rows: { id: string; data: TargetSnapshot }[] = await trx('target_snapshots').whereIn('id', wanted).select('id', 'data');
      for (const r of rows) known.set(Number(r.id), { id: Number(r.id), data: r.data });
    }
    const entries: LogEntry[] = [];
    const cooldownWrites: Record<string, unknown>[] = [];
    const cooldownRemovals: [string, string][] = [];
    let cooldownDueAt: number | null = null;
    let baselined = 0;
    const detectedAt = poll.scrapedAt.getTime();
    for (const m of members) {
      if (m.baseline_snapshot_id === null) {
        baselined++;
        continue;
      }
      const from = known.get(Number(m.baseline_snapshot_id));
      const muted = isMuted(m, poll.scrapedAt);
      // Only forward: a baseline newer than this poll's snapshot cannot happen with one writer
      // per target, and diffing backwards would report a change in reverse. A baseline read by
      // another snapshot format is moved on without a diff (snapshot.ts, SNAPSHOT_FORMAT).
      const changes = from && from.id < current.id && sameFormat(from.data, current.data) && !muted ? detectChanges(from.data, current.data, m.config) : [];
      const states = rowsOf.get(m.item_id) ?? [];
      if (changes.length === 0 && states.length === 0) continue;
      const decision = applyCooldown(m.config, changes, states, from?.data ?? null, current.data, detectedAt, muted);
      entries.push(...decision.notify.map((n) => entryOf(m, n.change, from ?? null, current, poll.scrapedAt, n.release)));
      for (const w of decision.write) {
        cooldownWrites.push({
          item_id: m.item_id,
          section: w.section,
          target: poll.target,
          notified: JSON.stringify(w.notified),
          notified_at: new Date(w.notifiedAt),
          held: w.held,
          held_from: w.heldFrom === null ? null : JSON.stringify(w.heldFrom),
        });
      }
      for (const section of decision.remove) cooldownRemovals.push([m.item_id, section]);
      if (decision.dueAt !== null) cooldownDueAt = Math.min(cooldownDueAt ?? Infinity, decision.dueAt);
    }
    if (cooldownWrites.length) {
      await trx('monitor_cooldowns').insert(cooldownWrites).onConflict(['item_id', 'section']).merge(['target', 'notified', 'notified_at', 'held', 'held_from']);
    }
    if (cooldownRemovals.length) {
      await trx('monitor_cooldowns').whereIn(['item_id', 'section'], cooldownRemovals).delete();
    }
    await trx('monitor_members')
      .whereIn(
        'item_id',
        members.map((m) => m.item_id),
      )
      .update({ baseline_snapshot_id: stored.id });
    // Last, with its deliveries, and committed in the same message: a notification of an item
    // naming a webhook is never without its delivery, and the log's writers' lock is held for
    // the server's time only (it was held through the three writes above and a commit's round
    // trip: with PostgreSQL 300 ms away, every watchlist write queued behind it for seconds).
    const ids = await appendWithDeliveriesAndCommit(trx, entries);
    return { snapshotId: stored.id, cooldownDueAt, changed: stored.changed, notifications: ids.length, baselined, stale: false };
  });
}
