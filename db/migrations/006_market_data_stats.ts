// Market Data statistics: marketplace A snapshots, daily roll-ups, individual sales and price
// histograms (spec 2.2), and marketplace B scrape runs with their section, offer and history
// rows (spec 2.3). Money and percentages are `numeric`, rendered as decimal strings.
//
// Meaning of the 24 h fields (also in docs/market-data.md, "Figures"): for a flow (tickets_sold,
// listings_sold, sales prices) `X_24h` is what happened in the 24 h before `captured_at`; for a
// level (available_tickets, listings_available, average_ticket_price_available, get_in_price)
// `X_24h` is the level 24 h before. `X_24h_percentage` is the change over those 24 h in percent
// of the earlier value, rounded to 2 places; null when the earlier value is 0 or unknown
// (src/market-data/stats-formulas.ts computes them).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // Marketplace A aggregate snapshots: the newest row of an event is its `summary`.
  await knex.schema.createTable('ma_stats_snapshots', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('event_id').notNullable().references('events.id').onDelete('CASCADE');
    t.timestamp('captured_at', { useTz: true }).notNullable().comment('summary.stats_date');
    t.text('currency').notNullable();
    for (const c of ['tickets_sold', 'tickets_sold_24h', 'listings_sold', 'listings_sold_24h', 'listings_available', 'listings_available_24h', 'available_tickets', 'available_tickets_24h']) {
      t.integer(c).nullable();
    }
    t.boolean('is_general_admission_only').nullable();
    for (const c of [
      'average_ticket_price_sold',
      'average_ticket_price_sold_24h',
      'average_ticket_price_available',
      'average_ticket_price_available_24h',
      'highest_sale_price',
      'highest_sale_price_24h',
      'get_in_price',
      'get_in_price_24h',
      'total_volume',
    ]) {
      t.decimal(c, 14, 2).nullable();
    }
    for (const c of [
      'tickets_sold_24h_percentage',
      'listings_sold_24h_percentage',
      'listings_available_24h_percentage',
      'available_tickets_24h_percentage',
      'average_ticket_price_sold_24h_percentage',
      'average_ticket_price_available_24h_percentage',
      'highest_sale_price_24h_percentage',
      'get_in_price_24h_percentage',
    ]) {
      t.decimal(c, 14, 2).nullable();
    }
  });
  await knex.raw('CREATE INDEX ma_stats_snapshots_event ON ma_stats_snapshots (event_id, captured_at DESC, id DESC)');

  // One row per event and day (the day's last snapshot, plus the day's sales); the response's
  // rolling window reads the newest days of it.
  await knex.schema.createTable('ma_daily_stats', (t) => {
    t.bigInteger('event_id').notNullable().references('events.id').onDelete('CASCADE');
    t.date('stat_date').notNullable();
    t.integer('tickets_sold').nullable();
    t.integer('tickets_sold_24h').nullable();
    t.integer('available_tickets').nullable();
    t.integer('listings_available').nullable();
    t.decimal('average_ticket_price_sold', 14, 2).nullable();
    t.decimal('average_ticket_price_available', 14, 2).nullable();
    t.decimal('highest_sale_price', 14, 2).nullable();
    t.primary(['event_id', 'stat_date']);
  });

  // Individual sales on marketplace A. `sale_ref` is the marketplace's own id of the sale, so a
  // tracker that sees the same sale twice stores it once. `price` is per ticket.
  await knex.schema.createTable('ma_sales', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('event_id').notNullable().references('events.id').onDelete('CASCADE');
    t.text('sale_ref').notNullable();
    t.timestamp('sold_at', { useTz: true }).notNullable();
    t.text('section').nullable();
    t.text('row').nullable();
    t.integer('quantity').notNullable();
    t.decimal('price', 14, 2).notNullable();
    t.text('currency').notNullable();
    t.text('ticket_type').nullable().comment('standard, resale, platinum, general_admission');
    t.unique(['event_id', 'sale_ref']);
  });
  await knex.raw('ALTER TABLE ma_sales ADD CONSTRAINT ma_sales_quantity_positive CHECK (quantity > 0)');
  await knex.raw('CREATE INDEX ma_sales_event_recent ON ma_sales (event_id, sold_at DESC, id DESC)');

  // The price histogram of an event's sales, rolled up with its statistics. `data` is the
  // response's array of {start, end, tickets_sold}; min and max are '0' with no sales.
  await knex.schema.createTable('ma_price_histograms', (t) => {
    t.bigInteger('event_id').primary().references('events.id').onDelete('CASCADE');
    t.integer('bins').notNullable();
    t.decimal('min', 14, 2).notNullable();
    t.decimal('max', 14, 2).notNullable();
    t.text('currency').notNullable();
    t.jsonb('data').notNullable();
    t.timestamp('computed_at', { useTz: true }).notNullable();
  });

  // Marketplace B: one row per scrape of an event page.
  await knex.schema.createTable('mb_scrape_runs', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('event_id').notNullable().references('events.id').onDelete('CASCADE');
    t.text('region').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
  });
  await knex.raw('CREATE INDEX mb_scrape_runs_event ON mb_scrape_runs (event_id, created_at DESC, id DESC)');

  await knex.schema.createTable('mb_section_stats', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('run_id').notNullable().references('mb_scrape_runs.id').onDelete('CASCADE');
    t.text('section_name').notNullable();
    t.integer('capacity').nullable();
    t.integer('available_stock').nullable();
    t.integer('sold_amount').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
  });
  await knex.raw('CREATE INDEX mb_section_stats_run ON mb_section_stats (run_id)');

  await knex.schema.createTable('mb_offer_stats', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('run_id').notNullable().references('mb_scrape_runs.id').onDelete('CASCADE');
    t.text('offer_name').notNullable();
    t.integer('offer_stock').notNullable();
    t.decimal('average_price_fees', 14, 2).notNullable();
    t.decimal('average_price_no_fees', 14, 2).notNullable();
    t.integer('offer_type').notNullable().comment('1 standard, 2 resale, 3 platinum');
    t.text('currency').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
  });
  await knex.raw('CREATE INDEX mb_offer_stats_run ON mb_offer_stats (run_id)');

  // One aggregate row per scrape run: statisticsHistory, latest_stats and dashboard_v2 read it.
  await knex.schema.createTable('mb_statistics_history', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('event_id').notNullable().references('events.id').onDelete('CASCADE');
    t.bigInteger('run_id').nullable().references('mb_scrape_runs.id').onDelete('SET NULL');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.integer('tickets_sold').notNullable();
    t.integer('tickets_sold_24h').notNullable();
    t.integer('available_tickets').notNullable();
    t.integer('listings_available').notNullable();
    t.integer('capacity').nullable();
    for (const c of [
      'highest_price',
      'lowest_price',
      'average_ticket_price_available',
      'average_ticket_price_standard',
      'average_ticket_price_resell',
      'average_ticket_price_platinum',
      'average_sales_price',
      'get_in_price',
    ]) {
      t.decimal(c, 14, 2).nullable();
    }
    t.text('currency').notNullable();
  });
  await knex.raw('CREATE INDEX mb_statistics_history_event ON mb_statistics_history (event_id, created_at DESC, id DESC)');
}
