// What the monitors keep per watched target (platform, event, region), once no item watches it.
//
// target_snapshots: a poller stores a target's scrape only when it changed and keeps its newest
// 20 (src/monitors/record-poll.ts), so a watched target holds at most 20 rows. A target no member
// watches any more is no longer polled and its rows would stay for ever: they go once they are
// older than MONITOR_UNWATCHED_RETENTION_HOURS. An item that watches the target again later
// starts from a fresh baseline, as any new item does.
//
// monitor_target_status: a target's failing or blocked state, written when it starts or stops
// failing (activities/poll-shard.ts). A target that stops being watched while failing is never
// cleared by its poller; its row goes once no member watches it and it was not written for
// MONITOR_UNWATCHED_RETENTION_HOURS (`monitors:blocked` lists watched targets only).
//
// monitor_target_checks: when each target was last checked (src/monitors/check-log.ts), one row
// per target. A target no member watches is no longer checked; its row goes once it is older
// than MONITOR_UNWATCHED_RETENTION_HOURS, as its snapshots do.
import { deleteRule, type RetentionRule } from './rule.ts';

export function targetSnapshotsRule(opts: { retentionHours: number }): RetentionRule {
  return deleteRule('target_snapshots', 1_000, (limit) => ({
    sql: `DELETE FROM target_snapshots WHERE id IN (
            SELECT s.id FROM target_snapshots s
            WHERE s.scraped_at < now() - make_interval(hours => ?)
              AND NOT EXISTS (SELECT 1 FROM monitor_members m WHERE m.target = s.target)
            LIMIT ?)`,
    bindings: [opts.retentionHours, limit],
  }));
}

export function monitorTargetStatusRule(opts: { retentionHours: number }): RetentionRule {
  return deleteRule('monitor_target_status', 1_000, (limit) => ({
    sql: `DELETE FROM monitor_target_status WHERE target IN (
            SELECT t.target FROM monitor_target_status t
            WHERE t.updated_at < now() - make_interval(hours => ?)
              AND NOT EXISTS (SELECT 1 FROM monitor_members m WHERE m.target = t.target)
            LIMIT ?)`,
    bindings: [opts.retentionHours, limit],
  }));
}

export function monitorTargetChecksRule(opts: { retentionHours: number }): RetentionRule {
  return deleteRule('monitor_target_checks', 1_000, (limit) => ({
    sql: `DELETE FROM monitor_target_checks WHERE target IN (
            SELECT c.target FROM monitor_target_checks c
            WHERE c.checked_at < now() - make_interval(hours => ?)
              AND NOT EXISTS (SELECT 1 FROM monitor_members m WHERE m.target = c.target)
            LIMIT ?)`,
    bindings: [opts.retentionHours, limit],
  }));
}
