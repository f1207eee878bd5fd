// What a retention rule is, and how one is run. A rule removes the rows of one table that its
// retention no longer needs (or ends them, for a table whose rows must first finish: the parked
// webhook deliveries of ./webhooks.ts), a few short statements at a time: each batch is its own transaction
// of at most `batchSize` rows, so no statement comes near DB_STATEMENT_TIMEOUT_MS however large
// the backlog, and a backlog of millions drains over several housekeeping ticks instead of
// failing as one huge DELETE. The rules themselves are listed in ./rules.ts; docs/operations.md
// ("Retention") says why each keeps what it keeps.
import type { Knex } from 'knex';
import type { Db } from '../../db/connection.ts';

export interface BatchOutcome {
  deleted: number;
  /**
   * Rows ended rather than removed: a parked webhook delivery past the retry schedule is failed
   * as expired (./webhooks.ts), and goes later as a failed one.
   */
  ended?: number;
  /** Whether another batch may still find rows to remove now. */
  more: boolean;
}

export interface RetentionRule {
  /** The table it removes rows from: one rule per table, named as in docs/operations.md. */
  readonly table: string;
  /** Rows one batch may remove: small enough that the statement takes milliseconds. */
  readonly batchSize: number;
  /** Removes at most `limit` rows in `trx`. */
  batch(trx: Knex.Transaction, limit: number): Promise<BatchOutcome>;
}

/** A rule whose batch is one DELETE statement returning its row count; `more` while batches come back full. */
export function deleteRule(table: string, batchSize: number, statement: (limit: number) => { sql: string; bindings: Knex.RawBinding[] }): RetentionRule {
  return {
    table,
    batchSize,
    async batch(trx, limit) {
      const { sql, bindings } = statement(limit);
      const { rowCount } = (await trx.raw(sql, bindings)) as { rowCount: number | null };
      const deleted = rowCount ?? 0;
      return { deleted, more: deleted >= limit };
    },
  };
}

export interface PruneOptions {
  /** Start no batch after this time (ms since the epoch), except the first: each call makes progress. */
  deadline?: number;
  /** Checked before each batch: true stops (the process is shutting down). */
  stopped?: () => boolean;
  /** Overrides the rule's batch size (tests). */
  batchSize?: number;
}

export interface PruneResult {
  table: string;
  deleted: number;
  /** Rows ended (BatchOutcome.ended). */
  ended: number;
  /** True when nothing is left to remove now; false when the deadline or a stop came first. */
  done: boolean;
  /** Another process held the rule's lock: it is pruning this table now, so this one did not. */
  busy: boolean;
  batches: number;
}

/** Two-key advisory locks in this class name the retention rules (one key per table). */
const RETENTION_LOCK_CLASS = 250_028;

/**
 * Runs `rule` batch after batch until nothing is left, the deadline passes (after one batch at
 * least) or `stopped()`. Each
 * batch takes the rule's advisory lock for its transaction only (try, never wait): when two
 * gateways' housekeeping meet on a table, the second leaves it to the first for this tick.
 */
export async function pruneTable(db: Db, rule: RetentionRule, opts: PruneOptions = {}): Promise<PruneResult> {
  const limit = opts.batchSize ?? rule.batchSize;
  const result: PruneResult = { table: rule.table, deleted: 0, ended: 0, done: false, busy: false, batches: 0 };
  for (;;) {
    if (opts.stopped?.()) return result;
    if (result.batches > 0 && opts.deadline !== undefined && Date.now() >= opts.deadline) return result;
    const outcome = await db.transaction(async (trx) => {
      const { rows } = await trx.raw('SELECT pg_try_advisory_xact_lock(?, hashtext(?)) AS locked', [RETENTION_LOCK_CLASS, rule.table]);
      if (!rows[0]?.locked) return null;
      // A batch is small but its plan's estimate can be large (a lateral over every account):
      // compiling it with JIT took ~200 ms of a 5 ms statement.
      await trx.raw('SET LOCAL jit = off');
      return rule.batch(trx, limit);
    });
    if (outcome === null) return { ...result, busy: true };
    result.batches++;
    result.deleted += outcome.deleted;
    result.ended += outcome.ended ?? 0;
    if (!outcome.more) return { ...result, done: true };
  }
}
