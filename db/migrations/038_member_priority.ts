// Issue 40: an account's priorities order its own targets when a platform's budget runs short
// (src/monitors/fair-share.ts). The shard poller reads each member's priority from its config,
// which the membership relay writes from the item; members written before this release have
// none, so they take their item's now rather than count as 0 until the item next changes.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
UPDATE monitor_members m SET config = m.config || jsonb_build_object('priority', i.priority)
  FROM watchlist_items i
 WHERE i.id = m.item_id AND m.config->'priority' IS NULL`);
}
