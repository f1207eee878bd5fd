// Meter sync (Stripe Billing Meter): each charged ledger row is reported to Stripe exactly once,
// inside a meter batch. A batch is one meter event (one account, one billing period) written
// as `pending` in the same transaction that stamps its rows' `meter_batch`, before anything is
// sent; it turns `sent` once Stripe accepted it. The stamp, not a position in the ledger, is
// what says a row is reported, so a reservation captured after later rows is never skipped.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('meter_batches', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('customer_id').notNullable().comment('the Stripe customer when the batch was formed');
    t.timestamp('period_start', { useTz: true }).notNullable().comment('the billing period the credits were used in');
    t.bigInteger('credits').notNullable();
    t.integer('request_count').notNullable();
    t.text('identifier').notNullable().unique().comment("the meter event's identifier: Stripe deduplicates a resend on it");
    t.timestamp('event_timestamp', { useTz: true }).notNullable().comment('whole seconds, inside the period');
    t.timestamp('first_captured_at', { useTz: true }).notNullable();
    t.timestamp('last_captured_at', { useTz: true }).notNullable();
    t.text('state').notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('last_attempt_at', { useTz: true }).nullable();
    t.text('last_error').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('sent_at', { useTz: true }).nullable();
  });
  await knex.raw(`ALTER TABLE meter_batches ADD CONSTRAINT meter_batches_state_valid CHECK (state IN ('pending','sent','expired'))`);
  await knex.raw(`CREATE INDEX meter_batches_pending ON meter_batches (id) WHERE state = 'pending'`);
  await knex.raw('CREATE INDEX meter_batches_account ON meter_batches (account_id, sent_at)');

  // Nullable with no default: PostgreSQL adds it without rewriting the ledger.
  await knex.raw('ALTER TABLE credit_ledger ADD COLUMN meter_batch bigint NULL REFERENCES meter_batches(id)');
  // The sync's whole work list (charged, not yet in a batch) and sync-status's lag, kept small:
  // rows leave it as soon as they are batched.
  await knex.raw(`CREATE INDEX credit_ledger_unreported ON credit_ledger (account_id, period_start) WHERE state = 'charged' AND meter_batch IS NULL`);
  await knex.raw('CREATE INDEX credit_ledger_meter_batch ON credit_ledger (meter_batch) WHERE meter_batch IS NOT NULL');
}
