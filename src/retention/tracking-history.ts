// The Market Data tracker's time series (src/market-data/tracking-store.ts): every tick of a
// tracked event (TRACK_INTERVAL_MS, a minute) writes a marketplace A snapshot, or a marketplace B
// scrape run with its section and offer rows and a statistics row: 1,440 rows a day per event.
// Rows younger than TRACKING_DETAIL_RETENTION_HOURS (48) are all kept; of older ones only the
// last row of each event's UTC day stays. That keeps everything the Market Data API reads:
// - the newest row (summary, latest_stats, the search row) and the row 24 h before it (the
//   `_24h` figures and the dashboard's change) lie inside the detail window;
// - dashboard_v2's chart is each day's last row, kept for every day;
// - statisticsHistory and scrape_runs (at most `limit`, 1,000, newest first) list every tick of
//   the last 48 h, then one row per day.
// mb_scrape_runs' section and offer rows go with their run (ON DELETE CASCADE); only the newest
// run's are ever read. The statistics rows are thinned before the runs, so a run is deleted after
// its statistics row and no SET NULL update is needed.
//
// The tables have no index on their time alone, so a rule walks its table in id order, a chunk
// per batch, from a position it keeps in memory: in each chunk it deletes the rows older than
// the window that have a later row on the same day (an index probe on (event_id, time)), and
// stops where the rows inside the window begin. A restarted process walks once from the start
// over the rows kept; after that each tick only looks at rows that aged out since.
import type { Knex } from 'knex';
import type { RetentionRule } from './rule.ts';

interface Series {
  table: 'ma_stats_snapshots' | 'mb_statistics_history' | 'mb_scrape_runs';
  /** The column that says when the row was captured. */
  time: 'captured_at' | 'created_at';
  batchSize: number;
}

const SERIES: readonly Series[] = [
  { table: 'ma_stats_snapshots', time: 'captured_at', batchSize: 1_000 },
  { table: 'mb_statistics_history', time: 'created_at', batchSize: 1_000 },
  // Each run takes its section and offer rows with it (a few dozen): smaller batches.
  { table: 'mb_scrape_runs', time: 'created_at', batchSize: 200 },
];

function walkSql({ table, time }: Series): string {
  return `
WITH chunk AS (
  SELECT id, event_id, ${time} AS at FROM ${table} WHERE id > ? ORDER BY id LIMIT ?
), cutoff AS (
  SELECT now() - make_interval(hours => ?) AS at
), doomed AS (
  SELECT c.id FROM chunk c, cutoff
  WHERE c.at < cutoff.at
    AND EXISTS (
      SELECT 1 FROM ${table} later
      WHERE later.event_id = c.event_id
        AND (later.${time}, later.id) > (c.at, c.id)
        AND later.${time} < date_trunc('day', c.at, 'UTC') + interval '1 day')
), gone AS (
  DELETE FROM ${table} t USING doomed d WHERE t.id = d.id RETURNING t.id
)
SELECT (SELECT count(*) FROM gone) AS deleted,
       (SELECT count(*) FROM chunk) AS examined,
       (SELECT max(id) FROM chunk) AS last_id,
       (SELECT min(c.id) FROM chunk c, cutoff WHERE c.at >= cutoff.at) AS first_recent`;
}

/** The rule for one series; each instance keeps its own walk position. */
function seriesRule(series: Series, detailHours: number): RetentionRule {
  const sql = walkSql(series);
  let position = 0;
  return {
    table: series.table,
    batchSize: series.batchSize,
    async batch(trx: Knex.Transaction, limit: number) {
      const { rows } = await trx.raw(sql, [position, limit, detailHours]);
      const r = rows[0] as { deleted: number; examined: number; last_id: number | null; first_recent: number | null };
      const deleted = Number(r.deleted);
      if (r.first_recent !== null) {
        // Rows from here on are inside the window: come back to them when they have aged.
        position = Number(r.first_recent) - 1;
        return { deleted, more: false };
      }
      if (r.last_id !== null) position = Number(r.last_id);
      return { deleted, more: Number(r.examined) >= limit };
    },
  };
}

/** The three series' rules, statistics before runs. */
export function trackingHistoryRules(opts: { detailHours: number }): RetentionRule[] {
  return SERIES.map((s) => seriesRule(s, opts.detailHours));
}
