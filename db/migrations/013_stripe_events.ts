// stripe_events: the ids of the Stripe webhook events already applied, so a redelivered event
// (Stripe sends at least once) changes nothing the second time. Written in the transaction that
// applies the event: an event that failed to apply is not recorded and is applied on its retry.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('stripe_events', (t) => {
    t.text('id').primary().comment('evt_…');
    t.text('type').notNullable();
    t.text('object_id').nullable().comment('the subscription (or other object) the event is about');
    t.timestamp('received_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}
