// Keeps `event_search` (one flattened search hit per event, spec 2.4) in step with the catalog
// and the newest statistics. The only writer of that table: the seed calls it once for
// everything, the tracker after each snapshot, so search never joins at query time.
import type { Db } from '../../db/connection.ts';

// The hit's counters come from the newest marketplace A snapshot, or for an event known only
// from marketplace B from its newest statistics row; an event with neither counts zero.
const REFRESH_SQL = `
INSERT INTO event_search AS s (
  event_id, event_name, event_date, category_name, artist_id, artist_name, venue_id, venue_name,
  venue_city, venue_country, venue_country_code, tickets_sold, tickets_sold_24h, available_tickets,
  capacity, average_ticket_price_sold, search_text)
SELECT e.id, e.name, floor(extract(epoch FROM e.event_date))::bigint, c.name, a.id, a.name, v.id, v.name,
       v.city, v.country, v.country_code,
       COALESCE(ma.tickets_sold, mb.tickets_sold, 0), COALESCE(ma.tickets_sold_24h, mb.tickets_sold_24h, 0),
       COALESCE(ma.available_tickets, mb.available_tickets, 0),
       COALESCE(e.capacity, v.capacity), COALESCE(ma.average_ticket_price_sold, mb.average_sales_price),
       lower(concat_ws(' ', e.name, a.name, v.name, v.city))
FROM events e
LEFT JOIN categories c ON c.id = e.category_id
LEFT JOIN artists a ON a.id = e.artist_id
LEFT JOIN venues v ON v.id = e.venue_id
LEFT JOIN LATERAL (
  SELECT tickets_sold, tickets_sold_24h, available_tickets, average_ticket_price_sold
  FROM ma_stats_snapshots WHERE event_id = e.id ORDER BY captured_at DESC, id DESC LIMIT 1) ma ON TRUE
LEFT JOIN LATERAL (
  SELECT tickets_sold, tickets_sold_24h, available_tickets, average_sales_price
  FROM mb_statistics_history WHERE event_id = e.id ORDER BY created_at DESC, id DESC LIMIT 1) mb ON TRUE
WHERE %WHERE%
ON CONFLICT (event_id) DO UPDATE SET
  event_name = EXCLUDED.event_name, event_date = EXCLUDED.event_date, category_name = EXCLUDED.category_name,
  artist_id = EXCLUDED.artist_id, artist_name = EXCLUDED.artist_name, venue_id = EXCLUDED.venue_id,
  venue_name = EXCLUDED.venue_name, venue_city = EXCLUDED.venue_city, venue_country = EXCLUDED.venue_country,
  venue_country_code = EXCLUDED.venue_country_code, tickets_sold = EXCLUDED.tickets_sold,
  tickets_sold_24h = EXCLUDED.tickets_sold_24h, available_tickets = EXCLUDED.available_tickets,
  capacity = EXCLUDED.capacity, average_ticket_price_sold = EXCLUDED.average_ticket_price_sold,
  search_text = EXCLUDED.search_text`;

/** Rewrites the search rows of these events (an id not in the catalog is skipped). */
export async function refreshSearchRows(db: Db, eventIds: readonly number[]): Promise<void> {
  if (eventIds.length === 0) return;
  await db.raw(REFRESH_SQL.replace('%WHERE%', 'e.id = ANY(?::bigint[])'), [eventIds as number[]]);
}

/** Rewrites the search rows of events with ids in [fromId, toId] (the seed, in batches). */
export async function refreshSearchRange(db: Db, fromId: number, toId: number): Promise<void> {
  await db.raw(REFRESH_SQL.replace('%WHERE%', 'e.id BETWEEN ? AND ?'), [fromId, toId]);
}
