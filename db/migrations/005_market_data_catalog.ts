// Market Data catalog (spec 2.2 `event`, 2.4): categories, venues, artists with their social
// metrics, events, and `event_search`, the one denormalised row per event that search reads.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
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
  await searchStructures(knex);
}

// What POST /svc/data/search reads besides event_search's own columns (src/market-data/
// search-query.ts and docs/market-data.md "Search" describe the matching and the orders).
//
// - search_words() / search_tokens(): the one tokenizer, used for the stored words and for the
//   query, so both sides split alike on any server locale (both are lower-cased by the same
//   lower()). Words are runs of anything but ASCII punctuation and spaces, Latin-1 and general
//   punctuation; stored tokens over 200 bytes (no name has them) are dropped so a tracked event
//   with a freak name can never fail its row's write.
// - search_vector: the event's words (event, artist, venue, city) as a tsvector, GIN-indexed:
//   a word matches exactly ('word') or as a prefix ('word':*, one index range scan however many
//   words share the prefix). name_vector holds the event and artist words, for ranking only.
// - search_dictionary: every word that occurs in some event, kept by statement triggers on
//   event_search (words are only added: one no longer used matches nothing); typo-tolerant
//   matching finds a query word's near spellings in it (src/market-data/search-vocabulary.ts),
//   then searches for those words.
// - B-tree indexes serve each sortBy order (with event_id as the tie-breaker, so deep pages
//   come straight from the index) and the selective filter attributes.
async function searchStructures(knex: Knex): Promise<void> {
  // search_words() cuts text into words (a query's, whatever their length); search_tokens()
  // keeps those a tsvector can hold.
  await knex.raw(`
    CREATE FUNCTION search_words(input text) RETURNS text[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
      SELECT array_remove(regexp_split_to_array(input,
        '[\\u0001-\\u002f\\u003a-\\u0040\\u005b-\\u0060\\u007b-\\u00bf\\u00d7\\u00f7\\u2000-\\u206f\\u3000-\\u303f\\ufeff]+'), '')
    $$`);
  await knex.raw(`
    CREATE FUNCTION search_tokens(input text) RETURNS text[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
      SELECT coalesce(array_agg(t), '{}') FROM unnest(search_words(input)) AS t WHERE octet_length(t) <= 200
    $$`);
  await knex.raw(`ALTER TABLE event_search
    ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (array_to_tsvector(search_tokens(search_text))) STORED,
    ADD COLUMN name_vector tsvector GENERATED ALWAYS AS (
      array_to_tsvector(search_tokens(lower(event_name || ' ' || coalesce(artist_name, ''))))) STORED`);
  await knex.raw('CREATE INDEX event_search_vector ON event_search USING gin (search_vector)');

  // `id` orders additions, so a search process can fetch only the words new since it looked.
  await knex.raw(`CREATE TABLE search_dictionary (
    word text COLLATE "C" PRIMARY KEY,
    id bigint GENERATED ALWAYS AS IDENTITY UNIQUE)`);
  // Words are inserted in sorted order, so two writers adding overlapping new words take their
  // locks in the same order and cannot deadlock. A known word costs one unique-index probe
  // (ON CONFLICT), whatever plan the function has cached: no join with the dictionary whose
  // plan could go stale as it grows.
  await knex.raw(`
    CREATE FUNCTION search_dictionary_add() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO search_dictionary (word)
      SELECT DISTINCT w FROM new_rows, unnest(tsvector_to_array(new_rows.search_vector)) AS w
      ORDER BY w
      ON CONFLICT DO NOTHING;
      RETURN NULL;
    END $$`);
  // One trigger per event: PostgreSQL allows transition tables only on single-event triggers.
  for (const event of ['INSERT', 'UPDATE']) {
    await knex.raw(`CREATE TRIGGER event_search_dictionary_${event.toLowerCase()} AFTER ${event} ON event_search
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION search_dictionary_add()`);
  }

  // The number of search rows, kept exact by statement triggers: a search without words and
  // filters reads it instead of counting the whole table (the default request: {}). Writers
  // take the one row's lock before the dictionary's (triggers fire in name order), so they
  // cannot deadlock on the two.
  await knex.raw(`CREATE TABLE event_search_count (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    n bigint NOT NULL)`);
  await knex.raw('INSERT INTO event_search_count (n) VALUES (0)');
  await knex.raw(`
    CREATE FUNCTION event_search_count_change() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      changed bigint;
    BEGIN
      IF TG_OP = 'TRUNCATE' THEN
        UPDATE event_search_count SET n = 0;
        RETURN NULL;
      END IF;
      SELECT count(*) INTO changed FROM changed_rows;
      -- An upsert that only updated rows changes nothing here, and takes no lock.
      IF changed > 0 THEN
        UPDATE event_search_count SET n = n + CASE TG_OP WHEN 'INSERT' THEN changed ELSE -changed END;
      END IF;
      RETURN NULL;
    END $$`);
  await knex.raw(`CREATE TRIGGER event_search_count_insert AFTER INSERT ON event_search
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION event_search_count_change()`);
  await knex.raw(`CREATE TRIGGER event_search_count_delete AFTER DELETE ON event_search
    REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION event_search_count_change()`);
  await knex.raw(`CREATE TRIGGER event_search_count_truncate AFTER TRUNCATE ON event_search
    FOR EACH STATEMENT EXECUTE FUNCTION event_search_count_change()`);

  const indexes = [
    // recommended without a query: most sold in the last 24 h, then most sold.
    'event_search_recommended ON event_search (tickets_sold_24h DESC, tickets_sold DESC, event_id)',
    'event_search_event_date ON event_search (event_date, event_id)',
    'event_search_event_date_desc ON event_search (event_date DESC NULLS LAST, event_id DESC)',
    'event_search_event_name ON event_search ((lower(event_name) COLLATE "C"), event_id)',
    'event_search_price ON event_search (average_ticket_price_sold, event_id)',
    'event_search_price_desc ON event_search (average_ticket_price_sold DESC NULLS LAST, event_id DESC)',
    'event_search_tickets_sold ON event_search (tickets_sold, event_id)',
    'event_search_tickets_sold_24h ON event_search (tickets_sold_24h, event_id)',
    'event_search_available_tickets ON event_search (available_tickets, event_id)',
    'event_search_capacity ON event_search (capacity, event_id)',
    'event_search_capacity_desc ON event_search (capacity DESC NULLS LAST, event_id DESC)',
    // Equality filters (the compiled filter compares lower(column) = lower(value)).
    'event_search_country_code ON event_search (lower(venue_country_code))',
    'event_search_country ON event_search (lower(venue_country))',
    'event_search_city ON event_search (lower(venue_city))',
    'event_search_category ON event_search (lower(category_name))',
    'event_search_artist_name ON event_search (lower(artist_name))',
    'event_search_artist ON event_search (artist_id)',
    'event_search_venue ON event_search (venue_id)',
  ];
  for (const index of indexes) await knex.raw(`CREATE INDEX ${index}`);
}
