// Webhook deliveries of an account that is not served (src/accounts/service-state.ts): kept, not
// sent. An attempt that finds its account not served parks the delivery (parked_at; still
// pending, with no next attempt, so neither the dispatcher nor a retry round takes it again)
// and sends nothing. When the account is served again, the service sweep's hook hands its
// parked deliveries back to the dispatcher, which sends them (a retry keeps its place in the
// schedule), except those older than the retry schedule's whole span: a message that old would
// no longer have been retried, so it fails as expired, as it would have with a dead endpoint.
import type { Knex } from 'knex';
import type { ServiceHooks } from '../accounts/service-state.ts';
import { DELIVERIES_CHANNEL } from './outbox.ts';

export const EXPIRED_WHILE_PARKED = 'expired: its account was not served for longer than the retry schedule';

/**
 * Parks a pending delivery if its account is still not served; false when the account is served (send it). Under a share
 * lock on the account's state row: a sweep resuming the account either ran before (the state
 * read here is served: nothing is parked) or waits for this and then finds it parked.
 */
export async function parkDelivery(db: Knex, deliveryId: number, accountId: number): Promise<boolean> {
  return db.transaction(async (trx) => {
    const state = await trx('account_service').where({ account_id: accountId }).forShare().first('served');
    if (state?.served !== false) return false;
    await trx('webhook_deliveries')
      .where({ id: deliveryId, state: 'pending' })
      .update({ parked_at: trx.raw('statement_timestamp()'), next_attempt_at: null, dispatched: true, claimed_until: null, updated_at: trx.raw('statement_timestamp()') });
    return true;
  });
}

/** The service sweep's hooks for webhooks: parking is lazy, at the next attempt; resuming is here. */
export function deliveryServiceHooks(opts: { expireAfterMs: number }): ServiceHooks {
  return {
    suspend: async () => {},
    resume: async (trx, accountIds) => {
      const parked = () => trx('webhook_deliveries').whereIn('account_id', accountIds).whereNotNull('parked_at').where({ state: 'pending' });
      await parked()
        .where('created_at', '<', trx.raw('now() - make_interval(secs => ?)', [opts.expireAfterMs / 1000]))
        .update({ state: 'failed', failure_reason: EXPIRED_WHILE_PARKED, parked_at: null, updated_at: trx.raw('statement_timestamp()') });
      const n = await parked().update({ parked_at: null, dispatched: false, claimed_until: null, updated_at: trx.raw('statement_timestamp()') });
      if (n > 0) await trx.raw('SELECT pg_notify(?, ?)', [DELIVERIES_CHANNEL, '']);
    },
  };
}
