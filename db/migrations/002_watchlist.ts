// Watchlist items (spec 2.1) and the change log the monitors consume.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('watchlist_items', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('client_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('website').notNullable();
    t.text('event').notNullable();
    t.text('region').notNullable();
    t.decimal('min_price_filter', 12, 2).nullable();
    t.decimal('max_price_filter', 12, 2).nullable();
    t.decimal('min_avg_price_threshold', 12, 2).nullable();
    t.decimal('max_avg_price_threshold', 12, 2).nullable();
    t.integer('stock_threshold_filter').nullable();
    t.integer('stock_threshold_filter_max').nullable();
    t.integer('seat_quantity').notNullable();
    t.integer('priority').notNullable();
    t.text('section').nullable();
    t.jsonb('keywords').nullable();
    t.jsonb('date_filter').nullable();
    t.jsonb('row_filter').nullable();
    t.text('change_type').nullable();
    t.boolean('standard_tickets').notNullable();
    t.boolean('resale_tickets').notNullable();
    t.boolean('general_admission_tickets').notNullable();
    t.boolean('platinum_tickets').notNullable();
    t.boolean('no_restricted_view').notNullable();
    t.boolean('no_accessibility').notNullable();
    t.boolean('no_presale').notNullable();
    t.boolean('auto_add_to_watchlist').notNullable();
    t.boolean('task_active').notNullable();
    t.timestamp('muted_until', { useTz: true }).nullable();
    t.text('mb_did').nullable();
    t.jsonb('roles_json').nullable();
    t.bigInteger('webhook_setting_id').nullable();
    t.bigInteger('role_id').nullable();
    t.bigInteger('website_id').nullable();
    t.text('notes').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.boolean('deleted').notNullable().defaultTo(false);
    t.timestamp('deleted_at', { useTz: true }).nullable();
  });
  await knex.raw(`ALTER TABLE watchlist_items ADD CONSTRAINT watchlist_change_type_valid
    CHECK (change_type IS NULL OR change_type IN ('stock_increase','price_decrease','price_increase'))`);
  await knex.raw('CREATE INDEX watchlist_items_live ON watchlist_items (client_id, id) WHERE NOT deleted');

  // Every create, update and delete, in commit order (writers are serialised by an advisory
  // lock, so a reader asking for id > last never skips a row that commits late). The monitors
  // LISTEN on `watchlist_changes` and read from here instead of polling watchlist_items.
  await knex.schema.createTable('watchlist_changes', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('account_id').notNullable();
    t.bigInteger('item_id').notNullable();
    t.text('op').notNullable();
    t.jsonb('item').notNullable().comment('the item as rendered after the change');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(`ALTER TABLE watchlist_changes ADD CONSTRAINT watchlist_changes_op_valid
    CHECK (op IN ('create','update','delete'))`);
}
