// Open stream connections, counted across every stream node (issue 25): a connection takes a
// slot before its upgrade and gives it back at its close, so one key, or one account over all
// its keys, can hold no more than its cap however many nodes it spreads over. The count lives in
// PostgreSQL (stream_connections, db/migrations/024), taken under a per-account advisory lock so
// two nodes admitting at once cannot both take the last slot.
//
// A node touches its stream_nodes row every TOUCH_MS; slots of a node not seen for STALE_MS are
// not counted (a node that died gives its slots back within that), and any node sweeps them.
import { randomUUID } from 'node:crypto';
import type { Pool } from '../../db/pool.ts';
import type { Logger } from '../logger.ts';

/** How often a node says it is alive. */
const TOUCH_MS = 5_000;
/** A node silent this long is taken for dead: its slots no longer count. */
const STALE_MS = 20_000;

export interface SlotCaps {
  /** The key's own cap (api_keys.stream_connection_limit), or null for `perKey`. */
  keyLimit: number | null;
  perKey: number;
  perAccount: number;
}

export type SlotRefusal = { scope: 'key' | 'account'; limit: number; open: number };

export class ConnectionSlots {
  readonly nodeId = randomUUID();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly pool: Pool,
    private readonly log: Logger,
  ) {}

  /** Registers the node and keeps it alive until stop(). */
  async start(): Promise<void> {
    await this.touch();
    this.timer = setInterval(() => {
      this.touch().catch((err: unknown) => this.log.warn({ err }, 'stream: could not touch this node for the connection count; will retry'));
    }, TOUCH_MS);
    this.timer.unref();
  }

  /**
   * Takes a slot for connection `id` of this key and account, or says which cap is full. Throws
   * when the database cannot answer (the upgrade is refused as the service being unavailable).
   */
  async take(id: string, keyId: string, accountId: number, caps: SlotCaps): Promise<SlotRefusal | null> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query("SELECT pg_advisory_xact_lock(hashtext('stream-connections'), hashtext($1))", [String(accountId)]);
      const { rows } = await client.query<{ key: string; account: string }>(
        `SELECT count(*) FILTER (WHERE c.key_id = $2) AS key, count(*) AS account
           FROM stream_connections c JOIN stream_nodes n ON n.node_id = c.node_id
          WHERE c.account_id = $1 AND n.seen_at > now() - make_interval(secs => $3)`,
        [accountId, keyId, STALE_MS / 1000],
      );
      const open = { key: Number(rows[0]!.key), account: Number(rows[0]!.account) };
      const keyLimit = caps.keyLimit ?? caps.perKey;
      const refusal: SlotRefusal | null =
        open.key >= keyLimit ? { scope: 'key', limit: keyLimit, open: open.key } : open.account >= caps.perAccount ? { scope: 'account', limit: caps.perAccount, open: open.account } : null;
      if (!refusal) {
        await client.query('INSERT INTO stream_connections (id, node_id, key_id, account_id) VALUES ($1, $2, $3, $4)', [id, this.nodeId, keyId, accountId]);
      }
      await client.query('COMMIT');
      return refusal;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }

  /** Gives connection `id`'s slot back (its close, or an upgrade that never completed). */
  release(id: string): void {
    this.pool.query('DELETE FROM stream_connections WHERE id = $1', [id]).catch((err: unknown) => {
      // The row stays until this node stops or is taken for dead: the key holds one slot too many meanwhile.
      this.log.warn({ err, connection_id: id }, 'stream: could not give a connection slot back');
    });
  }

  /** Gives every slot of this node back and leaves the count. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.pool.query('DELETE FROM stream_connections WHERE node_id = $1', [this.nodeId]);
    await this.pool.query('DELETE FROM stream_nodes WHERE node_id = $1', [this.nodeId]);
  }

  /** Says this node is alive, and sweeps the slots of nodes that are not. */
  private async touch(): Promise<void> {
    await this.pool.query('INSERT INTO stream_nodes (node_id) VALUES ($1) ON CONFLICT (node_id) DO UPDATE SET seen_at = now()', [this.nodeId]);
    await this.pool.query(
      `WITH dead AS (DELETE FROM stream_nodes WHERE seen_at < now() - make_interval(secs => $1) RETURNING node_id)
       DELETE FROM stream_connections c WHERE c.node_id IN (SELECT node_id FROM dead)
          OR NOT EXISTS (SELECT 1 FROM stream_nodes n WHERE n.node_id = c.node_id) AND c.opened_at < now() - make_interval(secs => $1)`,
      [(STALE_MS * 3) / 1000],
    );
  }
}
