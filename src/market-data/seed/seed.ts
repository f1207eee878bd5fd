// Fills the Market Data catalog with a realistic, deterministic synthetic catalog: categories,
// venues and artists shared across events, events spread over countries and a year either side
// of now, marketplace A statistics and sales, marketplace B runs, artist audiences, and the
// search rows (search-index.ts). Used by `npm run seed` (cli.ts), the demo catalog of
// `npm start`, the search benchmark and the tests.
//
// Into a database that already has events the seed refuses, unless asked to append: then it
// adds new venues, artists and events with fresh ids (categories are shared by name).
import type { Knex } from 'knex';
import type { Db } from '../../../db/connection.ts';
import { refreshSearchRange } from '../search-index.ts';
import { catalogParts, generateEvent } from './catalog.ts';
import {
  ARTIST_COLUMNS,
  DAILY_COLUMNS,
  EVENT_COLUMNS,
  HISTOGRAM_COLUMNS,
  HISTORY_COLUMNS,
  OFFER_COLUMNS,
  RUN_COLUMNS,
  SALE_COLUMNS,
  SECTION_COLUMNS,
  SNAPSHOT_COLUMNS,
  SOCIAL_METRIC_COLUMNS,
  SOCIAL_SNAPSHOT_COLUMNS,
  VENUE_COLUMNS,
  type EventRow,
} from './columns.ts';
import type { MarketplaceBRun } from './marketplace-b.ts';
import { generateArtistSocial, type SocialMetricRow, type SocialSnapshotRow } from './social.ts';
import { generateEventStatistics, type DailyRow, type Detail, type EventStatistics, type HistogramRow, type SaleRow, type SnapshotRow } from './statistics.ts';
import { CATEGORIES } from './vocabulary.ts';
import { insertRows, reserveIds } from './writer.ts';

export interface SeedOptions {
  events: number;
  /** Same seed, same `now`, same starting database: same catalog. */
  seed?: number;
  detail?: Detail;
  /** The moment the data is "as of"; default: the start of the current UTC hour. */
  now?: Date;
  /** Add to a catalog that already has events instead of refusing. */
  append?: boolean;
  /** Events per transaction. */
  batchSize?: number;
  /**
   * VACUUM ANALYZE event_search and search_postings at the end (default true): the planner's statistics and the
   * visibility map that lets counts use index-only scans. VACUUM cannot run inside a
   * transaction, so a caller seeding inside one turns it off (ANALYZE still runs).
   */
  vacuum?: boolean;
  onProgress?: (p: SeedProgress) => void;
}

export interface SeedProgress {
  phase: 'venues and artists' | 'events' | 'analyze';
  done: number;
  total: number;
  rows: number;
  elapsedMs: number;
}

export interface SeedResult {
  events: number;
  firstEventId: number;
  lastEventId: number;
  venues: number;
  artists: number;
  rows: Record<string, number>;
  ms: number;
}

/** The database already has a catalog and appending was not asked for. */
export class SeedRefusedError extends Error {}

/**
 * Seeded event ids: from 10,000,001 (clear of the simulator's and hand-made marketplace A ids)
 * and below 1e11 (clear of the test fixtures' band and of ids for events known only from
 * marketplace B, which start at 1e12, migration 005). Appending continues after the highest.
 */
export const SEED_FIRST_EVENT_ID = 10_000_001;
export const SEED_ID_LIMIT = 100_000_000_000;
const DEFAULT_BATCH = 2_000;

export function defaultSeedNow(): Date {
  const now = Date.now();
  return new Date(now - (now % 3_600_000));
}

export async function seedCatalog(db: Db, opts: SeedOptions): Promise<SeedResult> {
  const started = performance.now();
  const seed = opts.seed ?? 1;
  const detail = opts.detail ?? 'full';
  const now = opts.now ?? defaultSeedNow();
  const batchSize = opts.batchSize ?? DEFAULT_BATCH;
  if (!Number.isSafeInteger(opts.events) || opts.events < 1) throw new RangeError(`events must be a positive integer, got ${opts.events}`);
  const rows: Record<string, number> = {};
  const add = (table: string, n: number) => {
    rows[table] = (rows[table] ?? 0) + n;
  };
  const totalRows = () => Object.values(rows).reduce((a, b) => a + b, 0);
  const progress = (phase: SeedProgress['phase'], done: number, total: number) =>
    opts.onProgress?.({ phase, done, total, rows: totalRows(), elapsedMs: performance.now() - started });

  const existing = await db('events').count<{ n: number }[]>({ n: '*' });
  const existingCount = Number(existing[0]?.n ?? 0);
  if (existingCount > 0 && !opts.append) {
    throw new SeedRefusedError(
      `the catalog already has ${existingCount} events; seeding again would mix two catalogs. ` +
        'Pass --append to add new events with fresh ids, or seed an empty database.',
    );
  }

  const { rows: maxRows } = (await db.raw('SELECT max(id)::bigint AS max FROM events WHERE id >= ? AND id < ?', [
    SEED_FIRST_EVENT_ID,
    SEED_ID_LIMIT,
  ])) as { rows: { max: number | null }[] };
  const firstEventId = Math.max(SEED_FIRST_EVENT_ID, Number(maxRows[0]?.max ?? 0) + 1);
  if (firstEventId + opts.events > SEED_ID_LIMIT) throw new SeedRefusedError(`seeded event ids would pass ${SEED_ID_LIMIT}`);

  const categoryIds = await upsertCategories(db);
  const parts = catalogParts(seed, opts.events);
  progress('venues and artists', 0, parts.venues.length + parts.artists.length);
  const venueIds = await reserveIds(db, 'venues', parts.venues.length);
  const artistIds = await reserveIds(db, 'artists', parts.artists.length);
  for (let i = 0; i < parts.venues.length; i += 5_000) {
    const slice = parts.venues.slice(i, i + 5_000).map((v, j) => ({ ...v, id: venueIds[i + j]! }));
    add('venues', await insertRows(db, 'venues', VENUE_COLUMNS, slice));
  }
  for (let i = 0; i < parts.artists.length; i += 5_000) {
    const slice = parts.artists.slice(i, i + 5_000).map((a, j) => ({ ...a, id: artistIds[i + j]! }));
    const metrics: SocialMetricRow[] = [];
    const snapshots: SocialSnapshotRow[] = [];
    slice.forEach((a, j) => {
      const social = generateArtistSocial(seed, i + j, a.id, a, now, detail);
      metrics.push(...social.metrics);
      snapshots.push(...social.snapshots);
    });
    await db.transaction(async (trx) => {
      add('artists', await insertRows(trx, 'artists', ARTIST_COLUMNS, slice));
      add('artist_social_metrics', await insertRows(trx, 'artist_social_metrics', SOCIAL_METRIC_COLUMNS, metrics));
      add('artist_social_snapshots', await insertRows(trx, 'artist_social_snapshots', SOCIAL_SNAPSHOT_COLUMNS, snapshots));
    });
    progress('venues and artists', parts.venues.length + Math.min(parts.artists.length, i + 5_000), parts.venues.length + parts.artists.length);
  }

  // Two batches in flight: one being written while the next is generated (2 cores here). Inside
  // a caller's transaction there is one connection, so one at a time.
  const parallel = db.isTransaction ? 1 : 2;
  const inFlight = new Set<Promise<void>>();
  let done = 0;
  progress('events', 0, opts.events);
  // Planner statistics as the tables grow (after the first batch, then at every doubling): the
  // per-batch statements must not be planned for the empty tables they started as, and
  // autovacuum may be off or behind.
  let analyzedAt = 0;
  for (let start = 0; start < opts.events; start += batchSize) {
    if (done > 0 && done >= 2 * analyzedAt) {
      analyzedAt = done;
      await db.raw('ANALYZE events, event_search, search_postings, search_dictionary, ma_stats_snapshots, mb_statistics_history, venues, artists');
    }
    const count = Math.min(batchSize, opts.events - start);
    const batch = buildBatch(seed, start, count, firstEventId, parts, venueIds, artistIds, categoryIds, now, detail);
    const write = writeBatch(db, batch, add).then(() => {
      done += count;
      progress('events', done, opts.events);
    });
    const tracked = write.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
    if (inFlight.size >= parallel) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);

  progress('analyze', 0, 1);
  // Fresh statistics for the planner, and a visibility map so counts can use index-only scans.
  const vacuumed = opts.vacuum ?? true;
  if (vacuumed) await db.raw('VACUUM (ANALYZE) event_search, search_postings');
  await db.raw(`ANALYZE ${vacuumed ? '' : 'event_search, search_postings, '}search_dictionary, events, venues, artists, ma_stats_snapshots, ma_daily_stats, ma_sales`);
  progress('analyze', 1, 1);
  return {
    events: opts.events,
    firstEventId,
    lastEventId: firstEventId + opts.events - 1,
    venues: parts.venues.length,
    artists: parts.artists.length,
    rows,
    ms: Math.round(performance.now() - started),
  };
}

/** Serialises concurrent first starts sharing a database (two replicas). */
const DEMO_CATALOG_LOCK = 7_317_002;

/**
 * `npm start`'s demo catalog: seeded once, when the catalog has no events, so a new user's first
 * search finds something. A database with any event (seeded or tracked) is left alone.
 */
export async function ensureDemoCatalog(db: Db, events = 200): Promise<{ created: boolean; events: number; ms: number }> {
  const started = performance.now();
  return db.transaction(async (trx) => {
    await trx.raw('SELECT pg_advisory_xact_lock(?)', [DEMO_CATALOG_LOCK]);
    const any = await trx('events').first('id');
    if (any) return { created: false, events: 0, ms: 0 };
    // The whole demo in this transaction: a start that fails half-way leaves no half catalog.
    const result = await seedCatalog(trx, { events, seed: 1, vacuum: false });
    return { created: true, events: result.events, ms: Math.round(performance.now() - started) };
  });
}

interface Batch {
  firstId: number;
  lastId: number;
  events: EventRow[];
  stats: EventStatistics[];
}

function buildBatch(
  seed: number,
  start: number,
  count: number,
  firstEventId: number,
  parts: ReturnType<typeof catalogParts>,
  venueIds: readonly number[],
  artistIds: readonly number[],
  categoryIds: ReadonlyMap<string, number>,
  now: Date,
  detail: Detail,
): Batch {
  const events: Batch['events'] = [];
  const stats: EventStatistics[] = [];
  for (let i = start; i < start + count; i++) {
    const e = generateEvent(seed, i, parts, now);
    const id = firstEventId + i;
    const artist = parts.artists[e.artistIndex]!;
    const venue = parts.venues[e.venueIndex]!;
    events.push({ ...e, id, venueId: venueIds[e.venueIndex]!, artistId: artistIds[e.artistIndex]!, categoryId: categoryIds.get(artist.category.name)! });
    stats.push(generateEventStatistics(seed, id, e, artist, venue, now, detail));
  }
  return { firstId: firstEventId + start, lastId: firstEventId + start + count - 1, events, stats };
}

async function writeBatch(db: Db, batch: Batch, add: (table: string, n: number) => void): Promise<void> {
  const snapshots: SnapshotRow[] = [];
  const daily: DailyRow[] = [];
  const sales: SaleRow[] = [];
  const histograms: HistogramRow[] = [];
  const runs: MarketplaceBRun[] = [];
  for (const s of batch.stats) {
    snapshots.push(...s.snapshots);
    daily.push(...s.daily);
    sales.push(...s.sales);
    if (s.histogram) histograms.push(s.histogram);
    runs.push(...s.marketplaceB);
  }
  await db.transaction(async (trx) => {
    add('events', await insertRows(trx, 'events', EVENT_COLUMNS, batch.events));
    add('ma_stats_snapshots', await insertRows(trx, 'ma_stats_snapshots', SNAPSHOT_COLUMNS, snapshots));
    add('ma_daily_stats', await insertRows(trx, 'ma_daily_stats', DAILY_COLUMNS, daily));
    add('ma_sales', await insertRows(trx, 'ma_sales', SALE_COLUMNS, sales));
    add('ma_price_histograms', await insertRows(trx, 'ma_price_histograms', HISTOGRAM_COLUMNS, histograms));
    await writeMarketplaceB(trx, runs, add);
    await refreshSearchRange(trx, batch.firstId, batch.lastId);
    add('event_search', batch.events.length);
  });
}

async function writeMarketplaceB(trx: Knex, runs: readonly MarketplaceBRun[], add: (table: string, n: number) => void): Promise<void> {
  if (runs.length === 0) return;
  const ids = await reserveIds(trx, 'mb_scrape_runs', runs.length);
  const withIds = runs.map((r, i) => ({ ...r, id: ids[i]! }));
  add('mb_scrape_runs', await insertRows(trx, 'mb_scrape_runs', RUN_COLUMNS, withIds));
  const sections = withIds.flatMap((r) => r.sections.map((s) => ({ ...s, run_id: r.id, created_at: r.created_at })));
  const offers = withIds.flatMap((r) => r.offers.map((o) => ({ ...o, run_id: r.id, created_at: r.created_at })));
  const history = withIds.map((r) => ({ ...r.history, event_id: r.event_id, run_id: r.id, created_at: r.created_at }));
  add('mb_section_stats', await insertRows(trx, 'mb_section_stats', SECTION_COLUMNS, sections));
  add('mb_offer_stats', await insertRows(trx, 'mb_offer_stats', OFFER_COLUMNS, offers));
  add('mb_statistics_history', await insertRows(trx, 'mb_statistics_history', HISTORY_COLUMNS, history));
}

async function upsertCategories(db: Db): Promise<Map<string, number>> {
  const names = CATEGORIES.map((c) => c.name);
  await db.raw('INSERT INTO categories (name) SELECT unnest(?::text[]) ON CONFLICT (name) DO NOTHING', [names]);
  const found = await db('categories').whereIn('name', names).select<{ id: number; name: string }[]>('id', 'name');
  return new Map(found.map((c) => [c.name, c.id]));
}
