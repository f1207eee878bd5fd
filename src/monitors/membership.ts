// The membership relay: turns watchlist changes into the shard pollers' members. For each item's
// newest change it upserts (active, monitorable item) or deletes (paused, deleted) its row in
// monitor_members, in the transaction that moves its cursor over watchlist_changes, then
// NOTIFYs the touched shards and makes sure their shardPoller workflows run. Nothing here goes
// through a per-item workflow, so 10,000 new items cost 10,000 row writes and a few dozen
// idempotent workflow starts, not 10,000 workflow tasks.
//
// A config update keeps the member's baseline; a member that (re)joins starts without one, so
// its first poll sets it. A periodic reconcile starts the pollers of shards that have members,
// in case a poller ended (no members) in the instant a new member arrived.
import type { Knex } from 'knex';
import { parseEventRef, targetKey } from '../platform/event-ref.ts';
import { pollerSearchAttributes } from '../../temporal/search-attributes.ts';
import type { ShardPollerInput, shardPoller } from '../../workflows/shard-poller.ts';
import { startChangeFeed, type ChangeFeed, type ChangeRow } from './change-feed.ts';
import { monitorConfig } from './changes.ts';
import { MEMBERS_CHANNEL, shardKey, shardKeysPayload } from './member-watch.ts';
import type { RelayOptions } from './relay.ts';
import { shardOf, shardPollerId } from './shards.ts';

const CURSOR = 'monitor-members';
const RECONCILE_MS = 10_000;

/** The same settings as the monitor relay's: the two consumers run side by side. */
export type MembershipOptions = RelayOptions;

export interface MembershipRelay extends ChangeFeed {
  /** Starts the pollers of every shard that has members (the periodic reconcile, on demand). */
  reconcile(): Promise<void>;
}

export function startMembershipRelay(opts: MembershipOptions): MembershipRelay {
  const { db, client } = opts;
  const log = opts.log.child({ component: 'membership-relay' });

  const ensurePoller = async (platform: string, shard: number) => {
    const input: ShardPollerInput = { platform, shard, runs: 0, lastRun: null, due: null };
    // A start that finds the chain running is a no-op: no signal, no workflow task.
    await client.workflow.start<typeof shardPoller>('shardPoller', {
      workflowId: shardPollerId(opts.taskQueue, platform, shard),
      taskQueue: opts.taskQueue,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      typedSearchAttributes: pollerSearchAttributes({ platform, shard }),
    });
  };

  const apply = async (changes: ChangeRow[], trx: Knex.Transaction) => {
    const gone: number[] = [];
    const rows: Record<string, unknown>[] = [];
    const touched = new Map<string, { platform: string; shard: number; joined: boolean }>();
    for (const change of changes) {
      const item = change.item;
      const ref = parseEventRef(item.website, item.event, item.region);
      if (change.op === 'delete' || item.deleted || !item.task_active || !ref.ok) {
        // The API validates targets on create, so only rows from before that check lack one.
        if (!ref.ok && change.op !== 'delete') log.warn({ item_id: item.id, reason: ref.message }, 'item has no scrapeable target; not monitored');
        gone.push(item.id);
        continue;
      }
      const target = targetKey(ref.ref);
      const shard = shardOf(target, opts.shardsPerPlatform);
      touched.set(shardKey(ref.ref.platform, shard), { platform: ref.ref.platform, shard, joined: true });
      rows.push({
        item_id: item.id,
        account_id: item.client_id,
        target,
        platform: ref.ref.platform,
        shard,
        ref: JSON.stringify(ref.ref),
        item: JSON.stringify({ website: item.website, event: item.event, region: item.region }),
        config: JSON.stringify(monitorConfig(item)),
        version: change.id,
      });
    }
    if (gone.length) {
      // A paused or deleted item's cooldowns go with it: a resumed item starts afresh, as its baseline does.
      await trx('monitor_cooldowns').whereIn('item_id', gone).delete();
      const removed: { platform: string; shard: number }[] = await trx('monitor_members').whereIn('item_id', gone).delete().returning(['platform', 'shard']);
      for (const r of removed) {
        const key = shardKey(r.platform, r.shard);
        if (!touched.has(key)) touched.set(key, { platform: r.platform, shard: r.shard, joined: false });
      }
    }
    if (rows.length) {
      // A replayed batch (its commit failed) writes the same versions again: only newer configs win.
      await trx.raw(
        `? ON CONFLICT (item_id) DO UPDATE SET config = EXCLUDED.config, version = EXCLUDED.version, updated_at = now()
         WHERE monitor_members.version < EXCLUDED.version`,
        [trx('monitor_members').insert(rows)],
      );
      // An item moved to another event starts its cooldowns afresh: its sections are another event's.
      await trx('monitor_cooldowns')
        .whereIn(
          'item_id',
          rows.map((r) => r.item_id as number),
        )
        .whereNotExists((q) => q.select(1).from('monitor_members').whereRaw('monitor_members.item_id = monitor_cooldowns.item_id AND monitor_members.target = monitor_cooldowns.target'))
        .delete();
    }
    if (touched.size === 0) return;
    await trx.raw('SELECT pg_notify(?, ?)', [MEMBERS_CHANNEL, shardKeysPayload(touched.keys())]);
    // Inside the transaction: if Temporal refuses, the batch (and its cursor) is applied again.
    await Promise.all([...touched.values()].filter((t) => t.joined).map((t) => ensurePoller(t.platform, t.shard)));
  };

  const feed = startChangeFeed({ db, connectionString: opts.connectionString, cursor: CURSOR, log, apply });

  const reconcile = async () => {
    const shards: { platform: string; shard: number }[] = await db('monitor_members').distinct('platform', 'shard');
    await Promise.all(shards.map((s) => ensurePoller(s.platform, s.shard)));
  };
  const timer = setInterval(() => {
    reconcile().catch((err: unknown) => log.warn({ err }, 'could not reconcile the shard pollers; will retry'));
  }, RECONCILE_MS);
  timer.unref();

  return {
    drain: feed.drain,
    reconcile,
    stop: async () => {
      clearInterval(timer);
      await feed.stop();
    },
  };
}
