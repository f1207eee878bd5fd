// pollShard: the long-running poll loop of one shard of watched targets (Temporal's "frequent
// polling" pattern: the loop lives in one activity that heartbeats, not in a timer plus a
// workflow task plus an activity per poll). It polls each member target on its schedule
// (src/monitors/poll-schedule.ts), paced to the shard's share of each exit's request budget
// (src/monitors/exit-pacers.ts: an exit is a proxy of SCRAPE_PROXY_URLS, or this machine; each
// gets SCRAPE_RPS_PER_PROXY / MONITOR_SHARDS_PER_PLATFORM, so the budget holds whichever workers
// run which shards), compares each scrape with the last snapshot in memory, and only when it
// changed (or a member waits for its baseline) records it (src/monitors/record-poll.ts: the
// snapshot, every member's notifications and baselines, in one transaction).
//
// The budget is shared between the accounts watching the shard's targets (issue 25): a poll is
// launched only when the pacer's next slot has come, and the slot goes to the due target that
// src/monitors/fair-share.ts picks (the least-served account's first), not to whichever target
// fell due first; polls in flight are shared the same way. So one account's backlog of slow
// targets cannot delay another account's targets.
//
// A poll the platform refuses (403, 429, its challenge page, or a proxy that failed) is charged to
// the target until its exit is shown to be at fault (egress/refusals.ts, issue 36): the target
// backs off on its own (doubling, capped, the platform's Retry-After first) with a status row
// saying so, and is asked once per back-off step; the exit stays in use for every other target.
// When refusals of targets that pass elsewhere show the exit is at fault, the exit cools down for
// every shard of the process (egress/exit-pool.ts), the targets it had charged are cleared, and
// they go out through a healthy exit at once, within the interval. Only when every exit of the
// platform cools down do the targets wait, until the first is back, with a status row saying so.
// The same holds without proxies: the platform's one exit is this machine, and its pacer pauses
// only when the machine's address is at fault, never for one refused event.
//
// A target whose event keeps answering not-found is retired (src/monitors/target-status.ts):
// its items are told once, and it is left out of the schedule until an item on it is written.
//
// Every poll that gets an answer or a failure about the target is a check: its time is noted in
// memory and written with the process's other checks once a second, in one statement
// (src/monitors/check-log.ts), for the items' `last_checked_at` (issue 38).
//
// A target whose members hold a change in a cooldown (src/monitors/cooldown.ts) is recorded at
// its first poll after the hold's end even when nothing changed, so the hold is released within
// a poll interval of it; the due times come back from each record and are re-read at reloads.
//
// Members come from monitor_members, reloaded when the membership relay NOTIFYs this shard
// (member-watch.ts) and every half minute anyway. The heartbeat carries every target's next due
// time: when a worker dies, another takes the loop over after the heartbeat timeout and keeps
// the schedule; nothing is missed (baselines live in the database, so the next poll diffs from
// the last recorded state) and nothing is written twice (record-poll's locks and dedupe keys).
// A run returns after MONITOR_POLL_RUN_MS with its schedule, so the workflow's history stays
// bounded; it returns `idle` once the shard has had no members for an interval. When its worker
// begins to stop, every run returns its schedule at once (handBack) rather than polling on
// through the shutdown grace that on-demand scrapes get: a poll cut short is simply due again,
// and the shard's next run starts on whichever worker serves the queue.
import { setMaxListeners } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import { CancelledFailure, Context } from '@temporalio/activity';
import type { Db } from '../db/connection.ts';
import type { Logger } from '../src/logger.ts';
import type { MemberWatch } from '../src/monitors/member-watch.ts';
import { shardKey } from '../src/monitors/member-watch.ts';
import type { IncidentRule } from '../src/monitors/platform-incidents.ts';
import { CheckLog } from '../src/monitors/check-log.ts';
import { FairShare, type PollOrder } from '../src/monitors/fair-share.ts';
import type { PollMetrics, PollOutcome } from '../src/monitors/poll-metrics.ts';
import { ShardSchedule, type ScheduledTarget } from '../src/monitors/poll-schedule.ts';
import { recordPoll, type KnownSnapshot } from '../src/monitors/record-poll.ts';
import { clearStatus, recordFailure, retireTarget } from '../src/monitors/target-status.ts';
import { carryUnknown, snapshotHash, toSnapshot, type TargetSnapshot } from '../src/monitors/snapshot.ts';
import type { EventRef } from '../src/platform/event-ref.ts';
import type { Scrapers } from '../src/scrapers/index.ts';
import { OutageLog } from '../src/runtime/outage-log.ts';
import { ExitPacers } from '../src/monitors/exit-pacers.ts';
import type { Exit, ExitPools } from '../src/scrapers/egress/exit-pool.ts';
import { ScrapeFailure } from '../src/scrapers/types.ts';
import type { ShardRunSummary } from '../workflows/monitor-messages.ts';

export interface PollShardInput {
  platform: string;
  shard: number;
  /** Target key → next due time from the previous run (null for a new chain). */
  due: Record<string, number> | null;
}

export interface PollShardResult {
  /** The shard had no members for a whole interval: the workflow ends. */
  idle: boolean;
  due: Record<string, number>;
  summary: ShardRunSummary;
}

export interface PollActivities {
  pollShard(input: PollShardInput): Promise<PollShardResult>;
}

export interface ShardPolling {
  activities: PollActivities;
  /**
   * Ends every run in flight now, each returning its schedule. Call it once the worker has
   * stopped taking tasks (Worker.shutdown), or the shard's next run could start here again.
   */
  handBack(): void;
}

export interface PollShardOptions {
  db: Db;
  scrapers: Scrapers;
  members: MemberWatch;
  metrics: PollMetrics;
  log: Logger;
  intervalMs: number;
  jitterRatio: number;
  /** Where each platform's polls leave from, and each exit's request budget (shared by the process). */
  exits: ExitPools;
  shardsPerPlatform: number;
  /** How long one activity run lasts before it hands its schedule back (MONITOR_POLL_RUN_MS). */
  runMs: number;
  /** How long a target answers not-found before it is retired (MONITOR_RETIRE_AFTER_MS). */
  retireAfterMs: number;
  /** The platform incident rule, which a retirement must not pre-empt (MONITOR_INCIDENT_*). */
  incidentRule: IncidentRule;
  /** Which due target gets the next slot (MONITOR_POLL_ORDER; default `fair`). */
  order?: PollOrder;
  /** Where each check's time goes (src/monitors/check-log.ts); default: one for the process's shard runs. */
  checks?: CheckLog;
  /** MONITOR_TAKEOVER_GUARD (default on): one poller per shard around a takeover. */
  takeoverGuard?: boolean;
}

/** Polls of one shard in flight at once (the HTTP fetcher bounds the process as a whole). */
const MAX_IN_FLIGHT = 64;
/** The most abort listeners one poll holds at once: its wait for a session and two requests. */
const LISTENERS_PER_POLL = 3;
/** Members are re-read at least this often, NOTIFY or not. */
const FULL_RELOAD_MS = 30_000;
/** A burst of NOTIFYs (many items created at once) reloads at most this often. */
const MIN_RELOAD_GAP_MS = 1_000;
/** The longest the loop sleeps, so heartbeats and the run's end are never late. */
const MAX_SLEEP_MS = 1_000;
/** A retry polls once the shard's targets have gone unchecked this many intervals (the previous attempt stopped). */
const QUIET_INTERVALS = 1.5;
/** ...or once it has waited this long: a previous attempt that will not stop does not keep the shard unowned. */
const QUIET_WAIT_MS = 15_000;
/**
 * A poll is launched once the pacer's next slot is at most this far off (it then waits out the
 * rest), and the target is chosen then: slots are not handed out ahead to whichever was due first.
 */
const SEND_AHEAD_MS = 5;
/**
 * The loop wakes for every target due (dozens of times a second on a full shard); its schedule
 * goes into a heartbeat (and the gauges are updated) at most this often. The SDK sends at most
 * one heartbeat per 0.8 × the heartbeat timeout anyway: this only spares building the details.
 */
const HEARTBEAT_EVERY_MS = 1_000;

interface TargetMemory {
  hash: string;
  known: KnownSnapshot;
}

interface MemberTarget {
  target: string;
  ref: EventRef;
  needs_baseline: boolean;
  /** The accounts watching it. */
  accounts: string[];
  /** Each member's account and priority (one per item on it, aligned). */
  member_accounts: string[];
  member_priorities: number[];
  /** From its status row: failures so far (null: none), and its retirement. */
  failures: number | null;
  retired_at: Date | null;
  /** An item on it was written after its retirement: it is polled again. */
  revived: boolean | null;
}

/**
 * Per target, each watching account's priority on it (aligned with `accounts`): the highest of
 * its items there, as an account watching one event twice means the more important of the two.
 */
function watcherPriorities(live: readonly MemberTarget[]): Map<string, number[]> {
  return new Map(
    live.map((r) => {
      const top = new Map<string, number>();
      r.member_accounts.forEach((id, i) => top.set(String(id), Math.max(top.get(String(id)) ?? -Infinity, r.member_priorities[i] ?? 0)));
      return [r.target, r.accounts.map((id) => top.get(String(id)) ?? 0)];
    }),
  );
}

/** What the due targets left unlaunched wait for: the pacer's slot at `until`, or room in flight. */
type Backlog = { until: number } | 'room' | null;

class ShardLoop {
  private readonly schedule: ShardSchedule;
  private readonly pacers: ExitPacers;
  private readonly fair: FairShare;
  /** Due targets wait for a poll in flight to end: each end wakes the loop. */
  private waitingForRoom = false;
  /** A poll's exit was blocked and the target is due again now: its end wakes the loop. */
  private rerouted = false;
  /** Targets whose back-off an exit's fault lifted while their poll was still out (cleared). */
  private readonly clearWhenDone = new Set<string>();
  private readonly memory = new Map<string, TargetMemory>();
  private readonly needsBaseline = new Set<string>();
  /** Target → when the earliest held cooldown of its members ends (ms). */
  private readonly cooldownDue = new Map<string, number>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly log: Logger;
  private wakeUp: () => void = () => {};
  /** When the loop's current sleep ends (-Infinity while it runs). */
  private sleepingUntil = -Infinity;
  /** Aborted by handBack: the run ends as if its time were up, and polls in flight are dropped. */
  private readonly handedBack = new AbortController();
  /** The activity's cancellation or the hand-back, whichever comes first. */
  private readonly stopSignal: AbortSignal;
  private reloadWanted = true;
  /** Polls whose scrape worked but whose record failed: logged once per database outage. */
  private readonly recording: OutageLog;
  /** Targets with a failure on record that this poller did not see (reload). */
  private readonly statusToClear = new Set<string>();
  private lastReload = 0;
  private reported = { targets: 0, blocked: 0 };
  readonly summary: ShardRunSummary = { targets: 0, polls: 0, changes: 0, notifications: 0, blocked: 0, endedAt: '' };

  constructor(
    private readonly opts: PollShardOptions,
    private readonly input: PollShardInput,
    private readonly ctx: Context,
    private readonly checks: CheckLog,
  ) {
    this.schedule = new ShardSchedule({ intervalMs: opts.intervalMs, jitterRatio: opts.jitterRatio });
    const pool = opts.exits.for(input.platform);
    if (!pool) throw new Error(`no exits for platform ${input.platform}`);
    this.pacers = new ExitPacers(pool, opts.shardsPerPlatform);
    this.fair = new FairShare({ maxInFlight: MAX_IN_FLIGHT, order: opts.order });
    this.log = opts.log.child({ platform: input.platform, shard: input.shard });
    this.recording = new OutageLog(this.log, 'record polls');
    // Every poll in flight listens to the activity's cancellation (its fetches, its waits; a pf_01
    // poll fetches two arms and may wait for a session): more than Node's default listeners on a
    // full shard, which is expected, not a leak.
    setMaxListeners(LISTENERS_PER_POLL * MAX_IN_FLIGHT + 16, ctx.cancellationSignal);
    this.stopSignal = AbortSignal.any([ctx.cancellationSignal, this.handedBack.signal]);
    setMaxListeners(LISTENERS_PER_POLL * MAX_IN_FLIGHT + 16, this.stopSignal);
  }

  handBack(): void {
    this.handedBack.abort();
    this.wakeUp();
  }

  async run(): Promise<PollShardResult> {
    const carried = (this.ctx.info.heartbeatDetails as { due?: Record<string, number> } | undefined)?.due ?? this.input.due;
    const unsubscribe = this.opts.members.subscribe(shardKey(this.input.platform, this.input.shard), () => {
      this.reloadWanted = true;
      this.wakeUp();
    });
    const stopClearing = this.pacers.pool.onCleared((targets) => this.cleared(targets));
    const cancelled = this.ctx.cancellationSignal;
    const endsAt = Date.now() + this.opts.runMs;
    let emptySince: number | null = null;
    let idle = false;
    let lastBeat = 0;
    const guard = this.opts.takeoverGuard !== false;
    const leaseMs = (guard ? this.ctx.info.heartbeatTimeoutMs : undefined) ?? Infinity;
    let lastTurn = Date.now();
    try {
      // A retry takes the shard from an attempt that may still be polling (its worker cut off from
      // Temporal, which timed it out meanwhile): it waits until that one has stopped.
      if (guard && this.ctx.info.attempt > 1) await this.waitForQuietShard();
      for (let first = true; !this.stopSignal.aborted; first = false) {
        const now = Date.now();
        // The loop turns at least once a second (MAX_SLEEP_MS) but for a reload. A turn later than
        // the heartbeat timeout means this process stood still that long (SIGSTOP, a paused VM, a
        // stalled host) or waited that long on the database, and called no heartbeat meanwhile:
        // Temporal has likely given the shard to another attempt, which polls it now. So this one
        // asks the platform nothing more: the run ends as if its time were up (the server refuses
        // its completion if the attempt did time out; if not, the next run goes on at once).
        if (now - lastTurn >= leaseMs) {
          this.log.warn({ stoodStillMs: now - lastTurn, heartbeatTimeoutMs: leaseMs }, 'the shard poll stood still past its heartbeat timeout: it stops without polling (another attempt has the shard)');
          break;
        }
        lastTurn = now;
        if ((this.reloadWanted && now - this.lastReload >= MIN_RELOAD_GAP_MS) || now - this.lastReload >= FULL_RELOAD_MS) {
          await this.reload(first ? carried : null);
        }
        // Retired targets do not count: a shard left with only those ends, and a write to one of
        // their items starts it again (the membership relay), as a new member would.
        if (this.schedule.targets.size === 0) {
          emptySince ??= now;
          if (now - emptySince >= this.opts.intervalMs && this.inFlight.size === 0) {
            idle = true;
            break;
          }
        } else {
          emptySince = null;
        }
        if (now >= endsAt) break;
        const backlog = this.launchDue(now);
        if (now - lastBeat >= HEARTBEAT_EVERY_MS) {
          lastBeat = now;
          this.report(now);
          this.ctx.heartbeat({ due: this.schedule.dueTimes() });
        }
        await this.sleep(now, endsAt, backlog);
      }
      await Promise.allSettled(this.inFlight);
      if (cancelled.aborted) throw new CancelledFailure('the shard poll was cancelled');
    } finally {
      unsubscribe();
      stopClearing();
      this.report(Date.now(), true);
    }
    this.summary.targets = this.schedule.targets.size;
    this.summary.blocked = this.schedule.blockedCount(Date.now());
    this.summary.endedAt = new Date().toISOString();
    return { idle, due: this.schedule.dueTimes(), summary: this.summary };
  }

  /**
   * Until no target of the shard has been checked for QUIET_INTERVALS intervals (the previous
   * attempt's polls, which the check log writes within a second), at most QUIET_WAIT_MS,
   * heartbeating meanwhile. A previous attempt on a dead or frozen worker checks nothing, and the
   * wait ends at once; one still polling (cut off from Temporal) stops when its next heartbeat
   * is refused, and its targets were polled all along meanwhile.
   */
  private async waitForQuietShard(): Promise<void> {
    const deadline = Date.now() + QUIET_WAIT_MS;
    const { db } = this.opts;
    for (;;) {
      const row = (await db('monitor_target_checks as c')
        .join('monitor_members as m', 'm.target', 'c.target')
        .where({ 'm.platform': this.input.platform, 'm.shard': this.input.shard })
        .first(db.raw('(extract(epoch FROM now() - max(c.checked_at)) * 1000)::float8 AS quiet_ms'))) as { quiet_ms: number | null } | undefined;
      const quietMs = row?.quiet_ms ?? Infinity;
      if (quietMs >= QUIET_INTERVALS * this.opts.intervalMs) return;
      if (Date.now() >= deadline) {
        this.log.warn({ quietMs: Math.round(quietMs), waitedMs: QUIET_WAIT_MS }, 'the previous attempt of the shard poll still checks targets: taking the shard over anyway');
        return;
      }
      this.ctx.heartbeat(this.ctx.info.heartbeatDetails);
      await delay(Math.min(this.opts.intervalMs, 1_000), undefined, { signal: this.stopSignal }).catch(() => {});
      if (this.stopSignal.aborted) return;
    }
  }

  /**
   * An exit was found at fault (egress/refusals.ts): the targets whose refusals through it were
   * charged to them back off no longer, and are due at once (through a healthy exit).
   */
  private cleared(targets: readonly string[]): void {
    const now = Date.now();
    let any = false;
    for (const key of targets) {
      const t = this.schedule.targets.get(key);
      if (!t) continue;
      // Its poll is still recording the refusal: cleared when it ends (launch).
      if (t.inFlight) this.clearWhenDone.add(key);
      else if (t.blockedUntil !== null) {
        t.dueAt = now;
        t.blockedUntil = null;
        any = true;
      }
    }
    if (any) this.wakeUp();
  }

  /**
   * Launches due targets while the pacer has a slot now and the fair share picks one; returns
   * what the rest wait for.
   */
  private launchDue(now: number): Backlog {
    this.waitingForRoom = false;
    const due = this.schedule.due(now);
    while (due.length > 0) {
      const slot = this.pacers.next(now);
      // Every exit cooling down: the due targets wait for the first to be back.
      if (slot.exit === null) return { until: slot.at };
      if (slot.at > now + SEND_AHEAD_MS) return { until: slot.at - SEND_AHEAD_MS };
      const i = this.fair.pick(due);
      if (i < 0) {
        this.waitingForRoom = true;
        return 'room';
      }
      const [t] = due.splice(i, 1);
      this.launch(t!, this.pacers.reserve(slot.exit, now), slot.exit);
    }
    return null;
  }

  private sleep(now: number, endsAt: number, backlog: Backlog): Promise<void> {
    // Waiting for room, a target of another account may still fall due and find some.
    const next = backlog === null ? this.schedule.nextDueAt() : backlog === 'room' ? this.schedule.nextDueAfter(now) : backlog.until;
    const until = Math.min(endsAt, now + MAX_SLEEP_MS, next ?? Infinity, this.reloadWanted ? this.lastReload + MIN_RELOAD_GAP_MS : Infinity);
    this.sleepingUntil = until;
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.stopSignal.removeEventListener('abort', done);
        this.wakeUp = () => {};
        this.sleepingUntil = -Infinity;
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, until - now));
      this.stopSignal.addEventListener('abort', done);
      this.wakeUp = done;
    });
  }

  /**
   * Re-reads the shard's member targets, with the accounts watching each and their status; new
   * targets get their last stored snapshot as memory and their failures so far. Retired targets
   * are left out, unless an item on one was written since: that one is polled afresh.
   */
  private async reload(carried: Record<string, number> | null): Promise<void> {
    this.reloadWanted = false;
    this.lastReload = Date.now();
    const { db } = this.opts;
    const rows: MemberTarget[] = await db('monitor_members as m')
      .leftJoin('monitor_target_status as s', 's.target', 'm.target')
      .where({ 'm.platform': this.input.platform, 'm.shard': this.input.shard })
      .groupBy('m.target')
      .select(
        'm.target',
        db.raw('(array_agg(m.ref))[1] AS ref'),
        db.raw('bool_or(m.baseline_snapshot_id IS NULL) AS needs_baseline'),
        db.raw('array_agg(DISTINCT m.account_id) AS accounts'),
        db.raw('array_agg(m.account_id) AS member_accounts'),
        db.raw(`array_agg(coalesce((m.config->>'priority')::int, 0)) AS member_priorities`),
        db.raw('max(s.failures) AS failures'),
        db.raw('max(s.retired_at) AS retired_at'),
        db.raw('max(m.updated_at) > max(s.retired_at) AS revived'),
      );
    const live = rows.filter((r) => r.retired_at === null || r.revived === true);
    const revived = live.filter((r) => r.retired_at !== null).map((r) => r.target);
    // A fresh clock: the row goes (another shard run cannot hold it: a target has one shard).
    if (revived.length) await db('monitor_target_status').whereIn('target', revived).whereNotNull('retired_at').delete();
    const refs = new Map(live.map((r) => [r.target, r.ref]));
    this.needsBaseline.clear();
    for (const r of live) if (r.needs_baseline) this.needsBaseline.add(r.target);
    this.fair.sync(new Map(live.map((r) => [r.target, r.accounts.map(Number)])), await this.accountWeights(live), watcherPriorities(live));
    const added = this.schedule.sync(refs, Date.now(), carried);
    const byTarget = new Map(live.map((r) => [r.target, r]));
    for (const key of added) {
      const r = byTarget.get(key)!;
      if (r.retired_at === null && r.failures !== null) this.schedule.targets.get(key)!.failures = Number(r.failures);
    }
    // Failures on record for targets this poller has been polling without one: written by another
    // poller of the shard (frozen past its heartbeat timeout, then woken); the next success clears them.
    this.statusToClear.clear();
    for (const r of live) if (r.retired_at === null && r.failures !== null && this.schedule.targets.get(r.target)?.failures === 0) this.statusToClear.add(r.target);
    for (const key of this.memory.keys()) if (!refs.has(key)) this.memory.delete(key);
    await this.reloadCooldowns(refs);
    if (added.length) {
      const latest: { target: string; id: string; hash: string; data: TargetSnapshot }[] = await this.opts.db('target_snapshots')
        .distinctOn('target')
        .whereIn('target', added)
        .orderBy([{ column: 'target' }, { column: 'id', order: 'desc' }])
        .select('target', 'id', 'hash', 'data');
      for (const r of latest) this.memory.set(r.target, { hash: r.hash, known: { id: Number(r.id), data: r.data } });
    }
  }

  /**
   * Each watching account's share of its targets on the platform that are in this shard (the
   * fair share's weights, fair-share.ts): one count over the platform's members per reload.
   */
  private async accountWeights(live: readonly MemberTarget[]): Promise<Map<number, number>> {
    const here = new Map<number, number>();
    for (const r of live) for (const id of r.accounts) here.set(Number(id), (here.get(Number(id)) ?? 0) + 1);
    if (here.size === 0) return new Map();
    const rows: { account_id: string; targets: number }[] = await this.opts.db('monitor_members')
      .where({ platform: this.input.platform })
      .whereIn('account_id', [...here.keys()])
      .groupBy('account_id')
      .select('account_id', this.opts.db.raw('count(DISTINCT target)::int AS targets'));
    const weights = new Map<number, number>();
    for (const r of rows) {
      const id = Number(r.account_id);
      weights.set(id, Math.min(1, (here.get(id) ?? 0) / Math.max(1, r.targets)));
    }
    return weights;
  }

  /**
   * Re-reads when the shard's held cooldowns end. The earlier of the stored and the read time is
   * kept: a record in flight may have just written a hold this read missed, and an early time
   * costs one record that finds nothing due and returns the exact one.
   */
  private async reloadCooldowns(refs: ReadonlyMap<string, unknown>): Promise<void> {
    const rows: { target: string; due: Date }[] = await this.opts.db('monitor_cooldowns as c')
      .join('monitor_members as m', 'm.item_id', 'c.item_id')
      .where({ 'c.held': true, 'm.platform': this.input.platform, 'm.shard': this.input.shard })
      .groupBy('c.target')
      .select('c.target', this.opts.db.raw(`min(c.notified_at + make_interval(secs => coalesce((m.config->>'cooldown_seconds')::int, 0))) AS due`));
    for (const key of this.cooldownDue.keys()) if (!refs.has(key)) this.cooldownDue.delete(key);
    for (const r of rows) {
      const due = r.due.getTime();
      this.cooldownDue.set(r.target, Math.min(this.cooldownDue.get(r.target) ?? Infinity, due));
    }
  }

  private launch(t: ScheduledTarget, sendAt: number, exit: Exit): void {
    t.inFlight = true;
    this.fair.started(t.key);
    const p = this.poll(t, sendAt, exit).finally(() => {
      t.inFlight = false;
      if (this.clearWhenDone.delete(t.key) && t.blockedUntil !== null) {
        t.dueAt = Date.now();
        t.blockedUntil = null;
        this.rerouted = true;
      }
      this.inFlight.delete(p);
      this.fair.finished(t.key);
      // A target is left out of the sleep's end while its poll is out: with every target out (a
      // small shard), the loop slept its longest (1 s) and a 300 ms interval became 1 s, polls
      // bunched into waves (test/monitors/poll-cadence.test.ts). Its end wakes the loop if it is
      // due before the loop would wake.
      if (this.waitingForRoom || this.rerouted || t.dueAt < this.sleepingUntil) {
        this.rerouted = false;
        this.wakeUp();
      }
    });
    this.inFlight.add(p);
  }

  private async poll(t: ScheduledTarget, sendAt: number, exit: Exit): Promise<void> {
    const signal = this.stopSignal;
    const platform = this.input.platform;
    const pool = this.pacers.pool;
    // The slot is at most SEND_AHEAD_MS off; abortable all the same.
    if (sendAt > Date.now()) await delay(sendAt - Date.now(), undefined, { signal }).catch(() => {});
    if (signal.aborted || !this.schedule.targets.has(t.key)) return;
    // The exit was found at fault after the slot was handed out: the target stays due and takes
    // the next slot of a healthy exit (launchDue waits for one if none is).
    if (!exit.healthy(Date.now())) {
      this.rerouted = true;
      return;
    }
    // The target backs off after a refusal (charged by an on-demand scrape meanwhile, the pool
    // being the process's), or another asks for it now: not asked before that ends.
    const asking = pool.ask(t.key);
    if (asking.waitUntil > 0) {
      t.dueAt = Math.max(t.dueAt, asking.waitUntil);
      t.blockedUntil = asking.waitUntil;
      return;
    }
    const started = Date.now();
    const session = pool.proxied ? pool.session(exit, started) : undefined;
    this.opts.metrics.lateness.observe({ platform }, Math.max(0, started - t.dueAt) / 1000);
    let outcome: PollOutcome = 'unchanged';
    /** Past the scrape, what fails is ours (the database), not the platform's. */
    let answered = false;
    try {
      const data = await this.opts.scrapers.scrape(t.ref, session ? { signal, session } : { signal });
      answered = true;
      // Checked, whatever the record below makes of it (written once a second: check-log.ts).
      const checkedAt = Date.now();
      this.checks.checked(t.key, checkedAt, true);
      pool.answered(exit, t.key);
      const memory = this.memory.get(t.key);
      const scraped = toSnapshot(data);
      // A partial read keeps what was last read of the parts it missed (snapshot.ts, carryUnknown);
      // a worker that has not polled the target yet reads the last recorded snapshot for that.
      const snapshot = scraped.unknown ? carryUnknown(memory?.known.data ?? (await this.lastRecorded(t.key)), scraped) : scraped;
      const hash = snapshotHash(snapshot);
      const scrapedAt = new Date();
      const released = (this.cooldownDue.get(t.key) ?? Infinity) <= scrapedAt.getTime();
      if (hash !== memory?.hash || this.needsBaseline.has(t.key) || released) {
        const recorded = await recordPoll(this.opts.db, { target: t.key, snapshot, hash, scrapedAt, startedAt: new Date(started) }, memory?.known ?? null);
        // Older news than what another poller of the target recorded (record-poll.ts): nothing
        // kept, so the next poll compares afresh.
        if (recorded.stale) {
          this.schedule.succeeded(t, Date.now(), started);
          return;
        }
        this.memory.set(t.key, { hash, known: { id: recorded.snapshotId, data: snapshot } });
        this.needsBaseline.delete(t.key);
        if (recorded.cooldownDueAt === null) this.cooldownDue.delete(t.key);
        else this.cooldownDue.set(t.key, recorded.cooldownDueAt);
        if (recorded.changed) {
          outcome = 'changed';
          this.summary.changes++;
        }
        this.summary.notifications += recorded.notifications;
        this.opts.metrics.notifications.inc(recorded.notifications);
      }
      // A status row another poller left (a frozen one whose scrapes timed out as it woke) is
      // cleared by the first success too, not only this poller's own failures.
      if (t.failures > 0 || this.statusToClear.delete(t.key)) await clearStatus(this.opts.db, t.key, new Date(checkedAt));
      this.schedule.succeeded(t, Date.now(), started);
      this.recording.succeeded();
    } catch (err) {
      // No verdict on a refusal (stopped, a time-out, a 5xx): another may ask for the target now.
      if (!answered && !(err instanceof ScrapeFailure && err.exitAtFault)) pool.released(t.key);
      if (signal.aborted) return;
      const now = Date.now();
      if (answered) {
        // The platform answered; the database did not (a restart, a worker cut off from it). Not
        // the platform's failure: no back-off of the target (up to 16 intervals: every target of
        // a worker cut off for 30 s took 26 to 36 s to be polled again), no status row (the
        // database is what is away). Asked again in an interval; one log line per outage.
        this.recording.failed(err, { target: t.key });
        this.schedule.succeeded(t, now, started);
        outcome = 'failed';
        return;
      }
      const blocked = err instanceof ScrapeFailure && err.kind === 'blocked';
      let blockedUntil: number | null = null;
      let chargedToTarget = false;
      let platformWide = false;
      /** The platform answered about the event (a page it could not read, not found): not a strain on it. */
      let answeredFailure = false;
      if (err instanceof ScrapeFailure && err.exitAtFault) {
        const verdict = pool.refused(exit, session ?? null, t.key, { retryAfterMs: err.retryAfterMs, message: err.message }, 'poll', now);
        // The exit took the blame: when another is healthy the target goes out through it now.
        if (verdict.exitCooledUntil !== null && pool.nextHealthyAt(now) <= now) {
          outcome = 'blocked';
          this.log.debug({ target: t.key, exit: exit.label, err: err.message }, 'poll refused at a banned exit; moving to a healthy one');
          this.rerouted = true;
          return;
        }
        // Charged to the target (its own back-off), or every exit cools down (it waits for the first back).
        blockedUntil = verdict.targetUntil ?? pool.nextHealthyAt(now);
        platformWide = verdict.platformWide;
        if (verdict.targetUntil !== null && !platformWide) chargedToTarget = true;
      } else if (err instanceof ScrapeFailure && !err.retryable && err.kind !== 'blocked' && err.kind !== 'browser_missing') {
        // The platform answered about the event itself (not found, a page we could not read).
        pool.answered(exit, t.key, now);
        answeredFailure = true;
      } else if (blocked) {
        // A block we inferred ourselves (no browser session could be made): its own wait.
        blockedUntil = now + (err.retryAfterMs ?? this.opts.intervalMs * 2 ** Math.min(4, t.failures + 1));
      }
      this.checks.checked(t.key, now, false);
      this.schedule.failed(t, now, blockedUntil, answeredFailure ? 'answered' : 'transient');
      outcome = blocked ? 'blocked' : 'failed';
      const reason = err instanceof Error ? err.message : String(err);
      const message = chargedToTarget
        ? `${reason}; charged to this event, not to the address (other events pass through it): it backs off until ${new Date(t.dueAt).toISOString()}`
        : platformWide
          ? `${reason}; the platform refuses every event for now: it is asked once until ${new Date(blockedUntil!).toISOString()} whether that is over, and every event is polled again at its first answer`
          : reason;
      const failure = err instanceof ScrapeFailure ? err.kind : 'internal';
      this.log.warn({ target: t.key, kind: failure, failures: t.failures, retry_at: new Date(t.dueAt).toISOString(), err: message }, 'poll failed');
      const { platform: p, shard } = this.input;
      const clock = await recordFailure(this.opts.db, { target: t.key, platform: p, shard, kind: blocked ? 'blocked' : 'failing', failure, failures: t.failures, blockedUntil: t.blockedUntil, message }).catch(
        (e: unknown) => {
          this.log.warn({ err: e }, 'could not record the target status');
          return null;
        },
      );
      if (failure === 'not_found' && clock?.notFoundSince && clock.notFoundMs !== null && clock.notFoundMs >= this.opts.retireAfterMs) {
        await this.retire(t, clock.notFoundSince);
      }
    } finally {
      this.summary.polls++;
      this.opts.metrics.polls.inc({ platform, outcome });
      this.opts.metrics.duration.observe({ platform }, (Date.now() - started) / 1000);
    }
  }

  private async lastRecorded(target: string): Promise<TargetSnapshot | null> {
    const row = (await this.opts.db('target_snapshots').where({ target }).orderBy('id', 'desc').first('data')) as { data: TargetSnapshot } | undefined;
    return row?.data ?? null;
  }

  /** The target's event is gone: its items are told once, and it leaves the schedule. */
  private async retire(t: ScheduledTarget, notFoundSince: Date): Promise<void> {
    try {
      const { retired, told, held } = await retireTarget(this.opts.db, t.key, notFoundSince, this.opts.incidentRule);
      // Its platform is failing as a whole: polled on, so that its recovery is seen.
      if (held) return;
      this.schedule.remove(t.key);
      this.memory.delete(t.key);
      this.needsBaseline.delete(t.key);
      this.cooldownDue.delete(t.key);
      if (!retired) return;
      this.opts.metrics.retired.inc({ platform: this.input.platform });
      this.log.info({ target: t.key, not_found_since: notFoundSince.toISOString(), items_told: told }, 'target retired: its event answers not found; no longer polled');
    } catch (err) {
      // The next not-found answer tries again.
      this.log.warn({ target: t.key, err }, 'could not retire the target');
    }
  }

  /** Gauges are per process and several shards may share it: each shard adds its own delta. */
  private report(now: number, final = false): void {
    const platform = this.input.platform;
    const targets = final ? 0 : this.schedule.targets.size;
    const blocked = final ? 0 : this.schedule.blockedCount(now);
    this.opts.metrics.targets.inc({ platform }, targets - this.reported.targets);
    this.opts.metrics.blocked.inc({ platform }, blocked - this.reported.blocked);
    this.reported = { targets, blocked };
  }
}

export function createPollActivities(opts: PollShardOptions): ShardPolling {
  const running = new Set<ShardLoop>();
  const checks = opts.checks ?? new CheckLog(opts.db, opts.log.child({ component: 'check-log' }));
  return {
    activities: {
      pollShard: async (input) => {
        const loop = new ShardLoop(opts, input, Context.current(), checks);
        running.add(loop);
        checks.acquire();
        try {
          return await loop.run();
        } finally {
          running.delete(loop);
          await checks.release();
        }
      },
    },
    handBack: () => {
      for (const loop of running) loop.handBack();
    },
  };
}
