// The Stripe billing provider. Admission, capture and release run on the local mirror exactly
// as the local provider does (same tables, same one-statement admission), so a paid request
// never waits on Stripe and keeps being served while Stripe is down. Only the usage report
// reads Stripe, live on every call (spec 4.4): the subscription with its price and product,
// merged with the credits our ledger counted in that period.
import Stripe from 'stripe';
import type { Db } from '../../../db/connection.ts';
import type { Pool } from '../../../db/pool.ts';
import type { AdmissionGroups } from '../../gateway/admissions.ts';
import { LocalBillingProvider } from '../local-provider.ts';
import { BillingUnavailableError, type Admission, type AdmissionRequest, type BillingProvider, type BillingSnapshot } from '../provider.ts';
import { viewOf } from './mirror.ts';

export class StripeBillingProvider implements BillingProvider {
  private readonly mirror: LocalBillingProvider;

  constructor(
    private readonly db: Db,
    pool: Pool,
    private readonly stripe: Stripe,
    opts: { admissions?: AdmissionGroups } = {},
  ) {
    this.mirror = new LocalBillingProvider(db, pool, opts);
  }

  async snapshot(accountId: number): Promise<BillingSnapshot> {
    let row;
    try {
      row = await this.db('accounts as a').leftJoin('subscriptions as s', 's.account_id', 'a.id').where('a.id', accountId).first('a.customer_id', 's.id as sub_id');
    } catch (err) {
      throw new BillingUnavailableError(err);
    }
    if (!row) throw new Error(`account ${accountId} not found`);
    const none: BillingSnapshot = { accountId, customerId: row.customer_id, subscription: null, plan: null, used: 0 };
    if (!row.customer_id || !row.sub_id) return none;
    let sub: Stripe.Subscription;
    try {
      sub = await this.stripe.subscriptions.retrieve(row.sub_id, { expand: ['items.data.price.product'] });
    } catch (err) {
      // Gone at Stripe: the account has no subscription (the reconcile run mirrors that too).
      if (err instanceof Stripe.errors.StripeInvalidRequestError && err.statusCode === 404) return none;
      throw new BillingUnavailableError(err);
    }
    const view = viewOf(sub);
    const counter = await this.db('usage_counters').where({ account_id: accountId, period_start: view.subscription.periodStart }).first('used');
    return { accountId, customerId: view.customerId, subscription: view.subscription, plan: view.plan, used: Number(counter?.used ?? 0) };
  }

  admit(req: AdmissionRequest): Promise<Admission> {
    return this.mirror.admit(req);
  }

  capture(requestId: string, statusCode: number): Promise<void> {
    return this.mirror.capture(requestId, statusCode);
  }

  flush(): Promise<void> {
    return this.mirror.flush();
  }

  release(requestId: string, statusCode: number | null): Promise<void> {
    return this.mirror.release(requestId, statusCode);
  }

  releaseOrphans(maxAgeMs: number): Promise<number> {
    return this.mirror.releaseOrphans(maxAgeMs);
  }
}
