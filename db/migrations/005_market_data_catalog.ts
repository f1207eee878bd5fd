// Market Data catalog (spec 2.2 `event`, 2.4): categories, venues, artists with their social
// metrics, events, and `event_search`, the one denormalised row per event that search reads.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // Trigram indexes give typo-tolerant and prefix matching over names (search).
  await knex.raw('CREATE EXTENSION IF NOT EXISTS pg_trgm');

  await knex.schema.createTable('categories', (t) => {
    t.increments('id').primary();
    t.text('name').notNullable().unique();
  });

  await knex.schema.createTable('venues', (t) => {
    t.bigIncrements('id').primary();
    t.text('name').notNullable();
    t.text('city').nullable();
    t.text('country').nullable();
    t.text('country_code').nullable().comment('ISO 3166 alpha-2, upper case');
    t.text('svg_map_url').nullable();
    t.integer('capacity').nullable();
  });
  await knex.raw(`ALTER TABLE venues ADD CONSTRAINT venues_country_code_valid CHECK (country_code ~ '^[A-Z]{2}$')`);

  // `url` is the artist's page on marketplace A: the exact value event.artist.url shows and
  // GET /svc/data/artist?url= looks up.
  await knex.schema.createTable('artists', (t) => {
    t.bigIncrements('id').primary();
    t.text('name').notNullable();
    t.text('url').notNullable().unique();
    t.text('image_url').nullable();
    t.text('genre').nullable();
    t.text('country_code').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  // Current audience per social network, and its history (one row per observation).
  await knex.schema.createTable('artist_social_metrics', (t) => {
    t.bigInteger('artist_id').notNullable().references('artists.id').onDelete('CASCADE');
    t.text('network').notNullable().comment('spotify, instagram, youtube, tiktok, x, facebook');
    t.text('handle').nullable();
    t.text('profile_url').nullable();
    t.bigInteger('followers').nullable();
    t.bigInteger('monthly_listeners').nullable().comment('streaming networks only');
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.primary(['artist_id', 'network']);
  });
  await knex.schema.createTable('artist_social_snapshots', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('artist_id').notNullable().references('artists.id').onDelete('CASCADE');
    t.text('network').notNullable();
    t.bigInteger('followers').nullable();
    t.bigInteger('monthly_listeners').nullable();
    t.timestamp('captured_at', { useTz: true }).notNullable();
  });
  await knex.raw('CREATE INDEX artist_social_snapshots_artist ON artist_social_snapshots (artist_id, captured_at DESC)');

  // The catalog. `id` is the event's catalog id: for a marketplace A event it is the numeric part
  // of its id (`E-<id>`); an event known only from marketplace B gets one from
  // events_local_id_seq, far above marketplace A's range, so the two never collide.
  await knex.schema.createTable('events', (t) => {
    t.bigInteger('id').primary();
    t.text('name').notNullable();
    t.timestamp('event_date', { useTz: true }).nullable();
    t.text('image_url').nullable();
    t.integer('category_id').nullable().references('categories.id');
    t.bigInteger('venue_id').nullable().references('venues.id');
    t.bigInteger('artist_id').nullable().references('artists.id');
    t.text('marketplace_a_url').nullable();
    t.text('marketplace_b_event_id').nullable().unique();
    t.text('marketplace_b_event_url').nullable();
    t.text('marketplace_c_event_id').nullable();
    t.text('marketplace_c_event_url').nullable();
    t.integer('capacity').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('CREATE SEQUENCE events_local_id_seq START WITH 1000000000000');
  await knex.raw('CREATE INDEX events_artist ON events (artist_id)');
  await knex.raw('CREATE INDEX events_venue ON events (venue_id)');

  // What search reads: the search hit (spec 2.4) flattened into one row per event, kept in step
  // with the catalog and the latest statistics by src/market-data/search-index.ts (the only
  // writer). `event_date` is Unix seconds, as in the hit. `search_text` is the lower-cased event,
  // artist, venue and city names that the query matches against.
  await knex.schema.createTable('event_search', (t) => {
    t.bigInteger('event_id').primary().references('events.id').onDelete('CASCADE');
    t.text('event_name').notNullable();
    t.bigInteger('event_date').nullable();
    t.text('category_name').nullable();
    t.bigInteger('artist_id').nullable();
    t.text('artist_name').nullable();
    t.bigInteger('venue_id').nullable();
    t.text('venue_name').nullable();
    t.text('venue_city').nullable();
    t.text('venue_country').nullable();
    t.text('venue_country_code').nullable();
    t.integer('tickets_sold').notNullable().defaultTo(0);
    t.integer('tickets_sold_24h').notNullable().defaultTo(0);
    t.integer('available_tickets').notNullable().defaultTo(0);
    t.integer('capacity').nullable();
    t.decimal('average_ticket_price_sold', 14, 2).nullable();
    t.text('search_text').notNullable();
  });
  await knex.raw('CREATE INDEX event_search_text_trgm ON event_search USING gin (search_text gin_trgm_ops)');
}
