// GET /svc/data/artist?url= (spec 4.1, 7.2, 8) through the real gateway and PostgreSQL: the
// documented profile, social metrics keyed by network, bounded snapshot history and upcoming
// events count; exact URL matching; MISSING_URL and ARTIST_NOT_FOUND; billing; backend
// failures; and a property: no query string gives a 5xx or changes stored data.
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { artistResponseSchema, SNAPSHOTS_PER_NETWORK } from '../../../src/apis/market-data/artist.ts';
import { newAccount } from '../../support/harness.ts';
import { describeBackendFailures } from '../../support/market-data-backend-failures.ts';
import {
  expectBilled,
  expectExactShape,
  expectMarketDataError,
  hoursFromNow,
  insertArtist,
  insertEvent,
  insertSocialMetric,
  insertSocialSnapshots,
  storedDigest,
  tag,
  useReadGateway,
  type ArtistFixture,
} from '../../support/market-data-fixtures.ts';

const t = useReadGateway();
const byUrl = (url: string) => `/svc/data/artist?url=${encodeURIComponent(url)}`;

const SPOTIFY_UPDATED = hoursFromNow(-3);
const fx = {} as { full: ArtistFixture; bare: ArtistFixture };

beforeAll(async () => {
  const db = t.gw.db;
  // A URL with characters that must be percent-encoded in the query string.
  fx.full = await insertArtist(db, {
    name: 'Fixture Orchestra',
    url: `https://www.marketplace-a.example/artist/fixture-${tag()}?lang=en&tab=a+b#top`,
    image_url: 'https://img.example/orchestra.jpg',
    genre: 'Classical',
    country_code: 'AT',
  });
  await insertSocialMetric(db, fx.full.id, { network: 'spotify', handle: 'fixtureorch', profile_url: 'https://open.spotify.example/fixtureorch', followers: 5_000_000_000, monthly_listeners: 1_234_567, updated_at: SPOTIFY_UPDATED });
  await insertSocialMetric(db, fx.full.id, { network: 'instagram', handle: null, profile_url: null, followers: 88_000, monthly_listeners: null });
  // Spotify: 130 observations every 12 h inside the window, 5 older ones outside it.
  await insertSocialSnapshots(db, fx.full.id, [
    ...Array.from({ length: 130 }, (_, i) => ({ network: 'spotify', captured_at: hoursFromNow(-1 - 12 * i), followers: 5_000_000 - i, monthly_listeners: 1_000_000 - i })),
    ...Array.from({ length: 5 }, (_, i) => ({ network: 'spotify', captured_at: hoursFromNow(-24 * (91 + i)), followers: 1, monthly_listeners: 1 })),
    { network: 'instagram', captured_at: hoursFromNow(-48), followers: 87_000, monthly_listeners: null },
    { network: 'instagram', captured_at: hoursFromNow(-24), followers: 87_500, monthly_listeners: null },
    // History without a current metrics row is still history.
    { network: 'tiktok', captured_at: hoursFromNow(-5), followers: 42, monthly_listeners: null },
  ]);
  for (const days of [10, 200]) await insertEvent(db, { artist_id: fx.full.id, event_date: hoursFromNow(24 * days) });
  await insertEvent(db, { artist_id: fx.full.id, event_date: hoursFromNow(-24) });
  await insertEvent(db, { artist_id: fx.full.id });

  fx.bare = await insertArtist(db);
});

describe('an artist on file', () => {
  it('answers the profile, metrics per network, bounded history newest first and upcoming events', async () => {
    const r = await t.get(byUrl(fx.full.url));
    expect(r.status, r.text).toBe(200);
    const body = expectExactShape(artistResponseSchema, r.body);
    expect(body.artist).toEqual({ id: fx.full.id, name: 'Fixture Orchestra', url: fx.full.url, image_url: 'https://img.example/orchestra.jpg', genre: 'Classical', country_code: 'AT' });
    expect(body.upcoming_events).toBe(2);
    expect(body.social_metrics).toEqual({
      instagram: { handle: null, profile_url: null, followers: 88_000, monthly_listeners: null, updated_at: expect.any(String) },
      spotify: {
        handle: 'fixtureorch',
        profile_url: 'https://open.spotify.example/fixtureorch',
        followers: 5_000_000_000,
        monthly_listeners: 1_234_567,
        updated_at: SPOTIFY_UPDATED.toISOString(),
      },
    });
    expect(Object.keys(body.snapshots).sort()).toEqual(['instagram', 'spotify', 'tiktok']);
    const spotify = body.snapshots.spotify!;
    expect(spotify).toHaveLength(SNAPSHOTS_PER_NETWORK);
    expect(spotify[0]).toEqual({ captured_at: hoursFromNow(-1).toISOString(), followers: 5_000_000, monthly_listeners: 1_000_000 });
    expect(spotify.map((s) => s.followers)).toEqual(Array.from({ length: SNAPSHOTS_PER_NETWORK }, (_, i) => 5_000_000 - i));
    expect(body.snapshots.instagram).toEqual([
      { captured_at: hoursFromNow(-24).toISOString(), followers: 87_500, monthly_listeners: null },
      { captured_at: hoursFromNow(-48).toISOString(), followers: 87_000, monthly_listeners: null },
    ]);
    expect(body.snapshots.tiktok).toHaveLength(1);
  });

  it('an artist with nothing but a profile: empty metrics and history, no upcoming events', async () => {
    const body = expectExactShape(artistResponseSchema, (await t.get(byUrl(fx.bare.url))).body);
    expect(body).toEqual({
      artist: { id: fx.bare.id, name: fx.bare.name, url: fx.bare.url, image_url: null, genre: null, country_code: null },
      upcoming_events: 0,
      social_metrics: {},
      snapshots: {},
    });
  });
});

describe('errors (spec 7.2)', () => {
  it.each(['', '?url=', '?url', '?other=1'])('%s is 400 MISSING_URL', async (qs) => {
    expectMarketDataError(await t.get(`/svc/data/artist${qs}`), 400, 'MISSING_URL');
  });

  it('url given twice, or another parameter with it, is 400 INVALID_REQUEST', async () => {
    expectMarketDataError(await t.get(`${byUrl(fx.bare.url)}&url=x`), 400, 'INVALID_REQUEST');
    expectMarketDataError(await t.get(`${byUrl(fx.bare.url)}&limit=1`), 400, 'INVALID_REQUEST');
  });

  it('only the exact URL matches: anything else is 404 ARTIST_NOT_FOUND', async () => {
    for (const url of [fx.bare.url.toUpperCase(), `${fx.bare.url}/`, ` ${fx.bare.url}`, fx.bare.url.slice(0, -1), 'x', '\0', fx.full.url.replace('+', ' ')]) {
      expectMarketDataError(await t.get(byUrl(url)), 404, 'ARTIST_NOT_FOUND');
    }
  });

  it('an unencoded + in the query string is a space, so that URL is not found', async () => {
    expectMarketDataError(await t.get(`/svc/data/artist?url=${fx.full.url.replace(/[?&#]/g, encodeURIComponent)}`), 404, 'ARTIST_NOT_FOUND');
  });
});

describe('billing', () => {
  it('costs 1 credit per answer, 4xx from the API included', async () => {
    const a = await newAccount(t.gw.db);
    const statuses = [];
    for (const p of [byUrl(fx.full.url), '/svc/data/artist', byUrl('nobody')]) statuses.push((await t.api('GET', p, { key: a.key })).status);
    const last = await t.api('GET', `${byUrl(fx.bare.url)}&x=1`, { key: a.key });
    expect([...statuses, last.status]).toEqual([200, 400, 404, 400]);
    await expectBilled(t.gw.db, a.accountId, last.headers.get('x-request-id'), 4, 'charged');
  });
});

describeBackendFailures(t, { path: () => byUrl(fx.full.url), lockedTable: 'artist_social_snapshots' });

describe('properties', () => {
  it('no query string gives a 5xx or changes stored data', async () => {
    const before = await storedDigest(t.gw.db, [], [fx.full.id, fx.bare.id]);
    const anyText = fc.string({ unit: 'binary', maxLength: 60 });
    const url = fc.oneof(anyText, fc.constantFrom(fx.full.url, fx.bare.url), fc.webUrl());
    const pair = fc.tuple(fc.oneof(fc.constant('url'), anyText), url);
    await fc.assert(
      fc.asyncProperty(fc.array(pair, { maxLength: 3 }), fc.boolean(), async (pairs, raw) => {
        // Either properly encoded, or the text as it comes (invalid escapes included).
        const qs = pairs.map(([k, v]) => (raw ? `${k}=${v}` : `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)).join('&');
        // Any fetch error (a URL that cannot be built included) fails the property.
        const r = await t.get(`/svc/data/artist?${qs}`);
        expect(r.status, `${qs} -> ${r.text}`).toBeLessThan(500);
        if (r.status === 200) expectExactShape(artistResponseSchema, r.body);
        else expect(['MISSING_URL', 'INVALID_REQUEST', 'ARTIST_NOT_FOUND'], r.text).toContain(r.body?.code);
      }),
      { numRuns: 150 },
    );
    expect(await storedDigest(t.gw.db, [], [fx.full.id, fx.bare.id])).toBe(before);
  });
});
