// Issue 40: ranked search at a million events. Ranking by relevance read every hit's row from
// event_search: one heap visit per hit (a city: ~20,000 scattered rows, 126-190 ms). The postings
// hold, per word of an event's search_vector, what the ranking needs of that event:
// - in_name: the word is in the event or artist name;
// - prefix_in_name: some word of those names starts with this word. For a typed prefix p, an
//   event's "in name" is then the largest prefix_in_name among its postings of words starting
//   with p (a name word starting with such a word starts with p, and has a posting of its own),
//   and its "whole word" is whether one of them is p: so the order of one event's best posting,
//   (prefix_in_name, word = p, popularity), is the order of the event (search-ranking.ts);
// - the event's popularity (tickets_sold_24h, tickets_sold).
// Three B-trees: the primary key (word, event_id) for the triggers; search_postings_rank, each
// word's postings in ranking order (a rare word's ranking is read off its top); and
// search_postings_bucket, the postings of words longer than two characters by their first two
// (a short prefix's many words read as a few ranges in ranking order).
//
// Kept by statement triggers on event_search, as search_dictionary is, so no writer can leave
// them behind: an event's postings change with its words (delete the words it lost, add the new
// ones) and with its popularity (rewritten only where a value changed: the tracker's refresh
// upserts every column of every row it touches, most often with the same words).
import type { Knex } from 'knex';

const POSTINGS_OF = (rows: string) => `
  SELECT w AS word, r.event_id, w = ANY (n.words) AS in_name,
         EXISTS (SELECT 1 FROM unnest(n.words) AS nw WHERE starts_with(nw, w)) AS prefix_in_name,
         r.tickets_sold_24h, r.tickets_sold
  FROM ${rows} r CROSS JOIN LATERAL (SELECT tsvector_to_array(r.name_vector) AS words) n, unnest(tsvector_to_array(r.search_vector)) AS w`;

export async function up(knex: Knex): Promise<void> {
  // The backfill and its indexes take a minute at a million events, far past a request's
  // statement timeout, which the service's connections (and so its migrations) carry. For this
  // migration's transaction only.
  await knex.raw('SET LOCAL statement_timeout = 0');
  await knex.raw(`CREATE TABLE search_postings (
    word text COLLATE "C" NOT NULL,
    event_id bigint NOT NULL,
    in_name boolean NOT NULL,
    prefix_in_name boolean NOT NULL,
    tickets_sold_24h integer NOT NULL,
    tickets_sold integer NOT NULL,
    PRIMARY KEY (word, event_id))`);
  await knex.raw(`CREATE INDEX search_postings_rank ON search_postings
    (word, prefix_in_name DESC, tickets_sold_24h DESC, tickets_sold DESC, event_id) INCLUDE (in_name)`);
  await knex.raw(`CREATE INDEX search_postings_bucket ON search_postings
    ((left(word, 2)), prefix_in_name DESC, tickets_sold_24h DESC, tickets_sold DESC, event_id) INCLUDE (word)
    WHERE length(word) > 2`);
  // Words in sorted order, as the dictionary's: two writers touching overlapping keys take their
  // locks in one order. (Two writers of one event are already serialised by its event_search row.)
  await knex.raw(`
    CREATE FUNCTION search_postings_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO search_postings (word, event_id, in_name, prefix_in_name, tickets_sold_24h, tickets_sold)
      ${POSTINGS_OF('new_rows')}
      ORDER BY 1, 2
      ON CONFLICT (word, event_id) DO UPDATE SET in_name = EXCLUDED.in_name, prefix_in_name = EXCLUDED.prefix_in_name,
        tickets_sold_24h = EXCLUDED.tickets_sold_24h, tickets_sold = EXCLUDED.tickets_sold;
      RETURN NULL;
    END $$`);
  await knex.raw(`
    CREATE FUNCTION search_postings_update() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM search_postings p USING (
        SELECT w, o.event_id FROM old_rows o, unnest(tsvector_to_array(o.search_vector)) AS w
        EXCEPT
        SELECT w, n.event_id FROM new_rows n, unnest(tsvector_to_array(n.search_vector)) AS w) gone
      WHERE p.word = gone.w AND p.event_id = gone.event_id;
      INSERT INTO search_postings AS p (word, event_id, in_name, prefix_in_name, tickets_sold_24h, tickets_sold)
      ${POSTINGS_OF('new_rows')}
      ORDER BY 1, 2
      ON CONFLICT (word, event_id) DO UPDATE SET in_name = EXCLUDED.in_name, prefix_in_name = EXCLUDED.prefix_in_name,
        tickets_sold_24h = EXCLUDED.tickets_sold_24h, tickets_sold = EXCLUDED.tickets_sold
      WHERE (p.in_name, p.prefix_in_name, p.tickets_sold_24h, p.tickets_sold)
        IS DISTINCT FROM (EXCLUDED.in_name, EXCLUDED.prefix_in_name, EXCLUDED.tickets_sold_24h, EXCLUDED.tickets_sold);
      RETURN NULL;
    END $$`);
  await knex.raw(`
    CREATE FUNCTION search_postings_delete() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'TRUNCATE' THEN
        TRUNCATE search_postings;
        RETURN NULL;
      END IF;
      DELETE FROM search_postings p USING (
        SELECT w, o.event_id FROM old_rows o, unnest(tsvector_to_array(o.search_vector)) AS w) gone
      WHERE p.word = gone.w AND p.event_id = gone.event_id;
      RETURN NULL;
    END $$`);
  await knex.raw(`CREATE TRIGGER event_search_postings_insert AFTER INSERT ON event_search
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION search_postings_insert()`);
  await knex.raw(`CREATE TRIGGER event_search_postings_update AFTER UPDATE ON event_search
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION search_postings_update()`);
  await knex.raw(`CREATE TRIGGER event_search_postings_delete AFTER DELETE ON event_search
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION search_postings_delete()`);
  await knex.raw(`CREATE TRIGGER event_search_postings_truncate AFTER TRUNCATE ON event_search
    FOR EACH STATEMENT EXECUTE FUNCTION search_postings_delete()`);
  // The catalog as it stands (a deployment's existing events).
  await knex.raw(`INSERT INTO search_postings (word, event_id, in_name, prefix_in_name, tickets_sold_24h, tickets_sold)
    ${POSTINGS_OF('event_search')} ORDER BY 1, 2`);
}
