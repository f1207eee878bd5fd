// Issue 40: filtered searches at a million events. A filter's matches were counted (up to the
// cap) and paged through event_search's heap: one page visit per row examined, ~1,000 for a
// count that reaches the cap (filters only: 27-35 ms at p95), and a sort order walked row by
// row until the page's rows passed the filter (a country sorted by price: 100 ms to 1.4 s).
//
// Every B-tree on a covered attribute (below: the attributes filters use most, all but names
// and ids) now carries all of them, so whichever index the planner reads a filter through, the
// filter's count and its page's event ids are read index-only (src/market-data/search-query.ts
// reads a page's ids first, then only those rows). That is each sort order's index but the
// name's, and the country and category equality indexes. A filter on any other attribute (a
// name, a city, an id) reads the heap as before; those are selective, with indexes of their own.
//
// Price is in the event's own currency, so it follows the country: Japan's events sit at one
// end of the price order, Britain's in the middle. Walking the price order for one country's
// first events passed half the catalog (Mexico, ascending: 1.4 s), while the planner, which
// takes the two as independent, expected to pass a few thousand. So (country, price) has an
// index of its own, in both directions.
import type { Knex } from 'knex';

/** What the covering indexes carry: the attributes a filter reads most (all but names and ids). */
export const COVERED_FILTER_COLUMNS = [
  'venue_country_code',
  'category_name',
  'event_date',
  'average_ticket_price_sold',
  'tickets_sold',
  'tickets_sold_24h',
  'available_tickets',
  'capacity',
] as const;

const covered = COVERED_FILTER_COLUMNS.join(', ');

/** Each index rebuilt with the covered columns, under its migration 005 name and keys: every B-tree of event_search on a covered attribute. */
const COVERING: readonly [name: string, keys: string][] = [
  ['event_search_recommended', 'tickets_sold_24h DESC, tickets_sold DESC, event_id'],
  ['event_search_event_date', 'event_date, event_id'],
  ['event_search_event_date_desc', 'event_date DESC NULLS LAST, event_id DESC'],
  ['event_search_price', 'average_ticket_price_sold, event_id'],
  ['event_search_price_desc', 'average_ticket_price_sold DESC NULLS LAST, event_id DESC'],
  ['event_search_tickets_sold', 'tickets_sold, event_id'],
  ['event_search_tickets_sold_24h', 'tickets_sold_24h, event_id'],
  ['event_search_available_tickets', 'available_tickets, event_id'],
  ['event_search_capacity', 'capacity, event_id'],
  ['event_search_capacity_desc', 'capacity DESC NULLS LAST, event_id DESC'],
  // With the event id, which a page's ids are (a key elsewhere).
  ['event_search_country_code', 'lower(venue_country_code), event_id'],
  ['event_search_category', 'lower(category_name), event_id'],
];

export async function up(knex: Knex): Promise<void> {
  // Building these takes tens of seconds at a million events, past a request's statement
  // timeout, which the service's connections (and so its migrations) carry.
  await knex.raw('SET LOCAL statement_timeout = 0');
  for (const [name, keys] of COVERING) {
    await knex.raw(`DROP INDEX ${name}`);
    await knex.raw(`CREATE INDEX ${name} ON event_search (${keys}) INCLUDE (${covered})`);
  }
  // The country's code itself is included so a page of one country in price order is read
  // index-only (an index on an expression serves an index-only scan only with the column too).
  await knex.raw(`CREATE INDEX event_search_country_price ON event_search
    (lower(venue_country_code), average_ticket_price_sold, event_id) INCLUDE (venue_country_code)`);
  await knex.raw(`CREATE INDEX event_search_country_price_desc ON event_search
    (lower(venue_country_code), average_ticket_price_sold DESC NULLS LAST, event_id DESC) INCLUDE (venue_country_code)`);
}
