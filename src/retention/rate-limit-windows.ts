// rate_limit_windows: one row per subject (key or client address) and calendar minute
// (src/gateway/rate-limit.ts). A window is only read while it is current, so a row goes once
// its minute ended more than a minute ago.
import { deleteRule, type RetentionRule } from './rule.ts';

export function rateLimitWindowsRule(): RetentionRule {
  return deleteRule('rate_limit_windows', 5_000, (limit) => ({
    sql: `DELETE FROM rate_limit_windows WHERE (subject, window_start) IN (
            SELECT subject, window_start FROM rate_limit_windows
            WHERE window_start < now() - interval '2 minutes'
            LIMIT ?)`,
    bindings: [limit],
  }));
}
