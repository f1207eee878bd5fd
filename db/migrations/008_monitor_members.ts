// Watchlist monitoring at scale (issue 13): polling moved into long-running shard activities.
//
// monitor_members: one row per active, monitorable watchlist item, written by the membership
// relay (src/monitors/membership.ts) from watchlist_changes. It is what the shard pollers poll
// and evaluate: the item's target, its rules (config, versioned by watchlist change id) and its
// baseline, the snapshot its next change is measured from (NULL until its first poll). Paused
// and deleted items have no row: a resumed item starts from what is on sale then.
//
// monitor_target_status: targets that are failing or blocked by their platform (429/403), written
// only when a target starts or stops failing, for `npm run ops -- monitors:blocked`.
//
// The cursors of the old per-item relay start again from 0 under new names (monitor-members,
// watchlist-monitors-v2), so every live item gets a member row and a monitor of the new shape.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('monitor_members', (t) => {
    t.bigInteger('item_id').primary();
    t.bigInteger('account_id').notNullable();
    t.text('target').notNullable().comment('platform:region:event key');
    t.text('platform').notNullable();
    t.integer('shard').notNullable();
    t.jsonb('ref').notNullable().comment('the EventRef the pollers scrape');
    t.jsonb('item').notNullable().comment('website, event and region as the client wrote them');
    t.jsonb('config').notNullable().comment('the monitor rules (src/monitors/changes.ts MonitorConfig)');
    t.bigInteger('version').notNullable().comment('the watchlist change id the config comes from');
    t.bigInteger('baseline_snapshot_id').nullable();
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('CREATE INDEX monitor_members_shard ON monitor_members (platform, shard, target)');
  await knex.raw('CREATE INDEX monitor_members_target ON monitor_members (target)');

  await knex.schema.createTable('monitor_target_status', (t) => {
    t.text('target').primary();
    t.text('platform').notNullable();
    t.integer('shard').notNullable();
    t.text('kind').notNullable().comment('blocked or failing');
    t.integer('failures').notNullable();
    t.timestamp('blocked_until', { useTz: true }).nullable();
    t.text('last_error').nullable();
    t.timestamp('since', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}
