// Webhook deliveries (issue 15): one row per message for one webhook, written in the same
// transaction as the notification it carries (src/webhooks/outbox.ts), so no notification of
// an item naming a webhook is ever lost between the log and the delivery. `message_id` is the
// `webhook-id` header: fixed at enqueue, the same on every attempt and on a manual retry.
// `body` is the exact JSON text sent, so every attempt signs the same bytes.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('webhook_id').notNullable().references('webhooks.id').onDelete('CASCADE');
    t.bigInteger('account_id').notNullable();
    t.bigInteger('notification_id').nullable().comment('null for a ping');
    t.text('type').notNullable();
    t.text('message_id').notNullable().unique();
    t.text('body').notNullable();
    t.text('state').notNullable().defaultTo('pending');
    t.integer('attempt_count').notNullable().defaultTo(0);
    t.timestamp('next_attempt_at', { useTz: true }).nullable();
    t.text('failure_reason').nullable();
    /** Bumped by a manual retry: names a new workflow run for the same message. */
    t.integer('generation').notNullable().defaultTo(0);
    t.boolean('dispatched').notNullable().defaultTo(false);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.raw('statement_timestamp()'));
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.raw('statement_timestamp()'));
  });
  await knex.raw(`ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_state_valid CHECK (state IN ('pending','delivered','failed'))`);
  await knex.raw('CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (webhook_id, notification_id) WHERE notification_id IS NOT NULL');
  await knex.raw('CREATE INDEX webhook_deliveries_list ON webhook_deliveries (webhook_id, id DESC)');
  await knex.raw('CREATE INDEX webhook_deliveries_undispatched ON webhook_deliveries (id) WHERE NOT dispatched');

  await knex.schema.createTable('webhook_attempts', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('delivery_id').notNullable().references('webhook_deliveries.id').onDelete('CASCADE');
    t.timestamp('attempted_at', { useTz: true }).notNullable();
    t.integer('status_code').nullable();
    t.text('error').nullable();
    t.integer('latency_ms').notNullable();
  });
  await knex.raw('CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id)');
}
