// The membership relay: turns watchlist changes into the shard pollers' members. For each item's
// newest change it upserts (active, monitorable item) or deletes (paused, deleted) its row in
// monitor_members, in the transaction that moves its cursor over watchlist_changes, then
// NOTIFYs the touched shards and makes sure their shardPoller workflows run. Nothing here goes
// through a per-item workflow, so 10,000 new items cost 10,000 row writes and a few dozen
// idempotent workflow starts, not 10,000 workflow tasks.
//
// A config update keeps the member's baseline; a member that (re)joins starts without one, so
// its first poll sets it. A periodic reconcile starts the pollers of shards that have members,
// in case a poller ended (no members) in the instant a new member arrived, or a start was
// refused: the member rows commit anyway (a running poller takes new and deleted items at once,
// during a Temporal outage too), and the reconcile retries every 3 s until the start works.
//
// Only served accounts have members (src/accounts/service-state.ts): an item of an account that
// is not served is treated as paused, and the service sweep's hooks (memberServiceHooks) take an
// account's members out when it stops being served and put them back, without baselines, when
// it is served again, so nothing that changed meanwhile is notified. A target watched by
// another, served account keeps being polled for it. The hooks write rows and NOTIFY only; the
// pollers of a resumed account's shards are started afterwards by the signal relay
// (memberServiceSignals, src/accounts/service-signals.ts), as the relay's own starts run after
// its batch commits: no Temporal call is made while account rows are locked (issue 38).
import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import type { Db } from '../../db/connection.ts';
import { servedStates, type ServiceHooks } from '../accounts/service-state.ts';
import type { ServiceSignals } from '../accounts/service-signals.ts';
import { renderItem } from '../apis/watchlist/store.ts';
import type { WatchlistItem } from '../apis/watchlist/schema.ts';
import { parseEventRef, targetKey } from '../platform/event-ref.ts';
import { callTemporal } from '../../temporal/client.ts';
import { pollerSearchAttributes } from '../../temporal/search-attributes.ts';
import type { ShardPollerInput, shardPoller } from '../../workflows/shard-poller.ts';
import { OutageLog } from '../runtime/outage-log.ts';
import { startChangeFeed, type ChangeFeed, type ChangeRow } from './change-feed.ts';
import { monitorConfig } from './changes.ts';
import { MEMBERS_CHANNEL, shardKey, shardKeysPayload } from './member-watch.ts';
import type { RelayOptions } from './relay.ts';
import { shardOf, shardPollerId } from './shards.ts';

const CURSOR = 'monitor-members';
const RECONCILE_MS = 10_000;
/** After a refused poller start: a Temporal back from an outage starts them within this. */
const RECONCILE_RETRY_MS = 3_000;
/**
 * A shard whose poller this relay started (or found running) this recently is not started again
 * for the next batch: during an import the relay committed up to ~40 batches a second (10 with
 * GATHER_MS), each followed by its shards' starts, and those no-op starts on running chains kept
 * the Temporal server at 20-25 % of a core (docs/performance.md).
 * A poller ends only when its shard has no members left; a shard this relay empties is started
 * again at once (its memory is dropped), and one emptied elsewhere (an account suspended, its
 * targets retired) is covered by the reconcile, as the instant before an idle poller's end is.
 */
const STARTED_FRESH_MS = 1_000;
/**
 * Batches start at least this far apart: an import's creates commit in ~40 transactions a second,
 * each waking the relay, and each batch is ~10 statements and a reload of its shards. A new item
 * joins its poller at most this much later.
 */
const GATHER_MS = 100;

/** The same settings as the monitor relay's: the two consumers run side by side. */
export interface MembershipOptions extends RelayOptions {
  /** STARTED_FRESH_MS unless given (tests widen it, so a step's timing cannot decide it). */
  startedFreshMs?: number;
}

export interface MembershipRelay extends ChangeFeed {
  /** Starts the pollers of every shard that has members (the periodic reconcile, on demand). */
  reconcile(): Promise<void>;
}

interface Touched {
  platform: string;
  shard: number;
  joined: boolean;
}

/** The monitor_members row of an active item, or null when it has no scrapeable target. */
function memberRow(item: WatchlistItem, version: number, shardsPerPlatform: number): { row: Record<string, unknown>; platform: string; shard: number } | null {
  const ref = parseEventRef(item.website, item.event, item.region);
  if (!ref.ok) return null;
  const target = targetKey(ref.ref);
  const shard = shardOf(target, shardsPerPlatform);
  return {
    platform: ref.ref.platform,
    shard,
    row: {
      item_id: item.id,
      account_id: item.client_id,
      target,
      platform: ref.ref.platform,
      shard,
      ref: JSON.stringify(ref.ref),
      item: JSON.stringify({ website: item.website, event: item.event, region: item.region }),
      config: JSON.stringify(monitorConfig(item)),
      version,
    },
  };
}

function pollerStarter(client: Client, taskQueue: string) {
  return async (platform: string, shard: number) => {
    const input: ShardPollerInput = { platform, shard, runs: 0, lastRun: null, due: null };
    // A start that finds the chain running is a no-op: no signal, no workflow task.
    await callTemporal(client, () =>
      client.workflow.start<typeof shardPoller>('shardPoller', {
        workflowId: shardPollerId(taskQueue, platform, shard),
        taskQueue,
        args: [input],
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: pollerSearchAttributes({ platform, shard }),
      }),
    );
  };
}

/** Removes members (and their cooldowns) in `trx`; notes the shards they leave. */
async function removeMembers(trx: Knex.Transaction, itemIds: Knex.QueryBuilder | number[], touched: Map<string, Touched>): Promise<void> {
  // A removed item's cooldowns go with it: a resumed item starts afresh, as its baseline does.
  await trx('monitor_cooldowns').whereIn('item_id', itemIds).delete();
  const removed: { platform: string; shard: number }[] = await trx('monitor_members').whereIn('item_id', itemIds).delete().returning(['platform', 'shard']);
  for (const r of removed) {
    const key = shardKey(r.platform, r.shard);
    if (!touched.has(key)) touched.set(key, { platform: r.platform, shard: r.shard, joined: false });
  }
}

/**
 * Tells the touched shards' running pollers (NOTIFY, delivered at commit): a poller already
 * running polls a new item, and stops polling a deleted one, during a Temporal outage too.
 */
async function announce(trx: Knex.Transaction, touched: Map<string, Touched>): Promise<void> {
  if (touched.size === 0) return;
  await trx.raw('SELECT pg_notify(?, ?)', [MEMBERS_CHANNEL, shardKeysPayload(touched.keys())]);
}

/** The shards that gained members: their pollers are started once the members have committed. */
function joinedShards(touched: Map<string, Touched>): Touched[] {
  return [...touched.values()].filter((t) => t.joined);
}

/**
 * The service sweep's hooks for the monitors, database only: an account no longer served leaves
 * every shard; served again, its active items join without baselines (their first poll sets
 * one). Their shards' pollers are started by memberServiceSignals, after the sweep commits.
 */
export function memberServiceHooks(opts: Pick<MembershipOptions, 'shardsPerPlatform'>): ServiceHooks {
  return {
    suspend: async (trx, accountIds) => {
      const touched = new Map<string, Touched>();
      await removeMembers(trx, trx('monitor_members').whereIn('account_id', accountIds).select('item_id'), touched);
      await announce(trx, touched);
    },
    resume: async (trx, accountIds) => {
      const rows: Record<string, unknown>[] = await trx('watchlist_items as i')
        .whereIn('i.client_id', accountIds)
        .where({ 'i.deleted': false, 'i.task_active': true })
        .select('i.*', trx.raw('(SELECT coalesce(max(c.id), 0) FROM watchlist_changes c WHERE c.item_id = i.id) AS change_id'));
      const touched = new Map<string, Touched>();
      const members: Record<string, unknown>[] = [];
      for (const r of rows) {
        // The version is the item's last change: the relay applies a later one over it, never an earlier one.
        const m = memberRow(renderItem(r as Parameters<typeof renderItem>[0]), Number(r.change_id), opts.shardsPerPlatform);
        if (!m) continue;
        members.push(m.row);
        touched.set(shardKey(m.platform, m.shard), { platform: m.platform, shard: m.shard, joined: true });
      }
      for (let i = 0; i < members.length; i += 1_000) {
        await trx('monitor_members').insert(members.slice(i, i + 1_000)).onConflict('item_id').ignore();
      }
      await announce(trx, touched);
    },
  };
}

/** The shards with a target to poll among these accounts' members (one whose targets are all retired has none). */
function pollableShards(db: Knex, accountIds?: readonly number[]): Promise<{ platform: string; shard: number }[]> {
  return db('monitor_members as m')
    .leftJoin('monitor_target_status as s', 's.target', 'm.target')
    .modify((q) => {
      if (accountIds) q.whereIn('m.account_id', accountIds);
    })
    .where((q) => q.whereNull('s.retired_at').orWhereRaw('m.updated_at > s.retired_at'))
    .distinct('m.platform', 'm.shard');
}

/**
 * What the monitors ask of Temporal when an account is served again, sent by the signal relay
 * after the sweep committed: the pollers of its members' shards run (a start that finds the
 * chain running is a no-op, so a repeat is harmless). A refused start throws: the relay retries.
 */
export function memberServiceSignals(opts: { db: Db; client: Client; taskQueue: string }): ServiceSignals {
  const ensurePoller = pollerStarter(opts.client, opts.taskQueue);
  return {
    name: 'shard pollers',
    resumed: async (accountIds) => {
      const shards = await pollableShards(opts.db, accountIds);
      await Promise.all(shards.map((s) => ensurePoller(s.platform, s.shard)));
    },
  };
}

export function startMembershipRelay(opts: MembershipOptions): MembershipRelay {
  const { db, client } = opts;
  const log = opts.log.child({ component: 'membership-relay' });
  const startPoller = pollerStarter(client, opts.taskQueue);
  /** Shard key → when this relay last saw its poller started or running (performance.now()). */
  const startedAt = new Map<string, number>();
  const ensurePoller = async (platform: string, shard: number, force = false) => {
    const key = shardKey(platform, shard);
    const at = startedAt.get(key);
    if (!force && at !== undefined && performance.now() - at < (opts.startedFreshMs ?? STARTED_FRESH_MS)) return;
    const asked = performance.now();
    await startPoller(platform, shard);
    startedAt.set(key, asked);
  };

  const apply = async (changes: ChangeRow[], trx: Knex.Transaction) => {
    const gone: number[] = [];
    const rows: Record<string, unknown>[] = [];
    const touched = new Map<string, Touched>();
    // Share-locked until the batch commits: a sweep suspending one of these accounts waits for it.
    const served = await servedStates(
      trx,
      changes.map((c) => c.item.client_id),
    );
    for (const change of changes) {
      const item = change.item;
      const member = change.op === 'delete' || item.deleted || !item.task_active || !served.get(item.client_id) ? null : memberRow(item, change.id, opts.shardsPerPlatform);
      if (!member) {
        // The API validates targets on create, so only rows from before that check lack one.
        if (change.op !== 'delete' && !item.deleted && item.task_active && served.get(item.client_id)) {
          log.warn({ item_id: item.id }, 'item has no scrapeable target; not monitored');
        }
        gone.push(item.id);
        continue;
      }
      touched.set(shardKey(member.platform, member.shard), { platform: member.platform, shard: member.shard, joined: true });
      rows.push(member.row);
    }
    if (gone.length) await removeMembers(trx, gone, touched);
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
    await announce(trx, touched);
    // A shard that lost members may have lost its last: its poller may end, so it is started again.
    for (const [key, t] of touched) if (!t.joined) startedAt.delete(key);
    // Started once the batch has committed, outside its transaction: it holds the share locks of
    // its accounts' states, which a sweep must not wait on for a Temporal call. A refused start
    // goes to the reconcile, which retries it every few seconds.
    const joined = joinedShards(touched);
    if (joined.length === 0) return undefined;
    return async () => {
      await Promise.all(joined.map((t) => ensurePoller(t.platform, t.shard).catch(reconcileSoon)));
    };
  };

  const feed = startChangeFeed({ db, connectionString: opts.connectionString, cursor: CURSOR, log, apply, gatherMs: GATHER_MS });

  const reconcile = async () => {
    // Shards with a target to poll: one whose targets are all retired (src/monitors/target-status.ts) has none.
    const shards = await pollableShards(db);
    await Promise.all(shards.map((s) => ensurePoller(s.platform, s.shard, true)));
  };
  const reconciling = new OutageLog(log, 'start the shard pollers');
  let soon: NodeJS.Timeout | null = null;
  let stopped = false;
  const runReconcile = () =>
    reconcile().then(
      () => reconciling.succeeded(),
      (err: unknown) => {
        reconciling.failed(err);
        reconcileSoon();
      },
    );
  /** A poller start was refused (Temporal away): try again in a few seconds until it works. */
  function reconcileSoon(err?: unknown): void {
    if (err !== undefined) reconciling.failed(err);
    if (soon || stopped) return;
    soon = setTimeout(() => {
      soon = null;
      void runReconcile();
    }, RECONCILE_RETRY_MS);
    soon.unref();
  }
  const timer = setInterval(() => void runReconcile(), RECONCILE_MS);
  timer.unref();

  return {
    drain: feed.drain,
    reconcile,
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      if (soon) clearTimeout(soon);
      await feed.stop();
    },
  };
}
