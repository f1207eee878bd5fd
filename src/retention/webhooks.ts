// Webhooks: finished deliveries (with their attempts) and deleted endpoints.
//
// webhook_deliveries: a delivered or failed delivery is kept WEBHOOK_RETENTION_DAYS after its last
// change, so GET /webhooks/{id}/deliveries shows a month of history; its attempts go with it
// (ON DELETE CASCADE). A pending delivery is never pruned, however old: its retry workflow, or
// its account being served again, still needs it.
//
// webhooks: a DELETE /webhooks/{id} only sets `deleted`. The row goes WEBHOOK_RETENTION_DAYS after
// the delete once it has no delivery left at all (the rule above removes them as they age), so
// the delete never cascades into a large number of rows in one statement.
import { deleteRule, type RetentionRule } from './rule.ts';

export function webhookDeliveriesRule(opts: { retentionDays: number }): RetentionRule {
  return deleteRule('webhook_deliveries', 1_000, (limit) => ({
    // webhook_deliveries_finished (migration 016) holds exactly the candidates.
    sql: `DELETE FROM webhook_deliveries WHERE id IN (
            SELECT id FROM webhook_deliveries
            WHERE state <> 'pending' AND updated_at < now() - make_interval(days => ?)
            LIMIT ?)`,
    bindings: [opts.retentionDays, limit],
  }));
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
