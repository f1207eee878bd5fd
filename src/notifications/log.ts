// The notifications log: every message the stream delivers (item notifications, watchlist
// changes and retired targets), stored before anything is sent, with a monotonic id clients resume from.
//
// Ids are handed out at insert, not at commit. Writers therefore take one transaction-scoped
// advisory lock before inserting: the next writer's id is drawn only after the previous one
// committed, so ids become visible in order and a reader asking for `id > last` can never skip
// a row whose transaction commits late. Each append ends with a pg_notify (delivered at commit)
// carrying the highest id written; NOTIFY is only a wake-up, readers always re-read the table.
import type { Knex } from 'knex';
import type { Pool } from '../../db/pool.ts';

export const NOTIFICATIONS_CHANNEL = 'notifications';
/** Arbitrary constant naming the log writers' advisory lock. */
const LOG_WRITER_LOCK = 7_204_312;

/**
 * `notification`: a watched item changed; `watchlist`: an item was created, updated or deleted;
 * `target_retired`: an item's event answered not-found for MONITOR_RETIRE_AFTER_MS and is no
 * longer polled (src/monitors/target-status.ts); `platform_incident`: the item's platform is
 * failing for most events watched on it, or has recovered (src/monitors/platform-incidents.ts).
 */
export type LogKind = 'notification' | 'watchlist' | 'target_retired' | 'platform_incident';

export interface LogEntry {
  accountId: number;
  itemId: number | null;
  kind: LogKind;
  /** Identifies the change: a second append with the same key is skipped (retries, replays). */
  dedupeKey: string | null;
  payload: Record<string, unknown>;
}

export interface LogRow {
  id: number;
  accountId: number;
  itemId: number | null;
  kind: LogKind;
  payload: Record<string, unknown>;
  createdAt: Date;
}

/**
 * The append as CTEs: `log_lk`, the writers' lock; then `before`, the caller's own CTEs, which may
 * join `log_lk` to write under the same lock (the watchlist's change rows, whose ids must become
 * visible in order too: one lock for both, so two writers can never take them in opposite
 * orders); then the rows of `source`, a set named `e` with the columns (account_id, item_id,
 * kind, dedupe_key, payload, ord), in `ord` order; then `log_notified`, one row with the ids
 * written and the NOTIFY of the highest (no row when nothing was written; a statement must
 * select from it, or the NOTIFY is never evaluated). Every inserted row is joined to the lock,
 * so no id is drawn before it is held, whatever the plan. No bindings: a statement sent with its
 * commit (db/last-statement.ts) has none.
 */
export function logAppendCtes(source: string, before = ''): string {
  return `log_lk AS (SELECT pg_advisory_xact_lock(${LOG_WRITER_LOCK})),${before ? `\n  ${before},` : ''}
  log_ins AS (
    INSERT INTO notifications (account_id, item_id, kind, dedupe_key, payload)
    SELECT e.account_id, e.item_id, e.kind, e.dedupe_key, e.payload
      FROM log_lk, ${source}
     ORDER BY e.ord
    ON CONFLICT (dedupe_key) DO NOTHING
    RETURNING id),
  log_notified AS (SELECT array_agg(id ORDER BY id) AS ids, pg_notify('${NOTIFICATIONS_CHANNEL}', max(id)::text) FROM log_ins HAVING count(*) > 0)`;
}

/** One statement: the lock, the rows in `entries` order, and the NOTIFY of the highest id. */
const APPEND = `
  WITH ${logAppendCtes(`ROWS FROM (jsonb_to_recordset(?::jsonb) AS (account_id bigint, item_id bigint, kind text, dedupe_key text, payload jsonb)) WITH ORDINALITY AS e(account_id, item_id, kind, dedupe_key, payload, ord)`)}
  SELECT ids FROM log_notified`;

/**
 * Appends entries inside the caller's transaction and returns the ids written (entries whose
 * dedupe key was already used are skipped). The lock is held until that transaction ends.
 */
export async function appendToLog(trx: Knex.Transaction, entries: readonly LogEntry[]): Promise<number[]> {
  if (entries.length === 0) return [];
  const rows = entries.map((e) => ({ account_id: e.accountId, item_id: e.itemId, kind: e.kind, dedupe_key: e.dedupeKey, payload: e.payload }));
  const { rows: out } = (await trx.raw(APPEND, [JSON.stringify(rows)])) as { rows: { ids: (string | number)[] }[] };
  return (out[0]?.ids ?? []).map(Number);
}

interface DbRow {
  id: string;
  account_id: string;
  item_id: string | null;
  kind: LogKind;
  payload: Record<string, unknown>;
  created_at: Date;
}

function toLogRow(r: DbRow): LogRow {
  return {
    id: Number(r.id),
    accountId: Number(r.account_id),
    itemId: r.item_id === null ? null : Number(r.item_id),
    kind: r.kind,
    payload: r.payload,
    createdAt: r.created_at,
  };
}

/** Rows with `after < id <= upTo` (no upper bound when upTo is omitted), oldest first, optionally one account's. */
export async function readLog(
  pool: Pool,
  opts: { after: number; upTo?: number; accountId?: number; limit: number },
): Promise<LogRow[]> {
  const params: unknown[] = [opts.after, opts.upTo ?? Number.MAX_SAFE_INTEGER, opts.limit];
  let where = 'id > $1 AND id <= $2';
  if (opts.accountId !== undefined) {
    params.push(opts.accountId);
    where += ' AND account_id = $4';
  }
  const { rows } = await pool.query<DbRow>(
    `SELECT id, account_id, item_id, kind, payload, created_at FROM notifications WHERE ${where} ORDER BY id LIMIT $3`,
    params,
  );
  return rows.map(toLogRow);
}

/** The highest id written so far (0 for an empty log) and the oldest still kept. */
export async function logBounds(pool: Pool): Promise<{ head: number; oldest: number }> {
  const { rows } = await pool.query<{ head: string | null; oldest: string | null }>(
    'SELECT max(id) AS head, min(id) AS oldest FROM notifications',
  );
  return { head: Number(rows[0]?.head ?? 0), oldest: Number(rows[0]?.oldest ?? 0) };
}

/** The message a client receives for a row: its kind as `type`, its id, then its payload. */
export function streamMessage(row: Pick<LogRow, 'id' | 'kind' | 'payload'>): Record<string, unknown> {
  return { type: row.kind, id: row.id, ...row.payload };
}
