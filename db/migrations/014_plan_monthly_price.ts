// plans.monthly_price: the fixed monthly fee of a plan in USD, which `npm run admin -- billing:sync`
// turns into the plan's base Price in Stripe (the overage Price comes from overage_unit_price).
// NULL: the plan has no base price to sell, so billing:sync leaves it out (plans the Stripe mirror
// or a test adds are such). The defaults below are listed in docs/gateway.md, "Default plans".
import type { Knex } from 'knex';

/** USD per month of the default plans of 001. */
export const DEFAULT_MONTHLY_PRICES: Readonly<Record<string, string>> = { free: '0', starter: '49', pro: '299', enterprise: '1999' };

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('plans', (t) => {
    t.decimal('monthly_price', 12, 2).nullable().comment('USD per month (the base Price); null: not synced to the billing provider');
  });
  await knex.raw('ALTER TABLE plans ADD CONSTRAINT plans_monthly_price_nonneg CHECK (monthly_price IS NULL OR monthly_price >= 0)');
  // Only where still unset: an operator's own price for a default plan is kept.
  for (const [id, price] of Object.entries(DEFAULT_MONTHLY_PRICES)) {
    await knex('plans').where({ id }).whereNull('monthly_price').update({ monthly_price: price });
  }
}
