// Watchlist monitoring: the notifications log the stream serves, the target snapshots the
// pollers store and the monitors diff, and the relay's cursor over watchlist_changes.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // Everything the stream delivers, in commit order. Writers are serialised by an advisory lock
  // (src/notifications/log.ts), so ids commit in order and a reader asking for id > last never
  // skips a row that commits late. `dedupe_key` makes a retried or replayed write a no-op.
  await knex.schema.createTable('notifications', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('account_id').notNullable();
    t.bigInteger('item_id').nullable();
    t.text('kind').notNullable();
    t.text('dedupe_key').nullable().unique();
    t.jsonb('payload').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.raw('statement_timestamp()'));
  });
  await knex.raw(`ALTER TABLE notifications ADD CONSTRAINT notifications_kind_valid CHECK (kind IN ('notification','watchlist'))`);
  await knex.raw('CREATE INDEX notifications_account ON notifications (account_id, id)');
  await knex.raw('CREATE INDEX notifications_created ON notifications (created_at)');

  // One row per distinct scrape result of a watched target (platform, event, region): a poller
  // writes a row only when the normalised content changed, so monitors diff two stored rows.
  await knex.schema.createTable('target_snapshots', (t) => {
    t.bigIncrements('id').primary();
    t.text('target').notNullable().comment('platform:region:event key');
    t.text('hash').notNullable().comment('sha-256 of the normalised content');
    t.jsonb('data').notNullable();
    t.timestamp('scraped_at', { useTz: true }).notNullable();
  });
  await knex.raw('CREATE INDEX target_snapshots_target ON target_snapshots (target, id DESC)');

  // How far the monitor relay has applied watchlist_changes to Temporal.
  await knex.schema.createTable('relay_cursors', (t) => {
    t.text('name').primary();
    t.bigInteger('last_id').notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}
