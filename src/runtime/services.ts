// Builds the services every request handler receives, once per process.
import type { Config } from '../config.ts';
import type { Db } from '../../db/connection.ts';
import { createPool, type Pool } from '../../db/pool.ts';
import type { Logger } from '../logger.ts';
import { LocalBillingProvider } from '../billing/local-provider.ts';
import type { BillingProvider } from '../billing/provider.ts';
import { createStripeClient } from '../billing/stripe/client.ts';
import { StripeBillingProvider } from '../billing/stripe/provider.ts';
import { createStripeWebhookHandler, type StripeWebhookHandler } from '../billing/stripe/webhook-endpoint.ts';
import { KeyVerifier } from '../gateway/key-verifier.ts';
import { Metrics } from '../gateway/metrics.ts';
import { AdmissionGroups } from '../gateway/admissions.ts';
import { RateLimiter } from '../gateway/rate-limit.ts';
import { SearchVocabulary } from '../market-data/search-vocabulary.ts';
import type { Services } from '../gateway/request-state.ts';
import { SecretBox } from '../webhooks/secret-box.ts';
import { systemLookup } from '../webhooks/url-rules.ts';

/** The per-request pool for a database (db/pool.ts), sized by the configuration. */
export function createRequestPool(config: Config, connectionString: string): Pool {
  return createPool({ connectionString, max: config.DB_POOL_MAX, statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS });
}

/** `db` (knex) serves occasional statements; `pool` the per-request ones. The services own `pool`. */
export function createServices(config: Config, db: Db, pool: Pool, log: Logger, metrics = new Metrics()): Services {
  const admissions = new AdmissionGroups(pool);
  const { billing, stripeWebhook } = billingFor(config, db, pool, admissions);
  return {
    config,
    db,
    pool,
    log,
    billing,
    stripeWebhook,
    keys: new KeyVerifier(db, config.KEY_CACHE_TTL_MS),
    limiter: new RateLimiter(admissions, pool),
    metrics,
    searchVocabulary: new SearchVocabulary(pool),
    webhookSecrets: config.WEBHOOK_SECRET_KEY ? new SecretBox(config.WEBHOOK_SECRET_KEY) : undefined,
    webhookLookup: systemLookup,
  };
}

/** The configured billing provider, and with Stripe the endpoint its webhooks arrive at. */
function billingFor(config: Config, db: Db, pool: Pool, admissions: AdmissionGroups): { billing: BillingProvider; stripeWebhook?: StripeWebhookHandler } {
  if (config.BILLING_PROVIDER !== 'stripe') return { billing: new LocalBillingProvider(db, pool, { admissions }) };
  const stripe = createStripeClient(config);
  return {
    billing: new StripeBillingProvider(db, pool, stripe, { admissions }),
    stripeWebhook: createStripeWebhookHandler({ db, stripe, secret: config.STRIPE_WEBHOOK_SECRET! }),
  };
}

/** Writes queued captures and closes the per-request pool (the knex pool is the caller's). */
export async function closeServices(services: Services): Promise<void> {
  await services.billing.flush().catch(() => {});
  await services.pool.end();
}
