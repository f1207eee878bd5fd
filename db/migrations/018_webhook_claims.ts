// A dispatcher makes a delivery's first attempt itself (src/webhooks/dispatcher.ts) and marks it
// dispatched only once that attempt is recorded or its retry workflow started. claimed_until is
// its lease meanwhile: a dispatcher that dies mid-send leaves the row to be claimed again when the
// lease runs out (the same message, under the same webhook-id: at least once). A delivery whose
// endpoint already has its share of attempts in flight is deferred instead, for longer each time
// (deferrals), so a hanging endpoint's backlog is looked at less and less often.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.timestamp('claimed_until', { useTz: true }).nullable();
    t.integer('deferrals').notNullable().defaultTo(0);
  });
}
