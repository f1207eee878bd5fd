// The Stripe API client, built once from the configuration. STRIPE_API_BASE points it at
// stripe-mock (tests) or leaves it on api.stripe.com. Two flavours: live reads on a request's
// path (/usage, a webhook's re-read) get a short timeout and no retry, so a client waits seconds,
// not minutes; background work (meter sync, reconcile) is retried by Temporal, not here. The admin
// CLI has no one to retry for it, so it asks the client to (the same Idempotency-Key each time).
import Stripe from 'stripe';
import type { Config } from '../../config.ts';

/** The longest a live read may take before /usage answers 502 billing_unavailable. */
export const LIVE_READ_TIMEOUT_MS = 3_000;

export type StripeSettings = Pick<Config, 'STRIPE_SECRET_KEY' | 'STRIPE_API_BASE'>;

export function createStripeClient(config: StripeSettings, opts: { timeoutMs?: number; maxNetworkRetries?: number } = {}): Stripe {
  if (!config.STRIPE_SECRET_KEY) throw new Error('STRIPE_SECRET_KEY is required for the Stripe client');
  const base = config.STRIPE_API_BASE ? new URL(config.STRIPE_API_BASE) : null;
  return new Stripe(config.STRIPE_SECRET_KEY, {
    timeout: opts.timeoutMs ?? LIVE_READ_TIMEOUT_MS,
    maxNetworkRetries: opts.maxNetworkRetries ?? 0,
    // No telemetry headers about earlier requests: nothing leaves but the request itself.
    telemetry: false,
    ...(base
      ? {
          host: base.hostname.replace(/^\[|\]$/g, ''),
          port: Number(base.port || (base.protocol === 'https:' ? 443 : 80)),
          protocol: base.protocol === 'https:' ? 'https' : 'http',
        }
      : {}),
  });
}
