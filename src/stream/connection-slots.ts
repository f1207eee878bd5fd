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
import { randomUUID } from 'node:crypto';
import type { QueryConfig } from 'pg';
import { queryRetryingDeadlocks, type Pool } from '../../db/pool.ts';
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
  private readonly held = new Map<string, { keyId: string; accountId: number }>();
  /** Slots of batches in flight: perhaps committed already, so reconcile() must not delete them. */
  private readonly taking = new Set<string>();
  private readonly batches = new GroupedCalls<StreamUpgrade, UpgradeCount>({
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

  constructor(
    private readonly pool: Pool,
    private readonly log: Logger,
    /** Called once each time the node is fenced: close every connection (they resume elsewhere). */
    private readonly onFenced: () => void = () => {},
    private readonly timings: SlotTimings = TIMINGS,
  ) {}

  /** Registers the node and keeps it alive until stop(). */
  async start(): Promise<void> {
    const sent = performance.now();
    await this.touch();
    this.renewed(sent);
    this.timer = setInterval(() => void this.renew(), this.timings.touchMs);
    this.timer.unref();
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
   * back; slots of connections closed meanwhile (their release could not reach the database) go.
   */
  private async reconcile(): Promise<void> {
    const rows = [...this.held];
    await this.renewalQuery('INSERT INTO stream_nodes (node_id) VALUES ($1) ON CONFLICT (node_id) DO UPDATE SET seen_at = now()', [this.nodeId]);
    await this.renewalQuery(
      `INSERT INTO stream_connections (id, node_id, key_id, account_id)
       SELECT id, $1, key_id, account_id FROM unnest($2::uuid[], $3::text[], $4::bigint[]) AS t(id, key_id, account_id)
       ON CONFLICT (id) DO NOTHING`,
      [this.nodeId, rows.map(([id]) => id), rows.map(([, h]) => h.keyId), rows.map(([, h]) => h.accountId)],
    );
    await this.renewalQuery('DELETE FROM stream_connections WHERE node_id = $1 AND NOT (id = ANY($2::uuid[]))', [this.nodeId, [...rows.map(([id]) => id), ...this.taking]]);
  }

  /**
   * Counts upgrade `u` in its key's rate-limit window and, when it is within the limit and asks
   * for a slot (`caps`), takes one or says which cap is full. Throws when the database cannot
   * answer (the upgrade is refused as the service being unavailable).
   */
  admit(u: StreamUpgrade): Promise<UpgradeCount> {
    if (this.fenced) return Promise.reject(new NodeFenced());
    return this.batches.call(u, u.accountId);
  }

  /**
   * One call of stream_admit (db/migrations/037) for `batch`, in arrival order: one round trip,
   * one transaction. Its slots are held from here on; a batch that fails may have committed.
   */
  private async admitBatch(batch: readonly StreamUpgrade[]): Promise<UpgradeCount[]> {
    // Fenced while these waited: the node admits nobody (its connections are being closed).
    if (this.fenced) throw new NodeFenced();
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
    ];
    for (const t of batch) this.taking.add(t.id);
    try {
      // Two batches lock in one order (stream_admit's header); a gateway's admission group
      // takes rate windows in arrival order and can deadlock with one: sent again.
      const { rows } = await queryRetryingDeadlocks<{ ord: number; hits: number; scope: 'key' | 'account' | null; cap: number | null; open: number | null }>(
        this.pool,
        `SELECT ord, hits, scope, cap, open
           FROM stream_admit($1, $2::uuid[], $3::text[], $4::timestamptz[], $5::int[], $6::boolean[], $7::text[], $8::bigint[], $9::int[], $10::int[], $11)
          ORDER BY ord`,
        params,
      );
      return rows.map((r, i) => {
        const t = batch[i]!;
        const asked = t.caps !== null && r.hits <= t.rateLimit;
        const refusal: SlotRefusal | null = r.scope === null ? null : { scope: r.scope, limit: r.cap!, open: r.open! };
        const taken = asked && refusal === null;
        if (taken) this.held.set(t.id, { keyId: t.keyId, accountId: t.accountId });
        return { hits: r.hits, taken, refusal };
      });
    } catch (err) {
      // A COMMIT whose answer was lost may have written the rows: the next renewal puts them right.
      this.reconcileDue = true;
      throw err;
    } finally {
      for (const t of batch) this.taking.delete(t.id);
    }
  }

  /** Gives connection `id`'s slot back (its close, or an upgrade that never completed). */
  release(id: string): void {
    this.held.delete(id);
    // Cut off: the row is removed when the database answers again (reconcile).
    if (this.failing || this.fenced) return;
    // A storm of closes is one DELETE per turn of the event loop, not one per connection.
    this.releasing.push(id);
    if (this.releasing.length === 1) setImmediate(() => this.flushReleases());
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
    this.timer = null;
    this.fenceTimer = null;
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
