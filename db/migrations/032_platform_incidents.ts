// Issue 38: a platform-wide failure is the platform's, not each event's. When a large share of a
// platform's watched targets answers not-found or blocked at once, src/monitors/platform-incidents.ts
// opens an incident here: nothing of the platform is retired while it is open, each item on the
// platform is told once that its platform is failing (`platform_incident` in the notifications
// log) and again when it recovers, and the not-found clocks of its targets restart at the end.
// At most one open incident per platform (the partial unique index); closed ones are kept 90 days
// for the ops CLI (pruned when the platform's next incident closes).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE monitor_platform_incidents (
      id bigserial PRIMARY KEY,
      platform text NOT NULL,
      started_at timestamptz NOT NULL DEFAULT now(),
      ended_at timestamptz,
      targets integer NOT NULL,
      not_found integer NOT NULL,
      blocked integer NOT NULL,
      peak_failing integer NOT NULL,
      items_told integer NOT NULL DEFAULT 0
    )`);
  await knex.raw('CREATE UNIQUE INDEX monitor_platform_incidents_open ON monitor_platform_incidents (platform) WHERE ended_at IS NULL');
  await knex.raw(`COMMENT ON TABLE monitor_platform_incidents IS 'platform-wide failures: a large share of a platform''s watched targets not-found or blocked at once (src/monitors/platform-incidents.ts)'`);
  await knex.raw(`COMMENT ON COLUMN monitor_platform_incidents.targets IS 'watched targets of the platform when the incident opened'`);
  await knex.raw(`COMMENT ON COLUMN monitor_platform_incidents.not_found IS 'of them, answering not-found when it opened'`);
  await knex.raw(`COMMENT ON COLUMN monitor_platform_incidents.blocked IS 'of them, blocked (and not not-found) when it opened'`);
  await knex.raw(`COMMENT ON COLUMN monitor_platform_incidents.peak_failing IS 'the most targets failing at once while it was open'`);
  await knex.raw('ALTER TABLE notifications DROP CONSTRAINT notifications_kind_valid');
  await knex.raw(`ALTER TABLE notifications ADD CONSTRAINT notifications_kind_valid CHECK (kind IN ('notification','watchlist','target_retired','platform_incident'))`);
}
