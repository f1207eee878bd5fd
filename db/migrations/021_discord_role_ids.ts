// Issue 24: `role_id` holds a Discord role id exactly. Role ids are snowflakes of 17-20 digits:
// past a JSON number's 2^53 - 1, and a 20-digit one past bigint's 9.2e18, so the column becomes
// text. The API takes an integer only up to 2^53 - 1 (at most 16 digits) and a string only of
// 17-20 digits, so the stored digits alone say which form to give back (src/apis/watchlist/
// store.ts); the values already stored (positive bigints within that range) come back as the
// integers they were.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE watchlist_items ALTER COLUMN role_id TYPE text USING role_id::text');
  await knex.raw(`ALTER TABLE watchlist_items ADD CONSTRAINT watchlist_role_id_digits CHECK (role_id ~ '^[1-9][0-9]{0,19}$')`);
}
