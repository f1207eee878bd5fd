// Issue 38: a cooldown's release compares the section now with the state its held change was
// detected from (src/monitors/cooldown.ts), not with the state last notified. `held_from` keeps
// that state: the held change's baseline snapshot cut to the section, with the ticket kinds it
// did not know. Null when nothing is held, and on holds made before this migration (released
// against `notified`, as they were when made).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('monitor_cooldowns', (t) => {
    t.jsonb('held_from').nullable().comment('the section as the first held change was detected from (a one-section target snapshot, with its unknown kinds); null when nothing is held');
  });
}
