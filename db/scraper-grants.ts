// The scrape worker's database rights (issue 25: the browser's process holds no secrets and only
// the rights it needs). Every table of the schema is listed in one of the two maps below, and
// test/db/scraper-grants.test.ts fails on a table in neither: a new table is a decision, not an
// accident. Applied with the migrations when SCRAPER_DB_ROLE names the role
// (src/runtime/database.ts): all of its rights are revoked and these granted again, so the role
// has exactly what this file says.
import type { Knex } from 'knex';

type Privilege = 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE';

export interface Rights {
  /** Privileges on the whole table. */
  table?: readonly Privilege[];
  /** Privileges on these columns only. */
  columns?: Partial<Record<'SELECT' | 'UPDATE', readonly string[]>>;
  /** Which part of the scrape worker needs them. */
  why: string;
}

const READ_WRITE: readonly Privilege[] = ['SELECT', 'INSERT', 'UPDATE', 'DELETE'];
const UPSERT: readonly Privilege[] = ['SELECT', 'INSERT', 'UPDATE'];

/** What the scrape worker (WORKER_ROLE=scrape: scrapes, monitors, tracking, relays) may touch. */
export const SCRAPER_RIGHTS: Readonly<Record<string, Rights>> = {
  // Watchlist monitoring (activities/poll-shard.ts, src/monitors/).
  target_snapshots: { table: ['SELECT', 'INSERT', 'DELETE'], why: 'the pollers keep each target’s newest snapshots' },
  monitor_members: { table: READ_WRITE, why: 'the membership relay writes the pollers’ members; polls record their baselines' },
  monitor_cooldowns: { table: READ_WRITE, why: 'polls hold and release per-section cooldowns' },
  monitor_target_status: { table: READ_WRITE, why: 'polls record blocked and failing targets' },
  monitor_platform_incidents: { table: READ_WRITE, why: 'the incident watch opens and closes platform-wide incidents (src/monitors/platform-incidents.ts)' },
  // No DELETE: the gateway's housekeeping prunes it (src/retention/monitor-targets.ts).
  monitor_target_checks: { table: UPSERT, why: 'the pollers record when each target was last checked (src/monitors/check-log.ts)' },
  // Appended only through monitor_append_notifications() (SCRAPER_FUNCTIONS): never written directly.
  notifications: { table: ['SELECT'], why: 'the monitor’s status query reads an item’s newest notification (activities/monitors.ts)' },
  watchlist_items: { table: ['SELECT'], why: 'the membership relay reads the items it turns into members' },
  watchlist_changes: { table: ['SELECT'], why: 'the relays follow the watchlist’s change feed' },
  relay_cursors: { table: UPSERT, why: 'the relays keep their place in the change feed' },
  // Which accounts are served (src/accounts/service-state.ts; account_served() reads as its caller).
  account_service: { table: UPSERT, why: 'the service sweep and the membership relay record and share-lock served states' },
  account_service_signals: { table: READ_WRITE, why: 'the service sweep queues what Temporal is told of each change; the signal relay delivers and deletes them' },
  accounts: { columns: { SELECT: ['id', 'customer_id'] }, why: 'account_served(): whether the account has a billing account' },
  subscriptions: {
    columns: { SELECT: ['account_id', 'status', 'cancel_at_period_end', 'current_period_end'] },
    why: 'account_served(): whether the subscription is served',
  },
  // The browser reports the gateways read (src/scrapers/browser-reports.ts).
  scrape_worker_browsers: { table: READ_WRITE, why: 'each worker reports its browser and prunes stale reports' },
  // Event tracking (activities/tracking.ts, src/market-data/tracking-*): the catalog and statistics it writes.
  tracked_events: { table: UPSERT, why: 'tracking ticks record their progress' },
  tracked_event_accounts: { table: ['SELECT', 'UPDATE'], why: 'each tick checks whether an account tracking the event is served; an ended tracking ends its accounts’ links' },
  events: { table: READ_WRITE, why: 'tracking adds and merges catalog events' },
  artists: { table: UPSERT, why: 'tracking adds artists' },
  venues: { table: UPSERT, why: 'tracking adds venues' },
  categories: { table: UPSERT, why: 'tracking adds categories' },
  event_search: { table: UPSERT, why: 'tracking refreshes the search rows of the events it scrapes' },
  search_dictionary: { table: ['SELECT', 'INSERT'], why: 'event_search’s trigger adds new words' },
  event_search_count: { table: ['SELECT', 'UPDATE'], why: 'event_search’s trigger keeps the row count' },
  search_postings: { table: READ_WRITE, why: 'event_search’s triggers keep each event’s postings (a refresh deletes the words an event lost)' },
  ma_sales: { table: UPSERT, why: 'marketplace A sales' },
  ma_stats_snapshots: { table: UPSERT, why: 'marketplace A statistics' },
  ma_daily_stats: { table: UPSERT, why: 'marketplace A daily statistics' },
  ma_price_histograms: { table: UPSERT, why: 'marketplace A price histograms' },
  mb_scrape_runs: { table: UPSERT, why: 'marketplace B scrape runs' },
  mb_section_stats: { table: UPSERT, why: 'marketplace B section statistics' },
  mb_offer_stats: { table: UPSERT, why: 'marketplace B offer statistics' },
  mb_statistics_history: { table: UPSERT, why: 'marketplace B statistics history' },
};

/** Tables the scrape worker gets no right on, and why. */
export const NOT_FOR_THE_SCRAPER: Readonly<Record<string, string>> = {
  api_keys: 'key hashes: the gateway’s',
  credit_ledger: 'metering: the gateway’s',
  usage_counters: 'metering: the gateway’s',
  rate_limit_windows: 'rate limiting: the gateway’s',
  plans: 'billing: the gateway’s and the delivery worker’s',
  meter_batches: 'Stripe meter sync: the delivery worker’s',
  stripe_events: 'Stripe webhooks: the gateway’s',
  stripe_subscriptions: 'the Stripe mirror: the gateway’s and the delivery worker’s',
  webhook_attempts: 'delivery attempts: the delivery worker’s',
  webhooks: 'endpoints and their secrets: the gateway’s and the delivery worker’s (monitor_append_notifications() finds a notification’s webhook as its owner)',
  webhook_deliveries:
    'signed messages: written only by monitor_append_notifications() and webhook_deliveries_resume() (SCRAPER_FUNCTIONS), sent by the delivery worker; issue 38: a compromised scraper must not choose a body or a recipient',
  stream_connections: 'the stream nodes’',
  stream_nodes: 'the stream nodes’',
  artist_social_metrics: 'artist profiles: read by the gateway, written by the seed',
  artist_social_snapshots: 'artist profiles: read by the gateway, written by the seed',
  knex_migrations: 'the migrations’ own (run as the owning role)',
  knex_migrations_lock: 'the migrations’ own (run as the owning role)',
};

/**
 * The database functions the scrape worker may call: each runs as the tables' owner and writes
 * only what it builds itself (db/migrations/036). Every other function of the schema is revoked
 * from the role (and the owner's SECURITY DEFINER ones from PUBLIC, by their migration).
 */
export const SCRAPER_FUNCTIONS: Readonly<Record<string, string>> = {
  'monitor_append_notifications(jsonb)': 'polls, retirements and incidents append notifications; the function picks the recipient and writes the deliveries',
  'webhook_deliveries_resume(bigint[], bigint)': 'the service sweep hands a served account’s parked deliveries back to the dispatcher',
};

/** Sequences the scrape worker calls nextval() on by name (column sequences come with INSERT below). */
const NAMED_SEQUENCES = ['events_local_id_seq'];

/** Serialises concurrent appliers: concurrent GRANTs on one object can fail ("tuple concurrently updated"). */
const GRANTS_LOCK = 7_317_026;

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * Gives `role` exactly SCRAPER_RIGHTS on the schema `public` (revoking anything else it held
 * there), in one transaction. Run by the tables' owner (or a superuser). Tables listed here that
 * do not exist are skipped; tables listed nowhere get nothing.
 */
export async function applyScraperGrants(db: Knex, role: string): Promise<void> {
  const exists = await db.raw('SELECT 1 FROM pg_roles WHERE rolname = ?', [role]);
  if (exists.rows.length === 0) {
    throw new Error(`SCRAPER_DB_ROLE=${role}: no such role; create it first with npm run db:roles (docs/operations.md#database-roles)`);
  }
  const r = quote(role);
  await db.transaction(async (trx) => {
    await trx.raw('SELECT pg_advisory_xact_lock(?)', [GRANTS_LOCK]);
    const present = new Set(
      ((await trx.raw(`SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')`)) as { rows: { relname: string }[] }).rows.map(
        (x) => x.relname,
      ),
    );
    const presentFunctions = new Set(
      ((await trx.raw(`SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'`)) as { rows: { proname: string }[] }).rows.map((x) => x.proname),
    );
    await trx.raw(`REVOKE ALL ON ALL TABLES IN SCHEMA public FROM ${r}`);
    await trx.raw(`REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM ${r}`);
    await trx.raw(`REVOKE ALL ON ALL FUNCTIONS IN SCHEMA public FROM ${r}`);
    await trx.raw(`GRANT USAGE ON SCHEMA public TO ${r}`);
    const inserting: string[] = [];
    for (const [table, rights] of Object.entries(SCRAPER_RIGHTS)) {
      if (!present.has(table)) continue;
      const t = `public.${quote(table)}`;
      if (rights.table?.length) await trx.raw(`GRANT ${rights.table.join(', ')} ON ${t} TO ${r}`);
      for (const [privilege, columns] of Object.entries(rights.columns ?? {})) {
        await trx.raw(`GRANT ${privilege} (${columns.map(quote).join(', ')}) ON ${t} TO ${r}`);
      }
      if (rights.table?.includes('INSERT')) inserting.push(t);
    }
    // The sequences behind the serial columns of the tables it inserts into, and the named ones.
    const sequences = (
      (await trx.raw(
        `SELECT s.oid::regclass::text AS name FROM pg_class s
           JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = s.oid AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')
          WHERE s.relkind = 'S' AND d.refobjid = ANY(?::regclass[])
         UNION
         SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = 'public' AND c.relkind = 'S' AND c.relname = ANY(?::text[])`,
        [inserting, NAMED_SEQUENCES],
      )) as { rows: { name: string }[] }
    ).rows.map((x) => x.name);
    for (const s of sequences) await trx.raw(`GRANT USAGE ON SEQUENCE ${s} TO ${r}`);
    const functions = Object.keys(SCRAPER_FUNCTIONS).filter((f) => presentFunctions.has(f.slice(0, f.indexOf('('))));
    for (const f of functions) await trx.raw(`GRANT EXECUTE ON FUNCTION public.${f} TO ${r}`);
  });
}
