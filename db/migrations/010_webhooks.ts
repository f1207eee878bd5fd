// Webhook endpoints of an account (issue 15): where the notifications of the items naming them
// are delivered, besides the stream. URLs and signing secrets are sealed with the
// deployment's key (src/webhooks/secret-box.ts): a database dump alone yields neither.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhooks', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('kind').notNullable();
    t.text('url_sealed').notNullable();
    t.text('description').nullable();
    t.boolean('active').notNullable();
    t.text('disabled_reason').nullable();
    t.text('secret_sealed').nullable().comment('null for discord: its URL is the secret');
    t.text('previous_secret_sealed').nullable().comment('the secret replaced by the last rotation');
    t.timestamp('previous_secret_expires_at', { useTz: true }).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.boolean('deleted').notNullable().defaultTo(false);
    t.timestamp('deleted_at', { useTz: true }).nullable();
  });
  await knex.raw(`ALTER TABLE webhooks ADD CONSTRAINT webhooks_kind_valid CHECK (kind IN ('standard','discord'))`);
  await knex.raw(`ALTER TABLE webhooks ADD CONSTRAINT webhooks_secret_by_kind
    CHECK ((kind = 'standard') = (secret_sealed IS NOT NULL))`);
  await knex.raw('CREATE INDEX webhooks_live ON webhooks (account_id, id) WHERE NOT deleted');
}
