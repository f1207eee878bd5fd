// Issue 24: the monitors' cooldowns (src/monitors/cooldown.ts). One row per item and section
// notified less than the item's cooldown_seconds ago, or whose cooldown ended with a change held
// and not yet released: the state last notified (compared with at the end), when, and whether a
// change is held. Written in record-poll's transaction, so a hold outlives the worker that made
// it and is released once. Rows go with their member (paused, deleted) and when released.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('monitor_cooldowns', (t) => {
    t.bigInteger('item_id').notNullable();
    t.text('section').notNullable();
    t.text('target').notNullable().comment('the member target the section belongs to (a moved item starts afresh)');
    t.jsonb('notified').notNullable().comment('the section view last notified: stock, min_price, avg_price, currency');
    t.timestamp('notified_at', { useTz: true }).notNullable().comment('when that change was seen; the cooldown runs from here');
    t.boolean('held').notNullable().defaultTo(false).comment('a change came during the cooldown and waits for its end');
    t.primary(['item_id', 'section']);
  });
  await knex.raw('CREATE INDEX monitor_cooldowns_target ON monitor_cooldowns (target)');
}
