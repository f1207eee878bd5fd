// The billing seam. A provider owns plans and subscriptions and meters credits; the gateway
// and the Account API talk only to this interface. The embedded default is LocalBillingProvider
// (PostgreSQL); a Stripe-backed provider implements the same contract.

export const SERVED_STATUSES = ['active', 'trialing'] as const;
// Stripe's statuses, every one: only active and trialing are served (spec 3.2).
export const SUBSCRIPTION_STATUSES = ['active', 'trialing', 'past_due', 'paused', 'canceled', 'unpaid', 'incomplete', 'incomplete_expired'] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

export function isServed(status: SubscriptionStatus): boolean {
  return (SERVED_STATUSES as readonly string[]).includes(status);
}

export interface Plan {
  id: string;
  name: string;
  included: number;
  /** null: unlimited, no ceiling. */
  hardCap: number | null;
  priceId: string | null;
  productId: string | null;
}

export interface Subscription {
  id: string;
  planId: string;
  status: SubscriptionStatus;
  periodStart: Date;
  periodEnd: Date;
  cancelAtPeriodEnd: boolean;
  canceledAt: Date | null;
  trialEnd: Date | null;
}

/** Everything the usage report needs, read live in one go. */
export interface BillingSnapshot {
  accountId: number;
  customerId: string | null;
  subscription: Subscription | null;
  plan: Plan | null;
  /** Credits used in the subscription's current period. */
  used: number;
}

export interface ChargeRequest {
  accountId: number;
  keyId: string;
  requestId: string;
  operation: string;
  credits: number;
}

export type Denial = 'limit_reached' | 'no_subscription' | 'no_billing_account' | 'plan_unavailable' | 'payment_required';

export type Authorization = { ok: true; usedAfter: number } | { ok: false; denial: Denial };

/** A paid request's admission: its key's rate window and its credits, decided in one step. */
export interface AdmissionRequest extends ChargeRequest {
  rate: { subject: string; windowStart: Date; limit: number };
}

export type Admission = { hits: number } & ({ rateLimited: true } | { rateLimited: false; authorization: Authorization });

/** Thrown when the provider cannot be reached; callers fail closed. */
export class BillingUnavailableError extends Error {
  constructor(cause: unknown) {
    super('billing provider unavailable', { cause });
  }
}

/**
 * Metering (counters and ledger) stays in our PostgreSQL whatever the provider: a provider
 * backed by an outside system (Stripe) mirrors plans and subscriptions into the same tables and
 * reports captured usage to that system asynchronously.
 */
export interface BillingProvider {
  snapshot(accountId: number): Promise<BillingSnapshot>;
  /**
   * Counts the request in its key's rate window and, only when within the limit, reserves its
   * credits; one atomic step that also enforces the hard cap. A rate-limited request is never charged.
   */
  admit(req: AdmissionRequest): Promise<Admission>;
  /**
   * Turns a reservation into a charge (the request was served, or the API answered 4xx).
   * Idempotent; captures are written in small batches and the promise resolves once stored.
   */
  capture(requestId: string, statusCode: number): Promise<void>;
  /** Writes any queued captures (at shutdown). */
  flush(): Promise<void>;
  /** Returns a reservation's credits (denied or 5xx). Idempotent: credits come back at most once. */
  release(requestId: string, statusCode: number | null): Promise<void>;
  /** Releases reservations older than maxAgeMs, left behind by a crash. Returns how many. */
  releaseOrphans(maxAgeMs: number): Promise<number>;
}
