// Issue 25: tracked events end, are capped per account, and are scraped only for served accounts.
//
// tracked_event_accounts: which accounts track each tracked event (one tracking is shared by
// every account that added it). A link is live while `ended_at` is null; the account's live
// links are what TRACKING_MAX_EVENTS_PER_ACCOUNT caps, and a tracking is scraped only while one
// of its live links belongs to a served account (account_served, migration 026). When the
// tracking ends (`ended` or `failed`) every link ends with it; adding the event again makes the
// adding account's link live again (and only its).
//
// tracked_events gains `started_at` (when this tracking, or its restart, began: the undated
// limit counts from it), `ended_at` and `end_reason`, and the status `ended`. Rows from before
// have no links (nothing recorded who added them): they are marked `unattributed` and go on
// being scraped, with no served check to make, until their event's date or the undated limit
// ends them, so no client loses a tracking it asked for to this upgrade. Adding the event
// again attaches it to the adding account and it is an ordinary tracking from then on.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('tracked_event_accounts', (t) => {
    t.bigInteger('tracked_event_id').notNullable().references('tracked_events.id').onDelete('CASCADE');
    t.bigInteger('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.timestamp('added_at', { useTz: true }).notNullable().defaultTo(knex.fn.now()).comment('when the account (last) added the event');
    t.timestamp('ended_at', { useTz: true }).nullable().comment('set when the tracking ended: the link no longer counts against the cap');
    t.primary(['tracked_event_id', 'account_id']);
  });
  // The cap's count: an account's live links.
  await knex.raw('CREATE INDEX tracked_event_accounts_live ON tracked_event_accounts (account_id) WHERE ended_at IS NULL');

  await knex.raw('ALTER TABLE tracked_events ADD COLUMN started_at timestamptz');
  await knex.raw('UPDATE tracked_events SET started_at = created_at');
  await knex.raw('ALTER TABLE tracked_events ALTER COLUMN started_at SET NOT NULL, ALTER COLUMN started_at SET DEFAULT now()');
  await knex.raw('ALTER TABLE tracked_events ADD COLUMN ended_at timestamptz, ADD COLUMN end_reason text');
  await knex.raw('ALTER TABLE tracked_events ADD COLUMN unattributed boolean NOT NULL DEFAULT false');
  await knex.raw("UPDATE tracked_events SET unattributed = true WHERE status IN ('pending', 'active', 'failing')");
  await knex.raw('ALTER TABLE tracked_events DROP CONSTRAINT tracked_events_status_valid');
  await knex.raw(`ALTER TABLE tracked_events ADD CONSTRAINT tracked_events_status_valid CHECK (status IN ('pending', 'active', 'failing', 'failed', 'ended'))`);
  await knex.raw(`ALTER TABLE tracked_events ADD CONSTRAINT tracked_events_end_reason_valid CHECK (end_reason IN ('event_passed', 'undated', 'untracked', 'not_found'))`);
}
