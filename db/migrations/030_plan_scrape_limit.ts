// plans.scrape_requests_per_platform_per_minute (issue 36): on-demand scrapes one account of the
// plan may send to one platform per calendar minute. NULL: the service default,
// SCRAPE_REQUESTS_PER_PLATFORM_PER_MINUTE, which every plan of 001 keeps (so a deployment's
// setting applies to them). The Stripe mirror fills it from the plan's optional metadata key
// (src/billing/stripe/plan-terms.ts). Read with the key (src/gateway/key-verifier.ts), so a change
// applies within KEY_CACHE_TTL_MS. Listed in docs/billing.md.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('plans', (t) => {
    t.integer('scrape_requests_per_platform_per_minute')
      .nullable()
      .comment('on-demand scrapes per account and platform per calendar minute; null: SCRAPE_REQUESTS_PER_PLATFORM_PER_MINUTE');
  });
  // Zero would refuse every scrape of a plan that may call the API: not granting Live
  // Availability is how an account is kept from it.
  await knex.raw(
    'ALTER TABLE plans ADD CONSTRAINT plans_scrape_requests_positive CHECK (scrape_requests_per_platform_per_minute IS NULL OR scrape_requests_per_platform_per_minute > 0)',
  );
}
