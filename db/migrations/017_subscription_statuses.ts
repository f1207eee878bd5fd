// Every Stripe subscription status in the mirror: a subscription Stripe creates for a customer
// without a payment method starts `incomplete` (and may end `incomplete_expired`), and the mirror
// must be able to hold it (not served: 402 no_subscription) rather than fail to write it.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_status_valid');
  await knex.raw(`ALTER TABLE subscriptions ADD CONSTRAINT subscriptions_status_valid
    CHECK (status IN ('active','trialing','past_due','paused','canceled','unpaid','incomplete','incomplete_expired'))`);
}
