// Issue 25: every table has a retention rule (src/retention/, docs/operations.md "Retention").
// The indexes let the rules find their oldest rows in time order without a scan:
// - settled credit ledger rows by when they were settled (reserved rows, which admission writes,
//   are not in it; a capture adds its row once). Deleting in that order touches few pages: rows
//   lie in the table roughly in the order they were written;
// - stripe_events by when they were received;
// - deleted watchlist items by when they were deleted (the live-items index holds only live ones);
// - sent and expired meter batches by when they were formed (pending ones, the meter sync's work
//   list, are never pruned).
// Built CONCURRENTLY, outside a transaction, so a large ledger keeps taking admissions meanwhile;
// an index a failed build left invalid is dropped and built again.
//
// The cursor `watchlist-monitors` belonged to the per-item monitor relay that issue 13 replaced
// (its successor reads as `watchlist-monitors-v2`); nothing moves it any more, and watchlist
// changes are pruned only once every cursor has passed them, so it would hold them all for ever.
import type { Knex } from 'knex';

export const config = { transaction: false };

const INDEXES: readonly [name: string, definition: string][] = [
  ['credit_ledger_settled', `credit_ledger (settled_at) WHERE state <> 'reserved'`],
  ['stripe_events_received', 'stripe_events (received_at)'],
  ['watchlist_items_deleted', 'watchlist_items (deleted_at) WHERE deleted'],
  ['meter_batches_settled', `meter_batches (created_at) WHERE state <> 'pending'`],
];

export async function up(knex: Knex): Promise<void> {
  for (const [name, definition] of INDEXES) {
    const { rows } = await knex.raw(
      `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE c.relname = ? AND c.relnamespace = current_schema()::regnamespace`,
      [name],
    );
    if (rows[0]?.valid === true) continue;
    if (rows[0]) await knex.raw(`DROP INDEX CONCURRENTLY ${name}`);
    await knex.raw(`CREATE INDEX CONCURRENTLY ${name} ON ${definition}`);
  }
  await knex('relay_cursors').where({ name: 'watchlist-monitors' }).delete();
}
