// Issue 40: words and a filter at a million events. Counting a word's matches that pass a filter
// read each match's event_search row (a common word with a filter that lets few through: 10,500
// rows for 1,001, 22-90 ms). Each posting now also carries its event's filtered attributes (the
// ones migration 040's indexes carry), and search_postings_rank includes them: a word's postings
// that pass a filter on those attributes are read, ranked and counted index-only (the same
// word: 5-9 ms; src/market-data/search-ranking.ts, rankedMatches).
//
// The table is rebuilt rather than altered (a new column filled in place would rewrite every
// row with its three indexes, and leave the old versions behind); the triggers' functions are
// replaced to write the new columns, and to rewrite a posting when one of them changed.
import type { Knex } from 'knex';

/** The event attributes a posting carries besides its popularity (migration 040's covered ones). */
const CARRIED = ['venue_country_code', 'category_name', 'event_date', 'average_ticket_price_sold', 'available_tickets', 'capacity'] as const;
const carried = CARRIED.join(', ');
const ALL = ['in_name', 'prefix_in_name', 'tickets_sold_24h', 'tickets_sold', ...CARRIED];

const POSTINGS_OF = (rows: string) => `
  SELECT w AS word, r.event_id, w = ANY (n.words) AS in_name,
         EXISTS (SELECT 1 FROM unnest(n.words) AS nw WHERE starts_with(nw, w)) AS prefix_in_name,
         r.tickets_sold_24h, r.tickets_sold, ${CARRIED.map((c) => `r.${c}`).join(', ')}
  FROM ${rows} r CROSS JOIN LATERAL (SELECT tsvector_to_array(r.name_vector) AS words) n, unnest(tsvector_to_array(r.search_vector)) AS w`;

const COLUMNS = `(word, event_id, ${ALL.join(', ')})`;
const UPSERT = `ON CONFLICT (word, event_id) DO UPDATE SET ${ALL.map((c) => `${c} = EXCLUDED.${c}`).join(', ')}`;

export async function up(knex: Knex): Promise<void> {
  // Rebuilding the postings takes a minute at a million events, past a request's statement
  // timeout, which the service's connections (and so its migrations) carry.
  await knex.raw('SET LOCAL statement_timeout = 0');
  await knex.raw(`CREATE TABLE search_postings_next (
    word text COLLATE "C" NOT NULL,
    event_id bigint NOT NULL,
    in_name boolean NOT NULL,
    prefix_in_name boolean NOT NULL,
    tickets_sold_24h integer NOT NULL,
    tickets_sold integer NOT NULL,
    venue_country_code text,
    category_name text,
    event_date bigint,
    average_ticket_price_sold numeric(14, 2),
    available_tickets integer NOT NULL,
    capacity integer)`);
  await knex.raw(`INSERT INTO search_postings_next ${COLUMNS}
    SELECT p.word, p.event_id, p.in_name, p.prefix_in_name, p.tickets_sold_24h, p.tickets_sold, ${CARRIED.map((c) => `s.${c}`).join(', ')}
    FROM search_postings p JOIN event_search s ON s.event_id = p.event_id ORDER BY 1, 2`);
  await knex.raw('DROP TABLE search_postings');
  await knex.raw('ALTER TABLE search_postings_next RENAME TO search_postings');
  await knex.raw('ALTER TABLE search_postings ADD CONSTRAINT search_postings_pkey PRIMARY KEY (word, event_id)');
  await knex.raw(`CREATE INDEX search_postings_rank ON search_postings
    (word, prefix_in_name DESC, tickets_sold_24h DESC, tickets_sold DESC, event_id) INCLUDE (in_name, ${carried})`);
  await knex.raw(`CREATE INDEX search_postings_bucket ON search_postings
    ((left(word, 2)), prefix_in_name DESC, tickets_sold_24h DESC, tickets_sold DESC, event_id) INCLUDE (word)
    WHERE length(word) > 2`);
  await knex.raw(`
    CREATE OR REPLACE FUNCTION search_postings_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO search_postings ${COLUMNS}
      ${POSTINGS_OF('new_rows')}
      ORDER BY 1, 2
      ${UPSERT};
      RETURN NULL;
    END $$`);
  await knex.raw(`
    CREATE OR REPLACE FUNCTION search_postings_update() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM search_postings p USING (
        SELECT w, o.event_id FROM old_rows o, unnest(tsvector_to_array(o.search_vector)) AS w
        EXCEPT
        SELECT w, n.event_id FROM new_rows n, unnest(tsvector_to_array(n.search_vector)) AS w) gone
      WHERE p.word = gone.w AND p.event_id = gone.event_id;
      INSERT INTO search_postings AS p ${COLUMNS}
      ${POSTINGS_OF('new_rows')}
      ORDER BY 1, 2
      ${UPSERT}
      WHERE (${ALL.map((c) => `p.${c}`).join(', ')}) IS DISTINCT FROM (${ALL.map((c) => `EXCLUDED.${c}`).join(', ')});
      RETURN NULL;
    END $$`);
  await knex.raw('ANALYZE search_postings');
}
