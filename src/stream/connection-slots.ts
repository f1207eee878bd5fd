// Open stream connections, counted across every stream node (issue 25): a connection takes a
// slot before its upgrade and gives it back at its close, so one key, or one account over all
// its keys, can hold no more than its cap however many nodes it spreads over. The count lives in
// PostgreSQL (stream_connections, db/migrations/024), taken under a per-account advisory lock so
// two nodes admitting at once cannot both take the last slot.
//
// A node touches its stream_nodes row every TOUCH_MS; slots of a node not seen for STALE_MS are
// not counted (a node that died gives its slots back within that), and any node sweeps them.
//
// A node cut off from PostgreSQL rather than crashed (issue 38) still holds its connections while
// the others stop counting them. So a node that has not renewed its presence for FENCE_MS
// (counted on its own monotonic clock from the moment its last successful touch was sent, which
// is no later than the seen_at the others read) is fenced: it admits nobody and closes every
// connection it holds (`onFenced`; clients resume on another node from last_id), 8 s before the
// others can stop counting them. When a touch succeeds again the fence lifts, and the node first
// writes back the slots of every connection it still holds that the others swept meanwhile.
//
// Upgrades are admitted in batches (issue 40): the upgrades that arrive while a batch is in
// flight form the next, and a batch is one call of stream_admit (db/migrations/037), one round
// trip and one transaction that counts each upgrade in its key's rate-limit window, then locks
// the accounts of those within their limit (in one order, so two nodes' batches cannot
// deadlock), counts their open slots once the locks are held, and decides in arrival order
// against running counts. One transaction per upgrade (five round trips and a commit, on the
// node's few pool clients) made a reconnect storm of 12,000 clients take 12.8 s against 2.4 s
// for `ws` without caps; five round trips per batch, 5.8 s (each waited about a turn of the busy
// event loop). A lone upgrade still goes at once, as a batch of one.
//
// Slots taken ahead (migration 043): an upgrade decided after an await is sent uncorked on this
// uWS build (upgrade-anchor.ts), about 22 writes for one 101, and the storm still took 2.2x
// `ws`'s time. So while a key's upgrades come in a burst (a second one within BURST_GAP_MS), the
// batch that admits one also takes spare slots for that key, as many as the burst has had
// upgrades so far (MAX_SPARES at most), each with its hit in the key's rate-limit window. The
// next upgrades of that key on this node take one synchronously (takeSpare), inside uWS's own
// upgrade handler, where uWS corks the 101. Spares count as connections everywhere, so the caps
// and the rate limit stay exact; one unused for SPARE_IDLE_MS, or held SPARE_MAX_MS, or of a
// past rate window, is given back (row deleted, hit returned). Another node that finds a cap
// full with spares among its slots is told to wait rather than refused, and asks again every
// WAIT_RETRY_MS, until every spare it counted has been used or given back (SPARE_MAX_MS, and a margin).
import { randomUUID } from 'node:crypto';
import type { QueryConfig } from 'pg';
import { queryRetryingDeadlocks, type Pool } from '../../db/pool.ts';
import { rateWindow } from '../gateway/rate-limit.ts';
import { GroupedCalls } from '../runtime/grouped-calls.ts';
import type { Logger } from '../logger.ts';

/** How often a node says it is alive. */
const TOUCH_MS = 5_000;
/** A node silent this long is taken for dead: its slots no longer count. */
const STALE_MS = 20_000;
/** A node that could not renew its presence this long stops admitting and closes its connections. */
export const FENCE_MS = 12_000;

/** Timings (tests shorten them; the fence must stay well under the stale time). */
export interface SlotTimings {
  touchMs: number;
  staleMs: number;
  fenceMs: number;
  /** SPARE_IDLE_MS and SPARE_MAX_MS (a test holds spares longer, to see another node wait on them). */
  spareIdleMs?: number;
  spareMaxMs?: number;
}

const TIMINGS: SlotTimings = { touchMs: TOUCH_MS, staleMs: STALE_MS, fenceMs: FENCE_MS };

/** Thrown by take() while the node is fenced: the upgrade is refused as the service being unavailable. */
export class NodeFenced extends Error {
  constructor() {
    super('stream: this node cannot reach the connection count (database); connect to another node');
  }
}

export interface SlotCaps {
  /** The key's own cap (api_keys.stream_connection_limit), or null for `perKey`. */
  keyLimit: number | null;
  perKey: number;
  perAccount: number;
}

export type SlotRefusal = { scope: 'key' | 'account'; limit: number; open: number };

/** A key's upgrades this close together are a burst: its batches take slots ahead. */
const BURST_GAP_MS = 200;
/** Spare slots one key holds on one node at most. */
const MAX_SPARES = 32;
/** A spare unused this long (since its key's last upgrade here) is given back. */
const SPARE_IDLE_MS = 100;
/** A spare is held this long at most: other nodes may be waiting for it. */
const SPARE_MAX_MS = 1_000;
/** How often held spares are looked over. */
const SPARE_CHECK_MS = 25;
/** An upgrade told to wait (a full cap, with spares among its slots) asks again after this... */
const WAIT_RETRY_MS = 20;
/** ...and is refused once it has waited this long past SPARE_MAX_MS (every spare is used or given back by then). */
const WAIT_SLACK_MS = 2_000;

/** Batches in flight at once per node: lanes partition the accounts, so one node's batches never wait on each other. */
const LANES = 2;
/** Upgrades decided in one transaction at most. */
const MAX_BATCH = 256;

/** One upgrade to count and, perhaps, admit. */
export interface StreamUpgrade {
  /** The connection's id: its slot's row. */
  id: string;
  keyId: string;
  accountId: number;
  /** The key's rate-limit subject, window and limit: an upgrade is counted as one request. */
  subject: string;
  windowStart: Date;
  rateLimit: number;
  /** The caps to take a slot under; null to count the request only (it is refused for another reason). */
  caps: SlotCaps | null;
}

/** One upgrade of a batch: asked again after a wait (its hit counted already), and the spares its key wants. */
interface BatchedUpgrade extends StreamUpgrade {
  again: boolean;
  spares: number;
}

/** What stream_admit said of one upgrade of a batch. */
interface BatchAnswer extends UpgradeCount {
  /** Refused only because spare slots fill the cap: ask again. */
  wait: boolean;
}

/** A slot taken ahead for a key on this node, with the hit it reserved in the key's window. */
interface Spare {
  id: string;
  hit: number;
  takenAt: number;
}

/** Spare slots given back (rows deleted), and hits returned to a window: `hits`, else one per slot. */
interface GivenBack {
  ids: string[];
  hits?: number;
  subject: string;
  windowStart: number;
}

/** The spare slots this node holds for one key. */
interface KeySpares {
  accountId: number;
  subject: string;
  /** The rate window (ms) their hits were counted in: usable in that window only. */
  windowStart: number;
  /** Oldest first. */
  spares: Spare[];
  /** When an upgrade of the key last came (performance.now()). */
  lastUpgradeAt: number;
}

/** What stream_admit said of one upgrade. */
export interface UpgradeCount {
  /** The request's number in its rate-limit window: within the limit when at most `rateLimit`. */
  hits: number;
  /** A slot was taken: the connection's close (or an upgrade that never completes) must give it back. */
  taken: boolean;
  /** The full cap, when a slot was asked for within the rate limit and refused. */
  refusal: SlotRefusal | null;
}

function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from the database within ${ms} ms`)), ms);
  });
  work.catch(() => {}); // a touch that answers after its deadline is not waited for
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

export class ConnectionSlots {
  readonly nodeId = randomUUID();
  private timer: NodeJS.Timeout | null = null;
  private fenceTimer: NodeJS.Timeout | null = null;
  /** performance.now() when the last successful touch was sent. */
  private renewedAt = 0;
  private touching = false;
  private failing = false;
  /** A slot's release did not reach the database: the next renewal puts the rows right. */
  private reconcileDue = false;
  /** The slots this node holds, as written: what it writes back after an outage. */
  private readonly held = new Map<string, { keyId: string; accountId: number; row: string }>();
  /** Slots of batches in flight: perhaps committed already, so reconcile() must not delete them. */
  private readonly taking = new Set<string>();
  /** Spare slots held, by key. */
  private readonly spares = new Map<string, KeySpares>();
  /** Upgrades of each key in its current burst (since a gap of BURST_GAP_MS), and when the last came. */
  private readonly bursts = new Map<string, { upgrades: number; lastAt: number }>();
  /** Spares used since the last flush: their rows stop saying spare. */
  private usedSpares: string[] = [];
  /** Bumped by every reconcile: spares of a batch sent before it may have been deleted by it. */
  private epoch = 0;
  private spareTimer: NodeJS.Timeout | null = null;
  private readonly batches = new GroupedCalls<BatchedUpgrade, BatchAnswer>({
    send: (batch) => this.admitBatch(batch),
    maxGroup: MAX_BATCH,
    lanes: LANES,
    // The upgrades go on at the next check phase: the next batch is sent first, so the database
    // works on it while this node writes the 101s, rather than after.
    answerAfterNextSend: true,
  });
  /** Releases waiting for the next flush (one DELETE for all of them). */
  private releasing: string[] = [];
  fenced = false;
  private readonly spareIdleMs: number;
  private readonly spareMaxMs: number;

  constructor(
    private readonly pool: Pool,
    private readonly log: Logger,
    /** Called once each time the node is fenced: close every connection (they resume elsewhere). */
    private readonly onFenced: () => void = () => {},
    private readonly timings: SlotTimings = TIMINGS,
  ) {
    this.spareIdleMs = timings.spareIdleMs ?? SPARE_IDLE_MS;
    this.spareMaxMs = timings.spareMaxMs ?? SPARE_MAX_MS;
  }

  /** Registers the node and keeps it alive until stop(). */
  async start(): Promise<void> {
    const sent = performance.now();
    await this.touch();
    this.renewed(sent);
    this.timer = setInterval(() => void this.renew(), this.timings.touchMs);
    this.timer.unref();
    this.spareTimer = setInterval(() => this.lookOverSpares(), SPARE_CHECK_MS);
    this.spareTimer.unref();
  }

  private async renew(): Promise<void> {
    if (this.touching) return;
    this.touching = true;
    const sent = performance.now();
    try {
      // A partition does not fail a query, it hangs it: the touch has a deadline of its own.
      await withDeadline(
        (async () => {
          // After an outage the rows are put right first: the node is counted as it is before it admits.
          if (this.failing || this.reconcileDue) await this.reconcile();
          await this.touch();
        })(),
        this.timings.touchMs,
      );
      if (this.failing) this.log.info({ node_id: this.nodeId, slots_written_back: this.held.size }, 'stream: the connection count is reachable again; admitting');
      this.failing = false;
      this.reconcileDue = false;
      this.renewed(sent);
    } catch (err) {
      if (!this.failing) this.log.warn({ err }, 'stream: could not touch this node for the connection count; will retry (fenced if it lasts)');
      this.failing = true;
      // Cut off, spares are not used: reconcile deletes their rows (they are not held).
      this.spares.clear();
    } finally {
      this.touching = false;
    }
  }

  /** A touch sent at `sent` succeeded: the fence lifts and is set again FENCE_MS from `sent`. */
  private renewed(sent: number): void {
    this.renewedAt = sent;
    this.fenced = false;
    if (this.fenceTimer) clearTimeout(this.fenceTimer);
    this.fenceTimer = setTimeout(() => this.fence(), Math.max(0, this.renewedAt + this.timings.fenceMs - performance.now()));
    this.fenceTimer.unref();
  }

  private fence(): void {
    if (this.fenced) return;
    const left = this.renewedAt + this.timings.fenceMs - performance.now();
    if (left > 0) {
      // A timer may fire a little early on another clock: wait out the rest.
      this.fenceTimer = setTimeout(() => this.fence(), Math.ceil(left));
      this.fenceTimer.unref();
      return;
    }
    this.fenced = true;
    this.log.warn(
      { node_id: this.nodeId, connections: this.held.size, since_ms: Math.round(performance.now() - this.renewedAt) },
      'stream: fenced: this node could not renew its presence; it admits nobody and closes its connections before other nodes stop counting them',
    );
    this.onFenced();
  }

  /**
   * After an outage: the node's rows are made to match what it holds. Slots the others swept go
   * back; slots of connections closed meanwhile (their release could not reach the database) go;
   * spares used meanwhile stop saying spare.
   */
  private async reconcile(): Promise<void> {
    // Spares are not held: their rows go, and a batch in flight must not hand out its own.
    this.epoch++;
    this.spares.clear();
    const rows = [...this.held];
    await this.renewalQuery('INSERT INTO stream_nodes (node_id) VALUES ($1) ON CONFLICT (node_id) DO UPDATE SET seen_at = now()', [this.nodeId]);
    await this.renewalQuery(
      `INSERT INTO stream_connections (id, node_id, key_id, account_id)
       SELECT id, $1, key_id, account_id FROM unnest($2::uuid[], $3::text[], $4::bigint[]) AS t(id, key_id, account_id)
       ON CONFLICT (id) DO UPDATE SET spare = false WHERE stream_connections.spare`,
      [this.nodeId, rows.map(([, h]) => h.row), rows.map(([, h]) => h.keyId), rows.map(([, h]) => h.accountId)],
    );
    await this.renewalQuery('DELETE FROM stream_connections WHERE node_id = $1 AND NOT (id = ANY($2::uuid[]))', [this.nodeId, [...rows.map(([, h]) => h.row), ...this.taking]]);
  }

  /**
   * Counts upgrade `u` in its key's rate-limit window and, when it is within the limit and asks
   * for a slot (`caps`), takes one or says which cap is full. Throws when the database cannot
   * answer (the upgrade is refused as the service being unavailable).
   */
  async admit(u: StreamUpgrade): Promise<UpgradeCount> {
    if (this.fenced) throw new NodeFenced();
    const burst = this.upgradeOf(u.keyId);
    const asked = performance.now();
    let first: BatchAnswer | null = null;
    for (;;) {
      // The burst so far, less what is held already: slots ahead for as many upgrades again.
      const held = this.spares.get(u.keyId)?.spares.length ?? 0;
      const spares = first === null && u.caps && burst >= 2 ? Math.max(0, Math.min(MAX_SPARES, burst) - held) : 0;
      const answer = await this.batches.call({ ...u, again: first !== null, spares }, u.accountId);
      first ??= answer;
      if (answer.taken) return { hits: first.hits, taken: true, refusal: null };
      // Refused for its rate, or waiting, while this node holds a spare of the key (taken while
      // this upgrade's batch was out): admitted against it rather than refused, or left to wait.
      const spareRefused = u.caps !== null && (answer.wait || first.hits > u.rateLimit);
      if (spareRefused && this.takeSpareAfterCount(u)) return { hits: Math.min(first.hits, u.rateLimit), taken: true, refusal: null };
      if (!answer.wait || performance.now() - asked >= this.spareMaxMs + WAIT_SLACK_MS) return { hits: first.hits, taken: false, refusal: answer.refusal };
      await new Promise((r) => setTimeout(r, WAIT_RETRY_MS));
      if (this.fenced) throw new NodeFenced();
    }
  }

  /**
   * Admits upgrade `u`, already counted in its window, against a spare of its key: the spare's
   * reserved hit goes back, so the window counts the upgrade once. Whether one was there.
   */
  private takeSpareAfterCount(u: StreamUpgrade): boolean {
    if (!this.useSpare(u, u.id)) return false;
    // Its own hit stays counted (over the limit or not): the spare's goes back.
    void this.giveBack([{ ids: [], hits: 1, subject: u.subject, windowStart: u.windowStart.getTime() }]);
    return true;
  }

  /**
   * Admits upgrade `u` now, against a spare slot of its key that this node holds (the slot's id
   * is the connection's): its hit was counted when the spare was taken. Null when there is none
   * to use (the upgrade goes through admit()).
   */
  takeSpare(u: Omit<StreamUpgrade, 'id'>): { id: string; count: UpgradeCount } | null {
    const spare = this.useSpare(u);
    if (!spare) return null;
    this.upgradeOf(u.keyId);
    return { id: spare.id, count: { hits: spare.hit, taken: true, refusal: null } };
  }

  /**
   * Takes the oldest usable spare of `u`'s key for connection `connectionId` (the spare's own id
   * when not given): held from here on, its row no longer spare at the next flush.
   */
  private useSpare(u: Omit<StreamUpgrade, 'id'>, connectionId?: string): Spare | null {
    if (!u.caps || this.fenced || this.failing) return null;
    const held = this.spares.get(u.keyId);
    const now = performance.now();
    if (!held || held.accountId !== u.accountId || held.windowStart !== u.windowStart.getTime()) return null;
    const spare = held.spares[0];
    // Past its time (given back at the next look), or its hit past a limit lowered since.
    if (!spare || now - spare.takenAt >= this.spareMaxMs || spare.hit > u.rateLimit) return null;
    held.spares.shift();
    held.lastUpgradeAt = now;
    this.held.set(connectionId ?? spare.id, { keyId: u.keyId, accountId: u.accountId, row: spare.id });
    this.usedSpares.push(spare.id);
    this.flushSoon();
    return spare;
  }

  /** Counts an upgrade of `keyId` in its burst; the burst's upgrades so far. */
  private upgradeOf(keyId: string): number {
    const now = performance.now();
    const burst = this.bursts.get(keyId);
    if (!burst || now - burst.lastAt > BURST_GAP_MS) {
      this.bursts.set(keyId, { upgrades: 1, lastAt: now });
      return 1;
    }
    burst.upgrades++;
    burst.lastAt = now;
    const held = this.spares.get(keyId);
    if (held) held.lastUpgradeAt = now;
    return burst.upgrades;
  }

  /** Gives back spares idle, too old or of a past window, and forgets bursts that ended. */
  private lookOverSpares(): void {
    const now = performance.now();
    const windowNow = rateWindow(Date.now()).start.getTime();
    const back: GivenBack[] = [];
    for (const [keyId, held] of this.spares) {
      const idle = now - held.lastUpgradeAt >= this.spareIdleMs || held.windowStart !== windowNow;
      const going = idle ? held.spares : held.spares.filter((s) => now - s.takenAt >= this.spareMaxMs);
      if (going.length) {
        back.push({ ids: going.map((s) => s.id), subject: held.subject, windowStart: held.windowStart });
        held.spares = idle ? [] : held.spares.filter((s) => now - s.takenAt < this.spareMaxMs);
      }
      if (held.spares.length === 0) this.spares.delete(keyId);
    }
    for (const [keyId, burst] of this.bursts) if (now - burst.lastAt > BURST_GAP_MS) this.bursts.delete(keyId);
    if (back.length) void this.giveBack(back);
  }

  /** Deletes unused spares' rows and returns their hits to their windows. */
  private async giveBack(back: GivenBack[]): Promise<void> {
    if (this.failing || this.fenced) return; // their rows go at the next renewal (reconcile)
    try {
      await queryRetryingDeadlocks(
        this.pool,
        `WITH gone AS (DELETE FROM stream_connections WHERE id = ANY($1::uuid[]))
         UPDATE rate_limit_windows w SET hits = w.hits - r.n
           FROM unnest($2::text[], $3::timestamptz[], $4::int[]) AS r(subject, window_start, n)
          WHERE w.subject = r.subject AND w.window_start = r.window_start`,
        [back.flatMap((b) => b.ids), back.map((b) => b.subject), back.map((b) => new Date(b.windowStart)), back.map((b) => b.hits ?? b.ids.length)],
      );
    } catch (err) {
      // The rows go at the next renewal (not held); the hits stay counted until their window ends.
      this.reconcileDue = true;
      this.log.warn({ err, spares: back.reduce((n, b) => n + b.ids.length, 0) }, 'stream: could not give spare connection slots back; they go at the next renewal');
    }
  }

  /**
   * One call of stream_admit (db/migrations/043) for `batch`, in arrival order: one round trip,
   * one transaction. Its slots are held from here on (spares among them); a batch that fails may
   * have committed.
   */
  private async admitBatch(batch: readonly BatchedUpgrade[]): Promise<BatchAnswer[]> {
    // Fenced while these waited: the node admits nobody (its connections are being closed).
    if (this.fenced) throw new NodeFenced();
    // One want of spares per key: on its last upgrade here that is not asked again.
    const wants = new Map<string, number>();
    batch.forEach((t, i) => {
      if (t.spares > 0) wants.set(t.keyId, i);
    });
    const params = [
      this.nodeId,
      batch.map((t) => t.id),
      batch.map((t) => t.subject),
      batch.map((t) => t.windowStart),
      batch.map((t) => t.rateLimit),
      batch.map((t) => t.caps !== null),
      batch.map((t) => t.keyId),
      batch.map((t) => t.accountId),
      batch.map((t) => (t.caps ? (t.caps.keyLimit ?? t.caps.perKey) : 0)),
      batch.map((t) => t.caps?.perAccount ?? 0),
      this.timings.staleMs / 1000,
      batch.map((t) => t.again),
      batch.map((t, i) => (wants.get(t.keyId) === i ? t.spares : 0)),
    ];
    const epoch = this.epoch;
    for (const t of batch) this.taking.add(t.id);
    try {
      // Two batches lock in one order (stream_admit's header); a gateway's admission group
      // takes rate windows in arrival order and can deadlock with one: sent again.
      const { rows } = await queryRetryingDeadlocks<{
        ord: number;
        hits: number;
        scope: 'key' | 'account' | null;
        cap: number | null;
        open: number | null;
        wait: boolean | null;
        spares: string[] | null;
        spare_hit: number | null;
      }>(
        this.pool,
        `SELECT ord, hits, scope, cap, open, wait, spares, spare_hit
           FROM stream_admit($1, $2::uuid[], $3::text[], $4::timestamptz[], $5::int[], $6::boolean[], $7::text[], $8::bigint[], $9::int[], $10::int[], $11,
                             $12::boolean[], $13::int[])
          ORDER BY ord`,
        params,
      );
      const stale: GivenBack[] = [];
      const answers = rows.map((r, i) => {
        const t = batch[i]!;
        const asked = t.caps !== null && (t.again || r.hits <= t.rateLimit);
        const refusal: SlotRefusal | null = r.scope === null ? null : { scope: r.scope, limit: r.cap!, open: r.open! };
        const taken = asked && refusal === null;
        if (taken) this.held.set(t.id, { keyId: t.keyId, accountId: t.accountId, row: t.id });
        if (r.spares?.length) {
          const spare = { ids: r.spares, subject: t.subject, windowStart: t.windowStart.getTime() };
          // A reconcile since it was sent may have deleted them: given back rather than used.
          if (epoch !== this.epoch || this.failing || this.fenced) stale.push(spare);
          else this.holdSpares(t, r.spares, r.spare_hit!);
        }
        return { hits: r.hits, taken, refusal, wait: r.wait === true };
      });
      if (stale.length) void this.giveBack(stale);
      return answers;
    } catch (err) {
      // A COMMIT whose answer was lost may have written the rows: the next renewal puts them right.
      this.reconcileDue = true;
      throw err;
    } finally {
      for (const t of batch) this.taking.delete(t.id);
    }
  }

  /** Holds spares just taken for `t`'s key, their hits from `firstHit` on. */
  private holdSpares(t: StreamUpgrade, ids: string[], firstHit: number): void {
    const now = performance.now();
    let held = this.spares.get(t.keyId);
    if (!held || held.windowStart !== t.windowStart.getTime() || held.accountId !== t.accountId) {
      // Those of a past window go back at the next look: a key keeps one window's spares.
      if (held?.spares.length) void this.giveBack([{ ids: held.spares.map((s) => s.id), subject: held.subject, windowStart: held.windowStart }]);
      held = { accountId: t.accountId, subject: t.subject, windowStart: t.windowStart.getTime(), spares: [], lastUpgradeAt: now };
      this.spares.set(t.keyId, held);
    }
    ids.forEach((id, i) => held.spares.push({ id, hit: firstHit + i, takenAt: now }));
    held.lastUpgradeAt = now;
  }

  /** Gives connection `id`'s slot back (its close, or an upgrade that never completed). */
  release(id: string): void {
    const row = this.held.get(id)?.row ?? id;
    this.held.delete(id);
    // Cut off: the row is removed when the database answers again (reconcile).
    if (this.failing || this.fenced) return;
    // A storm of closes is one DELETE per turn of the event loop, not one per connection.
    this.releasing.push(row);
    this.flushSoon();
  }

  private flushing = false;

  /** Releases and used spares go in the next turn of the event loop, one statement each for all. */
  private flushSoon(): void {
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(() => {
      this.flushing = false;
      this.flushUsedSpares();
      this.flushReleases();
    });
  }

  /** Used spares' rows stop saying spare: a node waiting on them learns the cap is really full. */
  private flushUsedSpares(): void {
    const ids = this.usedSpares;
    this.usedSpares = [];
    if (ids.length === 0 || this.failing || this.fenced) return;
    this.pool.query('UPDATE stream_connections SET spare = false WHERE id = ANY($1::uuid[])', [ids]).catch((err: unknown) => {
      // Other nodes wait on them until their deadline; the next renewal writes them back as held.
      this.reconcileDue = true;
      this.log.warn({ err, connections: ids.length }, 'stream: could not mark used spare slots; they are written back at the next renewal');
    });
  }

  private flushReleases(): void {
    const ids = this.releasing;
    this.releasing = [];
    if (ids.length === 0) return;
    this.pool.query('DELETE FROM stream_connections WHERE id = ANY($1::uuid[])', [ids]).catch((err: unknown) => {
      // The rows stay until the next renewal puts this node's rows right (reconcile).
      this.reconcileDue = true;
      this.log.warn({ err, connections: ids.length }, 'stream: could not give connection slots back; they go at the next renewal');
    });
  }

  /** Gives every slot of this node back and leaves the count. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    if (this.fenceTimer) clearTimeout(this.fenceTimer);
    if (this.spareTimer) clearInterval(this.spareTimer);
    this.timer = null;
    this.fenceTimer = null;
    this.spareTimer = null;
    const unused = [...this.spares.values()].map((h) => ({ ids: h.spares.map((s) => s.id), subject: h.subject, windowStart: h.windowStart }));
    this.spares.clear();
    if (unused.length) await this.giveBack(unused);
    this.held.clear();
    await this.pool.query('DELETE FROM stream_connections WHERE node_id = $1', [this.nodeId]);
    await this.pool.query('DELETE FROM stream_nodes WHERE node_id = $1', [this.nodeId]);
  }

  /**
   * A statement of the renewal, failed (and its client discarded by the pool) when unanswered
   * within one touch interval: during a partition each attempt would otherwise keep one of the
   * pool's few clients until the partition ends.
   */
  private async renewalQuery(text: string, values: unknown[]): Promise<void> {
    // node-postgres reads query_timeout per query; its types list it only on the client's config.
    await this.pool.query({ text, values, query_timeout: this.timings.touchMs } as QueryConfig);
  }

  /** Says this node is alive, and sweeps the slots of nodes that are not. */
  private async touch(): Promise<void> {
    await this.renewalQuery('INSERT INTO stream_nodes (node_id) VALUES ($1) ON CONFLICT (node_id) DO UPDATE SET seen_at = now()', [this.nodeId]);
    await this.renewalQuery(
      `WITH dead AS (DELETE FROM stream_nodes WHERE seen_at < now() - make_interval(secs => $1) RETURNING node_id)
       DELETE FROM stream_connections c WHERE c.node_id IN (SELECT node_id FROM dead)
          OR NOT EXISTS (SELECT 1 FROM stream_nodes n WHERE n.node_id = c.node_id) AND c.opened_at < now() - make_interval(secs => $1)`,
      [(this.timings.staleMs * 3) / 1000],
    );
  }
}
