// Issue 38: every table's growth is bounded, every live row justified.
//
// webhook_deliveries_pending_tests: POST /webhooks/{id}/test refuses a ping while the webhook
// already has TEST_DELIVERIES_PENDING_MAX of them pending (parked ones included;
// src/apis/webhooks/deliveries.ts). The index holds exactly those rows, so the count reads a
// handful of entries however long the webhook's history or its backlog of notifications.
//
// tracked_events.unattributed_since: when the service began waiting for an account to claim a
// tracking from before accounts were recorded (`unattributed`, migration 027). Such a tracking
// counted as held and served for as long as it ran; from now on it does for
// TRACKING_UNATTRIBUTED_MAX_MS after this, then ends like a tracking no account holds
// (src/market-data/tracking-lifecycle.ts). The clock starts at this upgrade, not at 027's, so no
// client loses a tracking the day this is deployed.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE INDEX webhook_deliveries_pending_tests ON webhook_deliveries (webhook_id) WHERE type = 'ping' AND state = 'pending'`);

  await knex.schema.alterTable('tracked_events', (t) => {
    t.timestamp('unattributed_since', { useTz: true })
      .nullable()
      .comment('set while `unattributed`: when the wait for an account to claim it began (it ends TRACKING_UNATTRIBUTED_MAX_MS after)');
  });
  await knex.raw('UPDATE tracked_events SET unattributed_since = now() WHERE unattributed');
  await knex.raw('ALTER TABLE tracked_events ADD CONSTRAINT tracked_events_unattributed_since CHECK (NOT unattributed OR unattributed_since IS NOT NULL)');
}
