// Finished webhook deliveries are pruned after WEBHOOK_RETENTION_DAYS (src/retention/webhooks.ts);
// this index lets the housekeeping find the old ones without scanning every delivery.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (updated_at) WHERE state <> 'pending'`);
}
