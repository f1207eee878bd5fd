// Deliveries the dispatcher could not complete now wait for their webhook's retry workflow
// (workflows/webhook-retries.ts) rather than in the outbox: dispatched and pending, with the
// time they may go. The index is what a round reads (a webhook's due ones, soonest first) and
// what the dispatcher's sweeps group by. `retry_wake_at` is when the webhook's workflow will next
// read them (null: no run will), so a hand-over signals it only when that is too late
// (src/webhooks/hand-over.ts). `deferrals` counted how often a busy endpoint's delivery was
// pushed back in the outbox, which no longer happens.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE INDEX webhook_deliveries_waiting ON webhook_deliveries (webhook_id, next_attempt_at) WHERE state = 'pending' AND dispatched`);
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.dropColumn('deferrals');
  });
  await knex.schema.alterTable('webhooks', (t) => {
    t.timestamp('retry_wake_at', { useTz: true }).nullable();
  });
}
