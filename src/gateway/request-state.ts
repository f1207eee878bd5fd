// What every request carries through the middleware chain: its id, its logger, the services
// handlers use (never module-level singletons), and what the gateway learned about the caller.
import type { Config } from '../config.ts';
import type { Db } from '../../db/connection.ts';
import type { Pool } from '../../db/pool.ts';
import type { Logger } from '../logger.ts';
import type { BillingProvider } from '../billing/provider.ts';
import type { ApiName } from './catalog.ts';
import type { KeyVerifier, Principal } from './key-verifier.ts';
import type { RateLimiter } from './rate-limit.ts';
import type { Metrics } from './metrics.ts';
import type { ScrapeRunner } from '../apis/live-availability/scrape-runs.ts';
import type { EventTracker } from '../market-data/tracking-service.ts';
import type { SearchVocabulary } from '../market-data/search-vocabulary.ts';
import type { SecretBox } from '../webhooks/secret-box.ts';
import type { HostLookup } from '../webhooks/url-rules.ts';
import type { StripeWebhookHandler } from '../billing/stripe/webhook-endpoint.ts';

export interface Services {
  config: Config;
  db: Db;
  /** Plain pg pool for the per-request statements (db/pool.ts). */
  pool: Pool;
  log: Logger;
  billing: BillingProvider;
  keys: KeyVerifier;
  limiter: RateLimiter;
  metrics: Metrics;
  /** The catalog's words for search's typo tolerance, read through `pool`. */
  searchVocabulary: SearchVocabulary;
  /** On-demand scrapes (Temporal); absent when no Temporal server is configured: 502. */
  scrapes?: ScrapeRunner;
  /** Market Data event tracking (Temporal); absent when no Temporal server is configured: 503. */
  tracking?: EventTracker;
  /** Seals webhook URLs and secrets; absent without WEBHOOK_SECRET_KEY: the webhook routes answer 500. */
  webhookSecrets?: SecretBox;
  /** Resolves webhook hosts for the address check (tests inject a fake: no real DNS). */
  webhookLookup: HostLookup;
  /** POST /billing/stripe/webhook; present only when BILLING_PROVIDER=stripe. */
  stripeWebhook?: StripeWebhookHandler;
}

export interface RequestState {
  requestId: string;
  log: Logger;
  services: Services;
  /** Set by the router once a route matched. */
  operationId?: string;
  api?: ApiName;
  /** Set by authentication. */
  principal?: Principal;
  /** Credits reserved for this request, once metering admitted it. */
  credits?: number;
}
