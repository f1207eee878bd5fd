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
import { randomUUID } from 'node:crypto';
import type { QueryConfig } from 'pg';
import type { Pool } from '../../db/pool.ts';
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
    await this.renewalQuery('DELETE FROM stream_connections WHERE node_id = $1 AND NOT (id = ANY($2::uuid[]))', [this.nodeId, rows.map(([id]) => id)]);
  }

  /**
   * Takes a slot for connection `id` of this key and account, or says which cap is full. Throws
   * when the database cannot answer (the upgrade is refused as the service being unavailable).
   */
  async take(id: string, keyId: string, accountId: number, caps: SlotCaps): Promise<SlotRefusal | null> {
    if (this.fenced) throw new NodeFenced();
    const client = await this.pool.connect();
    let failure: Error | undefined;
    try {
      await client.query('BEGIN');
      await client.query("SELECT pg_advisory_xact_lock(hashtext('stream-connections'), hashtext($1))", [String(accountId)]);
      const { rows } = await client.query<{ key: string; account: string }>(
        `SELECT count(*) FILTER (WHERE c.key_id = $2) AS key, count(*) AS account
           FROM stream_connections c JOIN stream_nodes n ON n.node_id = c.node_id
          WHERE c.account_id = $1 AND n.seen_at > now() - make_interval(secs => $3)`,
        [accountId, keyId, this.timings.staleMs / 1000],
      );
      const open = { key: Number(rows[0]!.key), account: Number(rows[0]!.account) };
      const keyLimit = caps.keyLimit ?? caps.perKey;
      const refusal: SlotRefusal | null =
        open.key >= keyLimit ? { scope: 'key', limit: keyLimit, open: open.key } : open.account >= caps.perAccount ? { scope: 'account', limit: caps.perAccount, open: open.account } : null;
      if (!refusal) {
        await client.query('INSERT INTO stream_connections (id, node_id, key_id, account_id) VALUES ($1, $2, $3, $4)', [id, this.nodeId, keyId, accountId]);
      }
      await client.query('COMMIT');
      if (!refusal) this.held.set(id, { keyId, accountId });
      return refusal;
    } catch (err) {
      failure = err instanceof Error ? err : new Error(String(err));
      throw err;
    } finally {
      // A client whose statement failed (one unanswered, say) is discarded, not handed out
      // again; ending its session rolls the transaction back.
      client.release(failure);
    }
  }

  /** Gives connection `id`'s slot back (its close, or an upgrade that never completed). */
  release(id: string): void {
    this.held.delete(id);
    // Cut off: the row is removed when the database answers again (reconcile).
    if (this.failing || this.fenced) return;
    this.pool.query('DELETE FROM stream_connections WHERE id = $1', [id]).catch((err: unknown) => {
      // The row stays until the next renewal puts this node's rows right (reconcile).
      this.reconcileDue = true;
      this.log.warn({ err, connection_id: id }, 'stream: could not give a connection slot back; it goes at the next renewal');
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
