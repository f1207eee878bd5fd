// When a webhook's current run of failed attempts began (null while it is healthy): an
// endpoint failing continuously for 5 days is turned off with a disabled_reason (issue 15).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhooks', (t) => {
    t.timestamp('failing_since', { useTz: true }).nullable();
  });
}
