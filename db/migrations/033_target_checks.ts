// Issue 38, "users see each item's health": what GET /watchlist shows of each item's target
// (src/apis/watchlist/health.ts).
//
// monitor_target_checks: when each watched target was last checked (a poll that got an answer,
// or failed), and whether that check read the event. A poll whose content did not change writes nothing else, so this is the one record
// of it. Cheap by design: the shard pollers of a worker process collect the times in memory and
// write them once a second in one statement (src/monitors/check-log.ts), one row per target
// (never per poll or per item), updated in place. No index but the key, and a fillfactor that
// leaves room on each page, so the updates are HOT (no index write, pruned in-page).
//
// monitor_target_status.last_failure: the ScrapeFailure kind of the target's last failed poll
// (`not_found`, `upstream`, `blocked`, ...; `internal` for anything else), written by the same
// statement as the rest of the row, so the item can say `not_found` rather than `failing`.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE monitor_target_checks (
      target text PRIMARY KEY,
      checked_at timestamptz NOT NULL,
      ok boolean NOT NULL
    ) WITH (fillfactor = 70)`);
  await knex.raw(`COMMENT ON TABLE monitor_target_checks IS 'when each watched target was last polled (answered or failed); written once a second per worker (src/monitors/check-log.ts)'`);
  await knex.raw(`COMMENT ON COLUMN monitor_target_checks.target IS 'platform:region:event key, as monitor_members.target'`);
  await knex.raw(`COMMENT ON COLUMN monitor_target_checks.checked_at IS 'when the newest check known ended (the poller''s clock); never moves back'`);
  await knex.raw(`COMMENT ON COLUMN monitor_target_checks.ok IS 'that check read the event (false: it failed; monitor_target_status says how)'`);
  await knex.schema.alterTable('monitor_target_status', (t) => {
    t.text('last_failure').nullable().comment('the ScrapeFailure kind of the last failed poll (not_found, upstream, blocked, ...; internal otherwise); null in rows written before migration 033');
  });
  // The targets checked before this table existed: their newest check known is their newest
  // snapshot's read (it worked), or their status row's last write (it failed), whichever is later.
  await knex.raw(`
    INSERT INTO monitor_target_checks (target, checked_at, ok)
    SELECT DISTINCT ON (target) target, at, ok FROM (
      SELECT target, max(scraped_at) AS at, true AS ok FROM target_snapshots GROUP BY target
      UNION ALL
      SELECT target, updated_at, false FROM monitor_target_status
    ) known
    ORDER BY target, at DESC`);
}
