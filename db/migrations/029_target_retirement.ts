// Issue 25: a watched target whose event keeps answering not-found is retired
// (src/monitors/target-status.ts). monitor_target_status keeps the not-found clock and the
// retirement, so a worker restart or another worker taking the shard over keeps both; the
// notifications log takes the message each item of a retired target gets (`target_retired`).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('monitor_target_status', (t) => {
    t.timestamp('not_found_since', { useTz: true }).nullable().comment('first of the not-found answers in a row (the retirement clock); null when the last answer about the event was not one');
    t.timestamp('retired_at', { useTz: true }).nullable().comment('when the target was retired (no longer polled until an item on it is written after this)');
  });
  await knex.raw(`COMMENT ON COLUMN monitor_target_status.kind IS 'blocked, failing or retired'`);
  await knex.raw('ALTER TABLE notifications DROP CONSTRAINT notifications_kind_valid');
  await knex.raw(`ALTER TABLE notifications ADD CONSTRAINT notifications_kind_valid CHECK (kind IN ('notification','watchlist','target_retired'))`);
}
