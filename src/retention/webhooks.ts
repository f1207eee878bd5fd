// Webhooks: finished deliveries (with their attempts), parked ones past the retry schedule, and
// deleted endpoints.
//
// webhook_deliveries: a delivered or failed delivery is kept WEBHOOK_RETENTION_DAYS after its last
// change, so GET /webhooks/{id}/deliveries shows a month of history; its attempts go with it
// (ON DELETE CASCADE). A pending delivery in its retry schedule is never pruned: the schedule
// ends it (about 31.7 h). A parked one (its account not served, src/webhooks/parking.ts) has no
// schedule running, and an account that stays unserved would keep it for ever: once it is older
// than the retry schedule's whole span it is failed as expired, exactly as the account being
// served again would fail it (the same function), and is then an ordinary failed delivery that
// goes WEBHOOK_RETENTION_DAYS later. Ending rather than deleting keeps the customer's answer in
// the deliveries list: why it was never sent.
//
// webhooks: a DELETE /webhooks/{id} only sets `deleted`. The row goes WEBHOOK_RETENTION_DAYS after
// the delete once it has no delivery left at all (the rule above removes them as they age), so
// the delete never cascades into a large number of rows in one statement.
import { expireParkedDeliveries } from '../webhooks/parking.ts';
import { deleteRule, type RetentionRule } from './rule.ts';

export function webhookDeliveriesRule(opts: { retentionDays: number; /** The retry schedule's whole span (retryScheduleSpanMs). */ parkedExpireAfterMs: number }): RetentionRule {
  const finished = deleteRule('webhook_deliveries', 1_000, (limit) => ({
    // webhook_deliveries_finished (migration 016) holds exactly the candidates.
    sql: `DELETE FROM webhook_deliveries WHERE id IN (
            SELECT id FROM webhook_deliveries
            WHERE state <> 'pending' AND updated_at < now() - make_interval(days => ?)
            LIMIT ?)`,
    bindings: [opts.retentionDays, limit],
  }));
  return {
    ...finished,
    async batch(trx, limit) {
      const ended = await expireParkedDeliveries(trx, { expireAfterMs: opts.parkedExpireAfterMs, limit });
      const { deleted, more } = await finished.batch(trx, limit);
      return { deleted, ended, more: more || ended >= limit };
    },
  };
}

export function deletedWebhooksRule(opts: { retentionDays: number }): RetentionRule {
  return deleteRule('webhooks', 500, (limit) => ({
    sql: `DELETE FROM webhooks WHERE id IN (
            SELECT w.id FROM webhooks w
            WHERE w.deleted AND w.deleted_at < now() - make_interval(days => ?)
              AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.webhook_id = w.id)
            LIMIT ?)`,
    bindings: [opts.retentionDays, limit],
  }));
}
