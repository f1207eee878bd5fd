// Issue 25: an account whose subscription is not served consumes nothing. account_served(id) is
// the one definition of "served" outside the gateway's admission (003_gateway_admit): a billing
// account, a subscription in `active` or `trialing`, and not a period that ended with
// cancel_at_period_end set (the gateway rolls such a period to `canceled` only at the next paid
// request; a sweep must not wait for one). account_service holds what the service last acted
// on for each account, so a change of state is acted on once (src/accounts/service-state.ts).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
CREATE FUNCTION account_served(p_account bigint) RETURNS boolean LANGUAGE sql STABLE AS $fn$
  SELECT coalesce((
    SELECT a.customer_id IS NOT NULL
       AND s.status IN ('active', 'trialing')
       AND NOT (s.cancel_at_period_end AND s.current_period_end <= now())
      FROM accounts a LEFT JOIN subscriptions s ON s.account_id = a.id
     WHERE a.id = p_account), false)
$fn$`);
  await knex.schema.createTable('account_service', (t) => {
    t.bigInteger('account_id').primary().references('accounts.id').onDelete('CASCADE');
    t.boolean('served').notNullable().comment('what the monitors, webhooks and tracking last acted on');
    t.timestamp('changed_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  // A delivery whose account was not served when its attempt came: kept, not sent, until the
  // account is served again (src/webhooks/parking.ts).
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.timestamp('parked_at', { useTz: true }).nullable().comment('set while its account is not served');
  });
  await knex.raw('CREATE INDEX webhook_deliveries_parked ON webhook_deliveries (account_id) WHERE parked_at IS NOT NULL');
  // An account served again rejoins its items at their last change's id (src/monitors/membership.ts).
  await knex.raw('CREATE INDEX watchlist_changes_item ON watchlist_changes (item_id, id)');
}
