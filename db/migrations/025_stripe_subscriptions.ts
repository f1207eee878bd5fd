// Issue 25: every Stripe subscription the mirror has read, not only the account's current one.
// A customer who canceled and subscribed again has two; the account's `subscriptions` row (what
// admission reads) is derived from them in one place (src/billing/stripe/mirror.ts: a served
// status first, then the newest), so an old canceled subscription read after the new one (the
// reconcile run lists newest first; a late webhook) no longer replaces it. `read_at` is when the
// read was sent: a read older than the stored one changes nothing.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('stripe_subscriptions', (t) => {
    t.text('id').primary();
    t.bigInteger('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('plan_id').notNullable().references('plans.id');
    t.text('status').notNullable();
    t.timestamp('current_period_start', { useTz: true }).notNullable();
    t.timestamp('current_period_end', { useTz: true }).notNullable();
    t.boolean('cancel_at_period_end').notNullable().defaultTo(false);
    t.timestamp('canceled_at', { useTz: true }).nullable();
    t.timestamp('trial_end', { useTz: true }).nullable();
    t.timestamp('stripe_created_at', { useTz: true }).notNullable().comment("Stripe's `created`: the newest subscription wins among equally served ones");
    t.timestamp('read_at', { useTz: true }).notNullable().comment('when the read this row comes from was sent');
  });
  await knex.raw('CREATE INDEX stripe_subscriptions_account ON stripe_subscriptions (account_id)');
  // What the mirror held so far: the current subscription of every account with a Stripe customer.
  await knex.raw(`
    INSERT INTO stripe_subscriptions (id, account_id, plan_id, status, current_period_start, current_period_end,
                                      cancel_at_period_end, canceled_at, trial_end, stripe_created_at, read_at)
    SELECT s.id, s.account_id, s.plan_id, s.status, s.current_period_start, s.current_period_end,
           s.cancel_at_period_end, s.canceled_at, s.trial_end, s.created_at, s.updated_at
      FROM subscriptions s JOIN accounts a ON a.id = s.account_id
     WHERE a.customer_id IS NOT NULL AND s.id LIKE 'sub_%'`);
}
