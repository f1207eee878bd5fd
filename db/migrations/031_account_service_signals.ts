// Issue 38: a change of an account's served state is a database fact, committed without any call
// to Temporal. account_service_signals is the outbox of what Temporal must still be told about
// those changes (a resumed account's trackings woken, its shard pollers started): the service
// sweep writes an account's row in the transaction that records its change, and the signal relay
// (src/accounts/service-signals.ts) delivers it afterwards, outside any transaction, retrying with
// backoff, and deletes it. One row per account: a later change of the same account overwrites an
// undelivered earlier one (resumed then lapsed: the resume is never sent), and `version`, drawn
// afresh from its sequence at each change, lets a relay that was delivering the earlier one leave
// the later one in place.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('account_service_signals', (t) => {
    t.bigInteger('account_id').primary().references('accounts.id').onDelete('CASCADE');
    t.boolean('served').notNullable().comment('the state Temporal is to be told about (the account_service row it was recorded with)');
    t.bigIncrements('version', { primaryKey: false }).comment('a new value at each change: a relay settles only the version it read');
    t.integer('attempts').notNullable().defaultTo(0).comment('deliveries tried since this change');
    t.timestamp('next_attempt_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('claimed_until', { useTz: true }).nullable().comment('a relay is delivering it until then (a relay that died lets it go)');
    t.text('last_error').nullable();
    t.timestamp('changed_at', { useTz: true }).notNullable().defaultTo(knex.fn.now()).comment('when the change it carries was recorded');
  });
  await knex.raw('CREATE INDEX account_service_signals_due ON account_service_signals (next_attempt_at)');
}
