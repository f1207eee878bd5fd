// watchlist_changes: every watchlist write, read in id order by the change-feed consumers (the
// monitor relay and the membership relay, src/monitors/change-feed.ts), each from its cursor in
// relay_cursors. A row goes only once every cursor has passed it and it is older than
// WATCHLIST_CHANGES_RETENTION_DAYS (kept a while to see what a consumer applied). With no cursor
// at all nothing goes: no consumer has started, and the first one reads from the beginning.
//
// A new consumer therefore cannot rebuild state from the whole history: it must start its cursor
// at the current head and read the items themselves (watchlist_items). A consumer that is retired
// must delete its cursor row, or it holds every later change for ever (migration 028 removed the
// one left by the per-item relay of issue 13).
import { deleteRule, type RetentionRule } from './rule.ts';

export function watchlistChangesRule(opts: { retentionDays: number }): RetentionRule {
  return deleteRule('watchlist_changes', 1_000, (limit) => ({
    sql: `DELETE FROM watchlist_changes WHERE id IN (
            SELECT id FROM watchlist_changes
            WHERE id <= (SELECT min(last_id) FROM relay_cursors)
              AND created_at < now() - make_interval(days => ?)
            ORDER BY id LIMIT ?)`,
    bindings: [opts.retentionDays, limit],
  }));
}
