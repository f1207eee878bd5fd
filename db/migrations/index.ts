// The ordered list of migrations. Forward-only: there are no down migrations; a mistake is
// fixed by a new migration. Listed here (not discovered on disk) so bundling cannot reorder them.
import type { Knex } from 'knex';
import * as m001 from './001_accounts_billing_keys.ts';
import * as m002 from './002_watchlist.ts';
import * as m003 from './003_gateway_admit.ts';
import * as m004 from './004_monitors_notifications.ts';
import * as m005 from './005_market_data_catalog.ts';
import * as m006 from './006_market_data_stats.ts';
import * as m007 from './007_event_tracking.ts';
import * as m008 from './008_monitor_members.ts';
import * as m009 from './009_scrape_worker_browsers.ts';
import * as m010 from './010_webhooks.ts';
import * as m011 from './011_webhook_deliveries.ts';
import * as m012 from './012_webhook_failing_since.ts';
import * as m013 from './013_stripe_events.ts';
import * as m014 from './014_plan_monthly_price.ts';
import * as m015 from './015_meter_sync.ts';
import * as m016 from './016_webhook_retention.ts';
import * as m017 from './017_subscription_statuses.ts';
import * as m018 from './018_webhook_claims.ts';
import * as m019 from './019_webhook_waiting.ts';
import * as m020 from './020_worker_scraper_figures.ts';
import * as m021 from './021_discord_role_ids.ts';
import * as m022 from './022_watchlist_cooldown.ts';
import * as m023 from './023_monitor_cooldowns.ts';
import * as m024 from './024_stream_connections.ts';
import * as m025 from './025_stripe_subscriptions.ts';
import * as m026 from './026_account_service.ts';
import * as m027 from './027_tracking_limits.ts';
import * as m028 from './028_retention.ts';
import * as m029 from './029_target_retirement.ts';
import * as m030 from './030_plan_scrape_limit.ts';
import * as m031 from './031_account_service_signals.ts';
import * as m032 from './032_platform_incidents.ts';
import * as m033 from './033_target_checks.ts';
import * as m034 from './034_bounded_growth.ts';
import * as m035 from './035_cooldown_held_from.ts';
import * as m036 from './036_confined_notifications.ts';
import * as m037 from './037_stream_admit.ts';
import * as m038 from './038_member_priority.ts';
import * as m039 from './039_search_postings.ts';
import * as m040 from './040_search_covering_indexes.ts';
import * as m041 from './041_search_postings_filters.ts';
import * as m042 from './042_search_words_intersection.ts';
import * as m043 from './043_stream_spare_slots.ts';

interface Migration {
  up(knex: Knex): Promise<void>;
  /** `transaction: false`: run outside a transaction (CREATE INDEX CONCURRENTLY on a large table). */
  config?: { transaction?: boolean };
}

const migrations: Record<string, Migration> = {
  '001_accounts_billing_keys': m001,
  '002_watchlist': m002,
  '003_gateway_admit': m003,
  '004_monitors_notifications': m004,
  '005_market_data_catalog': m005,
  '006_market_data_stats': m006,
  '007_event_tracking': m007,
  '008_monitor_members': m008,
  '009_scrape_worker_browsers': m009,
  '010_webhooks': m010,
  '011_webhook_deliveries': m011,
  '012_webhook_failing_since': m012,
  '013_stripe_events': m013,
  '014_plan_monthly_price': m014,
  '015_meter_sync': m015,
  '016_webhook_retention': m016,
  '017_subscription_statuses': m017,
  '018_webhook_claims': m018,
  '019_webhook_waiting': m019,
  '020_worker_scraper_figures': m020,
  '021_discord_role_ids': m021,
  '022_watchlist_cooldown': m022,
  '023_monitor_cooldowns': m023,
  '024_stream_connections': m024,
  '025_stripe_subscriptions': m025,
  '026_account_service': m026,
  '027_tracking_limits': m027,
  '028_retention': m028,
  '029_target_retirement': m029,
  '030_plan_scrape_limit': m030,
  '031_account_service_signals': m031,
  '032_platform_incidents': m032,
  '033_target_checks': m033,
  '034_bounded_growth': m034,
  '035_cooldown_held_from': m035,
  '036_confined_notifications': m036,
  '037_stream_admit': m037,
  '038_member_priority': m038,
  '039_search_postings': m039,
  '040_search_covering_indexes': m040,
  '041_search_postings_filters': m041,
  '042_search_words_intersection': m042,
  '043_stream_spare_slots': m043,
};

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations),
  getMigrationName: (name) => name,
  getMigration: async (name) => {
    const m = migrations[name];
    if (!m) throw new Error(`unknown migration ${name}`);
    return {
      up: m.up,
      ...(m.config ? { config: m.config } : {}),
      down: async () => {
        throw new Error('migrations are forward-only');
      },
    };
  },
};

/** Applies every pending migration; safe to run concurrently (knex takes a lock table). */
export async function migrateLatest(knex: Knex): Promise<string[]> {
  const [, applied] = (await knex.migrate.latest({ migrationSource })) as [number, string[]];
  return applied;
}
