// Fixtures for the search tests: a gateway on a scratch database of its own (search counts,
// orders and pages are over the whole catalog, so the run's shared database, where other files
// seed and track events, would make every expectation approximate), a paying account, and a
// small hand-made catalog whose every field is known, written through the real catalog tables
// and search-index.ts as the tracker writes them.
import { afterAll, beforeAll } from 'vitest';
import { createScratchDatabase, type ScratchDatabase } from '../../../db/scratch.ts';
import type { Db } from '../../../db/connection.ts';
import { refreshSearchRange } from '../../../src/market-data/search-index.ts';
import { clientFor, GATEWAY_ENV, type Client } from '../../support/gateway-helpers.ts';
import { databaseUrl, newAccount, startTestGateway, type TestAccount, type TestGateway } from '../../support/harness.ts';

export interface FixtureEvent {
  id: number;
  name: string;
  /** RFC 3339, or null. */
  date: string | null;
  category: string | null;
  artist: string | null;
  venue: { name: string; city: string; country: string; code: string; capacity: number | null } | null;
  /** The newest snapshot's counters; null: no statistics at all (not on sale yet). */
  stats: { sold: number; sold24h: number; available: number; avgPrice: string | null } | null;
  capacity?: number;
}

const V = {
  wembley: { name: 'Wembley Stadium', city: 'London', country: 'United Kingdom', code: 'GB', capacity: 90_000 },
  o2: { name: 'The O2', city: 'London', country: 'United Kingdom', code: 'GB', capacity: 20_000 },
  emirates: { name: 'Emirates Stadium', city: 'London', country: 'United Kingdom', code: 'GB', capacity: 60_000 },
  barbican: { name: 'Barbican Theatre', city: 'London', country: 'United Kingdom', code: 'GB', capacity: 1_150 },
  roundhouse: { name: 'Roundhouse', city: 'London', country: 'United Kingdom', code: 'GB', capacity: 3_300 },
  stade: { name: 'Stade de France', city: 'Paris', country: 'France', code: 'FR', capacity: 80_000 },
  olympia: { name: 'Olympiastadion', city: 'Berlin', country: 'Germany', code: 'DE', capacity: 74_000 },
  paradiso: { name: 'Paradiso', city: 'Amsterdam', country: 'Netherlands', code: 'NL', capacity: 1_500 },
  sofi: { name: 'SoFi Stadium', city: 'Los Angeles', country: 'United States', code: 'US', capacity: 70_000 },
  tonhalle: { name: 'Tonhalle', city: 'Zürich', country: 'Switzerland', code: 'CH', capacity: null },
  guildhall: { name: 'Guildhall', city: 'Derry', country: 'United Kingdom', code: 'GB', capacity: 800 },
};

/** The catalog every search test file works on. Ids are small: nothing else is in its database. */
export const EVENTS: readonly FixtureEvent[] = [
  { id: 1, name: 'Metallica - World Tour', date: '2030-06-01T19:00:00Z', category: 'Metal', artist: 'Metallica', venue: V.wembley, stats: { sold: 5000, sold24h: 120, available: 300, avgPrice: '150.00' } },
  { id: 2, name: 'Metallica Live in Paris', date: '2030-06-10T19:00:00Z', category: 'Metal', artist: 'Metallica', venue: V.stade, stats: { sold: 4000, sold24h: 80, available: 250, avgPrice: '140.50' } },
  { id: 3, name: 'Adele', date: '2029-12-01T20:00:00Z', category: 'Pop', artist: 'Adele', venue: V.o2, stats: { sold: 3000, sold24h: 200, available: 120, avgPrice: '210.00' } },
  { id: 4, name: 'Coldplay - Music of the Spheres', date: '2030-07-01T18:30:00Z', category: 'Rock', artist: 'Coldplay', venue: V.olympia, stats: { sold: 8000, sold24h: 50, available: 900, avgPrice: '120.00' } },
  { id: 5, name: 'London Grammar', date: '2029-10-05T20:00:00Z', category: 'Indie', artist: 'London Grammar', venue: V.paradiso, stats: { sold: 500, sold24h: 10, available: 40, avgPrice: '60.00' }, capacity: 1_400 },
  { id: 6, name: 'Taylor Swift | The Eras Tour', date: '2030-08-08T19:00:00Z', category: 'Pop', artist: 'Taylor Swift', venue: V.sofi, stats: { sold: 20000, sold24h: 900, available: 2000, avgPrice: '450.00' } },
  { id: 7, name: 'Arsenal vs Chelsea', date: '2029-11-11T15:00:00Z', category: 'Football', artist: 'Arsenal', venue: V.emirates, stats: { sold: 1000, sold24h: 300, available: 80, avgPrice: '95.25' } },
  { id: 8, name: 'Hamlet', date: '2029-09-20T19:30:00Z', category: 'Theatre', artist: 'Royal Shakespeare Company', venue: V.barbican, stats: { sold: 0, sold24h: 0, available: 60, avgPrice: null } },
  { id: 9, name: 'Zürich Jazz Night', date: '2031-01-15T20:00:00Z', category: 'Jazz', artist: 'Nina Simoneau', venue: V.tonhalle, stats: null },
  { id: 10, name: 'Mystery Event', date: null, category: null, artist: null, venue: null, stats: null },
  { id: 11, name: 'Metal Hammer Awards', date: '2030-03-03T19:00:00Z', category: 'Metal', artist: 'Various Artists', venue: V.roundhouse, stats: { sold: 1000, sold24h: 5, available: 100, avgPrice: '80.00' } },
  { id: 12, name: 'Londonderry Feis', date: '2030-05-05T12:00:00Z', category: 'Festival', artist: 'Feis Collective', venue: V.guildhall, stats: { sold: 200, sold24h: 20, available: 50, avgPrice: '45.00' } },
];

/** The search hit an event should produce (spec 2.4). */
export function expectedHit(e: FixtureEvent): Record<string, unknown> {
  return {
    objectID: String(e.id),
    event_id: e.id,
    event_name: e.name,
    event_date: e.date === null ? null : Date.parse(e.date) / 1000,
    category_name: e.category,
    artist_id: e.artist === null ? null : artistId(e.artist),
    artist_name: e.artist,
    venue_id: e.venue === null ? null : venueId(e.venue.name),
    venue_name: e.venue?.name ?? null,
    venue_city: e.venue?.city ?? null,
    venue_country: e.venue?.country ?? null,
    venue_country_code: e.venue?.code ?? null,
    tickets_sold: e.stats?.sold ?? 0,
    tickets_sold_24h: e.stats?.sold24h ?? 0,
    available_tickets: e.stats?.available ?? 0,
    capacity: e.capacity ?? e.venue?.capacity ?? null,
    average_ticket_price_sold: e.stats?.avgPrice == null ? null : Number(e.stats.avgPrice),
  };
}

const artistNames = [...new Set(EVENTS.flatMap((e) => (e.artist ? [e.artist] : [])))];
const venueNames = [...new Set(EVENTS.flatMap((e) => (e.venue ? [e.venue.name] : [])))];
const categoryNames = [...new Set(EVENTS.flatMap((e) => (e.category ? [e.category] : [])))];
const artistId = (name: string) => artistNames.indexOf(name) + 1;
const venueId = (name: string) => venueNames.indexOf(name) + 1;

/** Writes EVENTS into an empty catalog, statistics as a tracker would, then the search rows. */
export async function writeCatalog(db: Db): Promise<void> {
  await db('categories').insert(categoryNames.map((name, i) => ({ id: i + 1, name })));
  await db('artists').insert(artistNames.map((name, i) => ({ id: i + 1, name, url: `https://www.marketplace-a.example/artist/a${i + 1}` })));
  const venues = venueNames.map((name, i) => {
    const v = EVENTS.find((e) => e.venue?.name === name)!.venue!;
    return { id: i + 1, name, city: v.city, country: v.country, country_code: v.code, capacity: v.capacity };
  });
  await db('venues').insert(venues);
  await db('events').insert(
    EVENTS.map((e) => ({
      id: e.id,
      name: e.name,
      event_date: e.date,
      category_id: e.category ? categoryNames.indexOf(e.category) + 1 : null,
      artist_id: e.artist ? artistId(e.artist) : null,
      venue_id: e.venue ? venueId(e.venue.name) : null,
      capacity: e.capacity ?? null,
    })),
  );
  // An older snapshot first: the search row must take the newest.
  const snapshots = EVENTS.filter((e) => e.stats).flatMap((e) => [
    { event_id: e.id, captured_at: '2029-01-01T00:00:00Z', currency: 'USD', tickets_sold: 1, tickets_sold_24h: 1, available_tickets: 1, average_ticket_price_sold: '1.00' },
    {
      event_id: e.id,
      captured_at: '2029-01-02T00:00:00Z',
      currency: 'USD',
      tickets_sold: e.stats!.sold,
      tickets_sold_24h: e.stats!.sold24h,
      available_tickets: e.stats!.available,
      average_ticket_price_sold: e.stats!.avgPrice,
    },
  ]);
  await db('ma_stats_snapshots').insert(snapshots);
  await refreshSearchRange(db, 1, EVENTS.length);
}

export interface SearchContext {
  gw: TestGateway;
  scratch: ScratchDatabase;
  acct: TestAccount;
  api: Client;
  /** POST /svc/data/search with the file's key. */
  search(body: unknown): ReturnType<Client>;
}

/**
 * A gateway on its own scratch database, `fill` run against it first, and an account with a
 * key; set up before the file's tests, torn down after. Read the fields inside tests.
 */
export function useSearchGateway(fill: (db: Db) => Promise<void> = writeCatalog): SearchContext {
  const t = {} as SearchContext;
  beforeAll(async () => {
    t.scratch = await createScratchDatabase('tm_search', databaseUrl());
    t.gw = await startTestGateway({ env: { ...GATEWAY_ENV, DATABASE_URL: t.scratch.url } });
    await fill(t.gw.db);
    t.acct = await newAccount(t.gw.db, { rateLimit: 1_000_000 });
    t.api = clientFor(t.gw.url);
    t.search = (body) => t.api('POST', '/svc/data/search', { key: t.acct.key, body });
  });
  afterAll(async () => {
    await t.gw?.close();
    await t.scratch?.drop();
  });
  return t;
}
