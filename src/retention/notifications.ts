// notifications: the log the stream serves and resumes from (src/notifications/log.ts). A row is
// kept STREAM_RETENTION_HOURS (7 days), which `hello.limits.retention_seconds` tells clients;
// older rows go oldest first, so what is left is always the newest part of the log and a client
// resuming from a pruned row is told `resume_gap` (src/stream/admission.ts).
import { deleteRule, type RetentionRule } from './rule.ts';

export function notificationsRule(opts: { retentionHours: number }): RetentionRule {
  return deleteRule('notifications', 1_000, (limit) => ({
    // The notifications_created index yields the oldest rows first; the batch stops at `limit`.
    sql: `DELETE FROM notifications WHERE id IN (
            SELECT id FROM notifications WHERE created_at < now() - make_interval(hours => ?)
            ORDER BY created_at, id LIMIT ?)`,
    bindings: [opts.retentionHours, limit],
  }));
}
