// Webhook deliveries of an account that is not served (src/accounts/service-state.ts): kept, not
// sent. An attempt that finds its account not served parks the delivery (parked_at; still
// pending, with no next attempt, so neither the dispatcher nor a retry round takes it again)
// and sends nothing. When the account is served again, the service sweep's hook hands its
// parked deliveries back to the dispatcher, which sends them (a retry keeps its place in the
// schedule), except those older than the retry schedule's whole span: a message that old would
// no longer have been retried, so it fails as expired, as it would have with a dead endpoint.
// An account that stays unserved does not keep them for ever either: the gateway's housekeeping
// ends the same ones the same way (src/retention/webhooks.ts), with the same rule below.
import type { Knex } from 'knex';
import type { ServiceHooks } from '../accounts/service-state.ts';

/** The failure reason an expired parked delivery is given (written by webhook_deliveries_expire_parked(), db/migrations/036). */
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

/**
 * Fails as expired the parked deliveries older than `expireAfterMs` (the retry schedule's whole
 * span), any `limit` of them: the housekeeping's rule, the one a resume applies to its accounts
 * (webhook_deliveries_expire_parked(), db/migrations/036). Returns how many.
 */
export async function expireParkedDeliveries(trx: Knex.Transaction, opts: { expireAfterMs: number; limit: number }): Promise<number> {
  const { rows } = (await trx.raw('SELECT webhook_deliveries_expire_parked(NULL, ?, ?) AS n', [Math.round(opts.expireAfterMs), opts.limit])) as { rows: { n: number }[] };
  return Number(rows[0]!.n);
}

/**
 * The service sweep's hooks for webhooks: parking is lazy, at the next attempt; resuming hands a
 * served account's parked deliveries back to the dispatcher (the too-old ones fail as expired),
 * through webhook_deliveries_resume(): the scrape worker runs the sweep, and its role has no
 * right on the deliveries themselves (db/scraper-grants.ts).
 */
export function deliveryServiceHooks(opts: { expireAfterMs: number }): ServiceHooks {
  return {
    suspend: async () => {},
    resume: async (trx, accountIds) => {
      await trx.raw('SELECT webhook_deliveries_resume(?::bigint[], ?)', [accountIds, Math.round(opts.expireAfterMs)]);
    },
  };
}
