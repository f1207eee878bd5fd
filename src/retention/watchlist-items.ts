// watchlist_items: a DELETE /watchlist/{id} only sets `deleted` (spec 2.1: a soft delete), and
// the API never shows a deleted item again. Its row goes WATCHLIST_DELETED_RETENTION_DAYS after
// the delete, once nothing can read it any more:
// - the membership relay has applied the delete (no monitor_members row: a member is what the
//   pollers poll and its cooldowns go with it);
// - its notifications have left the log (STREAM_RETENTION_HOURS, when that is the longer): a
//   webhook delivery still pending reads the item through its notification to mention the
//   item's Discord roles (src/webhooks/attempt.ts); with the notification gone it finds nothing
//   either way. An item writes no notification once deleted, so waiting out the log's
//   retention after the delete is enough, and costs no look at the deliveries.
// The changes that carried the item (watchlist_changes) hold their own copy of it, and a
// notification keeps its item id as a plain number: neither needs the row.
import { deleteRule, type RetentionRule } from './rule.ts';

export function watchlistItemsRule(opts: { retentionDays: number; notificationsRetentionHours: number }): RetentionRule {
  const hours = Math.max(opts.retentionDays * 24, opts.notificationsRetentionHours);
  return deleteRule('watchlist_items', 1_000, (limit) => ({
    // watchlist_items_deleted (migration 028) finds the deleted ones oldest first.
    sql: `DELETE FROM watchlist_items WHERE id IN (
            SELECT i.id FROM watchlist_items i
            WHERE i.deleted AND i.deleted_at < now() - make_interval(hours => ?)
              AND NOT EXISTS (SELECT 1 FROM monitor_members m WHERE m.item_id = i.id)
            ORDER BY i.deleted_at LIMIT ?)`,
    bindings: [hours, limit],
  }));
}
