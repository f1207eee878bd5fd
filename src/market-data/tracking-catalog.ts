// The tracker's writes to the catalog (migration 005): categories, venues and artists found or
// created, and the event row of a scraped marketplace A or B page. Runs inside the tick's
// transaction (tracking-store.ts).
//
// Which row an event is: a marketplace A event's catalog id is the number in its id (E-104729 is
// 104729). A marketplace B event is the catalog event that names it in marketplace_b_event_id
// (A's page links it), else an event of its own with an id from events_local_id_seq. When A
// later links a B event that already has an event of its own, that event is merged into A's
// (its B statistics move over) so one event carries both marketplaces.
import type { Knex } from 'knex';
import type { MarketplaceAEventPage, MarketplaceBEventPage } from '../scrapers/marketplaces/types.ts';
import { marketplaceAEventNumber } from './tracking-ref.ts';

type Trx = Knex.Transaction;

/**
 * Serialises every writer of one marketplace B event's catalog row (A's link, B's tracker).
 * Lock order, so trackers never deadlock: a B tick takes this before its tracking row and the
 * shared catalog rows; an A tick takes its own tracking row, then this, then the shared catalog
 * rows and (merging) the B tracking row.
 */
export async function lockMarketplaceBEvent(trx: Trx, id: string): Promise<void> {
  await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [`mb-event:${id}`]);
}

// Catalog rows many events share (a category, a venue, an artist) are read first and written
// only when new or changed: a write would lock the shared row until the tick commits, and every
// tracker of an event in "Concerts" would take turns on it.

export async function upsertCategory(trx: Trx, name: string | null): Promise<number | null> {
  if (name === null) return null;
  const found = await trx('categories').where({ name }).first('id');
  if (found) return Number(found.id);
  // DO UPDATE (a no-op) rather than DO NOTHING, so a row a concurrent tick just created is
  // returned too.
  const { rows } = await trx.raw('INSERT INTO categories (name) VALUES (?) ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name RETURNING id', [name]);
  return Number(rows[0].id);
}

interface VenueInput {
  name: string;
  city: string | null;
  country: string | null;
  country_code: string | null;
  svg_map_url?: string | null;
}

/** A venue is the same venue when its name, city and country code are. */
export async function upsertVenue(trx: Trx, venue: VenueInput | null): Promise<number | null> {
  if (venue === null) return null;
  const find = () =>
    trx('venues')
      .where({ name: venue.name })
      .andWhereRaw('city IS NOT DISTINCT FROM ?', [venue.city])
      .andWhereRaw('country_code IS NOT DISTINCT FROM ?', [venue.country_code])
      .orderBy('id')
      .first('id');
  let existing = await find();
  if (!existing) {
    // venues has no natural unique key (the seed shares rows by id); the lock keeps two trackers
    // from creating the same venue twice.
    await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [`venue:${venue.name}|${venue.city ?? ''}|${venue.country_code ?? ''}`]);
    existing = await find();
  }
  if (existing) {
    const country = venue.country;
    const map = venue.svg_map_url ?? null;
    await trx('venues')
      .where({ id: existing.id })
      .andWhere((q) => q.whereRaw('country IS DISTINCT FROM COALESCE(?, country)', [country]).orWhereRaw('svg_map_url IS DISTINCT FROM COALESCE(?, svg_map_url)', [map]))
      .update({
        country: trx.raw('COALESCE(?, country)', [country]),
        svg_map_url: trx.raw('COALESCE(?, svg_map_url)', [map]),
      });
    return Number(existing.id);
  }
  const [row] = await trx('venues')
    .insert({ name: venue.name, city: venue.city, country: venue.country, country_code: venue.country_code, svg_map_url: venue.svg_map_url ?? null })
    .returning('id');
  return Number(row.id);
}

export async function upsertArtist(trx: Trx, artist: MarketplaceAEventPage['artist']): Promise<number | null> {
  if (artist === null) return null;
  const found = await trx('artists').where({ url: artist.url }).first('id', 'name', 'image_url');
  if (found && found.name === artist.name && (artist.image_url === null || found.image_url === artist.image_url)) return Number(found.id);
  const { rows } = await trx.raw(
    `INSERT INTO artists (name, url, image_url) VALUES (?, ?, ?)
     ON CONFLICT (url) DO UPDATE SET name = EXCLUDED.name, image_url = COALESCE(EXCLUDED.image_url, artists.image_url)
     RETURNING id`,
    [artist.name, artist.url, artist.image_url],
  );
  return Number(rows[0].id);
}

/** Moves a B-only event's marketplace B statistics, tracking and capacity onto `into`, then drops it. */
async function mergeInto(trx: Trx, from: { id: number; capacity: number | null }, into: number): Promise<void> {
  await trx('mb_scrape_runs').where({ event_id: from.id }).update({ event_id: into });
  await trx('mb_statistics_history').where({ event_id: from.id }).update({ event_id: into });
  await trx('tracked_events').where({ event_id: from.id }).update({ event_id: into });
  await trx('events').where({ id: from.id }).delete();
  if (from.capacity !== null) await trx('events').where({ id: into }).whereNull('capacity').update({ capacity: from.capacity });
}

/** Writes the catalog row of a marketplace A event page; returns its catalog id. */
export async function upsertMarketplaceAEvent(trx: Trx, page: MarketplaceAEventPage): Promise<number> {
  const id = marketplaceAEventNumber(page.id);
  if (id === null) throw new Error(`not a marketplace A event id: ${page.id}`);
  const b = page.external.marketplace_b_event_id;
  // Before the category, venue and artist: a B tick takes this lock and then those rows, so
  // taking them the other way round here could deadlock the two.
  if (b !== null) await lockMarketplaceBEvent(trx, b);
  const row = {
    id,
    name: page.name,
    event_date: page.starts_at,
    image_url: page.image_url,
    category_id: await upsertCategory(trx, page.category),
    venue_id: await upsertVenue(trx, page.venue),
    artist_id: await upsertArtist(trx, page.artist),
    marketplace_a_url: page.url,
    marketplace_c_event_id: page.external.marketplace_c_event_id,
    marketplace_c_event_url: page.external.marketplace_c_event_url,
    updated_at: trx.fn.now(),
  };
  await trx('events').insert(row).onConflict('id').merge();

  // A page that stops linking B leaves the link on file: a missing link says less than a present one.
  if (b === null) return id;
  const holder = await trx('events').where({ marketplace_b_event_id: b }).whereNot({ id }).first('id', 'marketplace_a_url', 'capacity');
  if (holder && holder.marketplace_a_url !== null) return id; // another A event links that B event: it keeps the link
  if (holder) await mergeInto(trx, { id: Number(holder.id), capacity: holder.capacity }, id);
  await trx('events').where({ id }).update({ marketplace_b_event_id: b, marketplace_b_event_url: page.external.marketplace_b_event_url });
  return id;
}

/**
 * Writes the catalog row of a marketplace B event page; returns its catalog id. An event A
 * already describes keeps A's details: B only adds its link and the capacity its sections show.
 */
export async function upsertMarketplaceBEvent(trx: Trx, page: MarketplaceBEventPage): Promise<number> {
  await lockMarketplaceBEvent(trx, page.id);
  const capacity = page.sections.length ? page.sections.reduce((n, s) => n + s.capacity, 0) : null;
  const existing = await trx('events').where({ marketplace_b_event_id: page.id }).first('id', 'marketplace_a_url');
  if (existing && existing.marketplace_a_url !== null) {
    await trx('events').where({ id: existing.id }).update({ marketplace_b_event_url: page.url, capacity, updated_at: trx.fn.now() });
    return Number(existing.id);
  }
  const details = {
    name: page.name,
    event_date: page.starts_at,
    category_id: await upsertCategory(trx, page.category),
    venue_id: await upsertVenue(trx, page.venue),
    marketplace_b_event_id: page.id,
    marketplace_b_event_url: page.url,
    capacity,
    updated_at: trx.fn.now(),
  };
  if (existing) {
    await trx('events').where({ id: existing.id }).update(details);
    return Number(existing.id);
  }
  const [row] = await trx('events')
    .insert({ id: trx.raw("nextval('events_local_id_seq')"), ...details })
    .returning('id');
  return Number(row.id);
}
