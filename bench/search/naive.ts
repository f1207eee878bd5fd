// The naive search bench:search compares against: what one would write first, with no search
// structures. A join of the catalog tables (and each event's newest snapshot for the counters),
// every query word matched with ILIKE '%word%' against the names and city, the same
// filterExpression compiled onto the joined columns, the same order, LIMIT/OFFSET and a
// count(*). No typo tolerance and no relevance: a text query is ordered by popularity.
import type { Pool } from '../../db/pool.ts';
import { bindColumns, compileFilter, FILTERABLE_ATTRIBUTES, type FilterableAttributeName } from '../../src/apis/market-data/filter-expression.ts';
import type { SearchParams } from '../../src/market-data/search-query.ts';

const JOINED = `(
  SELECT e.id AS event_id, e.name AS event_name, floor(extract(epoch FROM e.event_date))::bigint AS event_date,
         c.name AS category_name, a.id AS artist_id, a.name AS artist_name, v.id AS venue_id, v.name AS venue_name,
         v.city AS venue_city, v.country AS venue_country, v.country_code AS venue_country_code,
         coalesce(m.tickets_sold, 0) AS tickets_sold, coalesce(m.tickets_sold_24h, 0) AS tickets_sold_24h,
         coalesce(m.available_tickets, 0) AS available_tickets, coalesce(e.capacity, v.capacity) AS capacity,
         m.average_ticket_price_sold
  FROM events e
  LEFT JOIN categories c ON c.id = e.category_id
  LEFT JOIN artists a ON a.id = e.artist_id
  LEFT JOIN venues v ON v.id = e.venue_id
  LEFT JOIN LATERAL (SELECT * FROM ma_stats_snapshots s WHERE s.event_id = e.id ORDER BY captured_at DESC, id DESC LIMIT 1) m ON TRUE
) h`;

const COLUMNS = bindColumns(
  Object.fromEntries(Object.keys(FILTERABLE_ATTRIBUTES).map((n) => [n, `h.${n}`])) as Record<FilterableAttributeName, string>,
);

const ORDER: Record<string, string> = {
  recommended: 'h.tickets_sold_24h DESC, h.tickets_sold DESC, h.event_id',
  event_name: 'lower(h.event_name), h.event_id',
  'event_name.desc': 'lower(h.event_name) DESC, h.event_id DESC',
};

function orderBy(sortBy: string): string {
  if (ORDER[sortBy]) return ORDER[sortBy];
  const [attribute, dir] = sortBy.split('.');
  return dir === 'desc' ? `h.${attribute} DESC NULLS LAST, h.event_id DESC` : `h.${attribute} ASC NULLS LAST, h.event_id`;
}

export async function naiveSearch(pool: Pool, p: SearchParams): Promise<number> {
  const filter = compileFilter(p.filterExpression, COLUMNS, 1);
  const values: unknown[] = [...filter.params];
  const where = [filter.sql];
  for (const word of p.query.split(/\s+/).filter(Boolean)) {
    values.push(`%${word.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
    where.push(`concat_ws(' ', h.event_name, h.artist_name, h.venue_name, h.venue_city) ILIKE $${values.length}`);
  }
  values.push(p.hitsPerPage, (p.page - 1) * p.hitsPerPage);
  const sql = `SELECT (SELECT count(*) FROM ${JOINED} WHERE ${where.join(' AND ')})::int AS nb_hits,
    (SELECT json_agg(h) FROM (SELECT * FROM ${JOINED} WHERE ${where.join(' AND ')} ORDER BY ${orderBy(p.sortBy)}
     LIMIT $${values.length - 1} OFFSET $${values.length}) h) AS hits`;
  const { rows } = await pool.query<{ nb_hits: number }>(sql, values);
  return rows[0]!.nb_hits;
}
