// Issue 40: how many events have every one of several whole words, counted up to a bound, read
// index-only from search_postings. A search of several words that match more events than the
// count's cap (a city, "new york": 18,107 events) intersected the words' lists in the full-text
// index and read rows to learn that (the index's intersection alone: ~7 ms at a million
// events), then walked the last word's top for the page. Each word's postings lie in
// search_postings_pkey in event order, so a merge join of the words' ranges finds the common
// events reading index pages only, and stops at the bound: "new york" 0.6-1.6 ms. The planner,
// told the count stops early, prefers a nested loop of index probes, which reads every posting of
// the first word when the words seldom meet ("live london": 48 ms), so the join is planned as a
// merge join here. A merge join still reads both words' postings to the end when they seldom
// meet: the caller does not ask for a word on a large part of the catalog ("the").
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE FUNCTION search_events_with_words(words text[], at_most int) RETURNS int
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET enable_nestloop = off SET enable_hashjoin = off
    AS $$
    DECLARE
      statement text := 'SELECT count(*)::int FROM (SELECT 1 FROM search_postings p1';
      n int;
    BEGIN
      IF cardinality(words) IS NULL OR cardinality(words) = 0 THEN
        RETURN 0;
      END IF;
      FOR i IN 2 .. cardinality(words) LOOP
        statement := statement || format(' JOIN search_postings p%1$s ON p%1$s.word = $1[%1$s] AND p%1$s.event_id = p1.event_id', i);
      END LOOP;
      EXECUTE statement || ' WHERE p1.word = $1[1] LIMIT $2) c' INTO n USING words, at_most;
      RETURN n;
    END $$`);
}
