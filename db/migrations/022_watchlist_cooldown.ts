// Issue 24: `cooldown_seconds` on a watchlist item (0..86400; 0, every change notifies, is the
// behaviour items had before): how long after a notification for a section later changes of
// that section are held (applied by the monitors, src/monitors).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('watchlist_items', (t) => {
    t.integer('cooldown_seconds').notNullable().defaultTo(0);
  });
  await knex.raw('ALTER TABLE watchlist_items ADD CONSTRAINT watchlist_cooldown_seconds_range CHECK (cooldown_seconds BETWEEN 0 AND 86400)');
}
