// GET /svc/data/artist?url= (spec 4.1): an artist's profile, current audience per social network
// and its recent history, found by the exact URL that event.artist.url shows (spec 2.2).
import { z } from 'zod';
import type { Pool } from '../../../db/pool.ts';
import type { RouteContext, RouteSpec } from '../../gateway/route.ts';
import { MarketDataError } from './errors.ts';
import { quoted, readQuery } from './query-params.ts';
import { BACKEND_FAILURES, errorResponse, isoTimestamp, timestamp } from './response-schemas.ts';

/** History shown per network: the last 90 days, at most this many observations (newest kept). */
export const SNAPSHOT_DAYS = 90;
export const SNAPSHOTS_PER_NETWORK = 100;

const audience = {
  followers: z.int().nullable(),
  monthly_listeners: z.int().nullable().meta({ description: 'Streaming networks only; null elsewhere' }),
};

export const artistResponseSchema = z
  .object({
    artist: z.object({
      id: z.int(),
      name: z.string(),
      url: z.string().meta({ description: 'The exact URL this artist is looked up by (event.artist.url)' }),
      image_url: z.string().nullable(),
      genre: z.string().nullable(),
      country_code: z.string().nullable().meta({ description: 'ISO 3166 alpha-2' }),
    }),
    upcoming_events: z.int().min(0).meta({ description: 'Catalog events of this artist dated now or later' }),
    social_metrics: z
      .record(
        z.string(),
        z.object({ handle: z.string().nullable(), profile_url: z.string().nullable(), ...audience, updated_at: timestamp }),
      )
      .meta({ description: 'Current audience keyed by network (spotify, instagram, youtube, tiktok, x, facebook); only networks on file' }),
    snapshots: z
      .record(z.string(), z.array(z.object({ captured_at: timestamp, ...audience })))
      .meta({
        description: `Audience history keyed by network, newest first: the last ${SNAPSHOT_DAYS} days, at most ${SNAPSHOTS_PER_NETWORK} per network`,
      }),
  })
  .meta({ id: 'Artist' });

export type ArtistResponse = z.output<typeof artistResponseSchema>;

const ARTIST_SQL = `
SELECT a.id, a.name, a.url, a.image_url, a.genre, a.country_code,
       (SELECT count(*) FROM events e WHERE e.artist_id = a.id AND e.event_date >= now()) AS upcoming_events
FROM artists a WHERE a.url = $1`;

// The follow-up statements find the artist by its URL themselves (artists.url is unique), so all
// three run at once instead of waiting for the id.
const ARTIST_ID = `(SELECT id FROM artists WHERE url = $1)`;

const METRICS_SQL = `
SELECT network, handle, profile_url, followers, monthly_listeners, updated_at
FROM artist_social_metrics WHERE artist_id = ${ARTIST_ID} ORDER BY network`;

const SNAPSHOTS_SQL = `
SELECT network, captured_at, followers, monthly_listeners FROM (
  SELECT network, captured_at, followers, monthly_listeners, id,
         row_number() OVER (PARTITION BY network ORDER BY captured_at DESC, id DESC) AS n
  FROM artist_social_snapshots
  WHERE artist_id = ${ARTIST_ID} AND captured_at >= now() - make_interval(days => ${SNAPSHOT_DAYS})) s
WHERE n <= ${SNAPSHOTS_PER_NETWORK}
ORDER BY network, captured_at DESC, id DESC`;

type Row = Record<string, unknown>;

export async function readArtist(pool: Pool, url: string): Promise<ArtistResponse | null> {
  const [found, metrics, snapshots] = await Promise.all([
    pool.query(ARTIST_SQL, [url]),
    pool.query(METRICS_SQL, [url]),
    pool.query(SNAPSHOTS_SQL, [url]),
  ]);
  const a = found.rows[0] as Row | undefined;
  if (!a) return null;
  const social: ArtistResponse['social_metrics'] = {};
  for (const m of metrics.rows as Row[]) {
    social[String(m.network)] = {
      handle: m.handle as string | null,
      profile_url: m.profile_url as string | null,
      followers: m.followers as number | null,
      monthly_listeners: m.monthly_listeners as number | null,
      updated_at: isoTimestamp(m.updated_at as Date)!,
    };
  }
  const history: ArtistResponse['snapshots'] = {};
  for (const s of snapshots.rows as Row[]) {
    (history[String(s.network)] ??= []).push({
      captured_at: isoTimestamp(s.captured_at as Date)!,
      followers: s.followers as number | null,
      monthly_listeners: s.monthly_listeners as number | null,
    });
  }
  return {
    artist: {
      id: Number(a.id),
      name: String(a.name),
      url: String(a.url),
      image_url: a.image_url as string | null,
      genre: a.genre as string | null,
      country_code: a.country_code as string | null,
    },
    upcoming_events: Number(a.upcoming_events),
    social_metrics: social,
    snapshots: history,
  };
}

export const artistRoute: RouteSpec = {
  operationId: 'getArtist',
  summary: 'Artist profile, social metrics and their recent history, by the exact URL from event.artist.url',
  request: {
    query: z.object({
      url: z.string().min(1).meta({ description: 'The exact artist URL as event.artist.url gives it, percent-encoded' }),
    }),
  },
  responses: {
    200: { description: 'The artist', schema: artistResponseSchema },
    400: errorResponse('MISSING_URL: url absent or empty; INVALID_REQUEST: url given twice, or another query parameter (billed)'),
    404: errorResponse('ARTIST_NOT_FOUND: no artist on file with exactly this URL (billed)'),
    ...BACKEND_FAILURES,
  },
  handler: async (ctx: RouteContext) => {
    // A missing url is named as such even when something else is wrong with the query too.
    if (ctx.query.url === undefined || ctx.query.url === '') {
      throw new MarketDataError('MISSING_URL', 'url is required: the artist URL from event.artist.url');
    }
    const url = readQuery(ctx, ['url']).url!;
    // PostgreSQL text cannot hold NUL, so no artist has such a URL (and the query would fail).
    const artist = url.includes('\0') ? null : await readArtist(ctx.state.services.pool, url);
    if (!artist) throw new MarketDataError('ARTIST_NOT_FOUND', `no artist on file with url ${quoted(url, 200)}`);
    ctx.body = artist;
  },
};
