// The TypeScript client against a real gateway (startTestGateway on loopback, the run's
// PostgreSQL, the run's Temporal server with a real scrape worker and the platform simulator):
// every operation of spec section 4 once on its success path, each error envelope of 7.1 to 7.5
// as a typed ApiError with its request id, and the retry rules of 7.7 (a 429 waited out).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdmissionGroups } from '../../../src/gateway/admissions.ts';
import { RateLimiter } from '../../../src/gateway/rate-limit.ts';
import { LocalBillingProvider } from '../../../src/billing/local-provider.ts';
import { createDb, type Db } from '../../../db/connection.ts';
import { TemporalEventTracker } from '../../../src/market-data/tracking-service.ts';
import { createRequestPool } from '../../../src/runtime/services.ts';
import { connectTemporal, type TemporalClient } from '../../../temporal/client.ts';
import { GATEWAY_ENV, unreachableDb, unreachablePool } from '../../../test/support/gateway-helpers.ts';
import { databaseUrl, newAccount, startTestGateway, testConfig, type TestAccount, type TestGateway } from '../../../test/support/harness.ts';
import { insertArtist, insertEvent, insertSales, randomAId } from '../../../test/support/market-data-fixtures.ts';
import { putEvent, section, useScrapeStack } from '../../../test/support/scrape-stack.ts';
import { temporalAddress, TEST_NAMESPACE, uniqueTaskQueue } from '../../../test/support/temporal.ts';
import { ApiError, createTicketMarketClient, orThrow, type CheckStatus, type TicketMarketClient } from '../src/index.ts';

const stack = useScrapeStack({ timeoutMs: 4_500 });
let gw: TestGateway;
let temporal: TemporalClient;
let trackerDb: Db;
let acct: TestAccount;
let client: TicketMarketClient;

beforeAll(async () => {
  temporal = await connectTemporal({ address: temporalAddress(), namespace: TEST_NAMESPACE });
  trackerDb = createDb({ connectionString: databaseUrl(), poolMax: 2 });
  const tracking = new TemporalEventTracker(
    trackerDb,
    temporal.client,
    { marketplace_a: 'http://127.0.0.1:8090/marketplace_a', marketplace_b: 'http://127.0.0.1:8090/marketplace_b' },
    { taskQueue: uniqueTaskQueue('client-events-add'), scrapeQueue: uniqueTaskQueue('client-events-add-ticks'), intervalMs: 60_000 },
  );
  gw = await startTestGateway({ env: GATEWAY_ENV, services: { scrapes: stack.runner, tracking } });
  acct = await newAccount(gw.db, { plan: 'enterprise' });
  client = createTicketMarketClient({ baseUrl: gw.url, apiKey: acct.key, headers: { 'x-forwarded-for': '10.77.0.1' } });
}, 120_000);
afterAll(async () => {
  await gw?.close();
  await temporal?.close();
  await trackerDb?.destroy();
});

describe('every operation of spec section 4, through the client', () => {
  it('4.1 Market Data: search, marketplace A event and sales, marketplace B, artist, events/add, ping', async () => {
    const artist = await insertArtist(gw.db);
    const eventId = await insertEvent(gw.db, { artist_id: artist.id });
    await insertSales(gw.db, eventId, [{ sold_at: new Date(Date.now() - 60_000), quantity: 2, price: '99.50' }]);
    const bId = `CLIENT${randomUUID().slice(0, 8).toUpperCase()}`;
    await insertEvent(gw.db, { marketplace_b_event_id: bId });

    const search = await orThrow(client.POST('/svc/data/search', { body: { query: '', hitsPerPage: 5 } }));
    expect(search.hitsPerPage).toBe(5);
    expect(Array.isArray(search.hits)).toBe(true);

    const a = await orThrow(client.GET('/svc/data/marketplace_a/{event_id}', { params: { path: { event_id: `E-${eventId}` } } }));
    expect(a.event.marketplace_a_event_id).toBe(eventId);
    expect(a.event.artist?.url).toBe(artist.url);

    const sales = await client.GET('/svc/data/sales/marketplace_a/{event_id}', { params: { path: { event_id: `E-${eventId}` }, query: { sales_limit: 20 } } });
    expect(sales.error, JSON.stringify(sales.error?.body)).toBeUndefined();

    const b = await orThrow(client.GET('/svc/data/marketplace_b/{tm_event_id}', { params: { path: { tm_event_id: bId }, query: { limit: 10 } } }));
    expect(b).toHaveProperty('latest_stats');

    const profile = await client.GET('/svc/data/artist', { params: { query: { url: artist.url } } });
    expect(profile.response?.status).toBe(200);

    const added = await client.POST('/svc/data/events/add', { body: { marketplace: 'marketplace_a', event_id: randomAId() } });
    expect(added.error, JSON.stringify(added.error?.body)).toBeUndefined();
    expect(added.response?.status).toBe(201);

    const ping = await client.GET('/svc/data/ping');
    expect(ping.response?.status).toBe(200);
  });

  it('4.2 Live Availability: platforms, scrape, ping', async () => {
    const platforms = await orThrow(client.GET('/events/platforms'));
    expect(Object.keys(platforms.platforms)).toContain('pf_03');
    const url = `https://pf03.example/e/client-${randomUUID().slice(0, 8)}`;
    await putEvent(stack.sim, 'pf_03', url, { region: 'us', currency: 'USD', name: 'Client Night', sections: [section('Floor', 50, 4)] });
    const scrape = await orThrow(client.POST('/events/scrape', { body: { platform: 'pf_03', event_id: url, region: 'us' } }));
    expect(scrape).toMatchObject({ success: true, platform: 'pf_03', total_stock: 4 });
    const ping = await orThrow(client.GET('/events/ping'));
    expect(typeof ping.status).toBe('string');
  });

  it('4.3 Watchlist: create, list, read, update, delete, health', async () => {
    const created = await client.POST('/watchlist', { body: { website: 'pf_03', event: 'https://pf03.example/e/watch', region: 'us', max_price_filter: 250 } });
    expect(created.response?.status).toBe(201);
    const item = created.data!;
    expect(item).toMatchObject({ website: 'pf_03', max_price_filter: 250, change_type: 'stock_increase', task_active: true });
    // Its health, typed (no monitor runs here, so it is not checked yet).
    const health: { status: CheckStatus; checked: string | null; changed: string | null } = { status: item.check_status, checked: item.last_checked_at, changed: item.last_changed_at };
    expect(health).toEqual({ status: 'pending', checked: null, changed: null });
    const list = await orThrow(client.GET('/watchlist'));
    expect(list.map((i) => i.id)).toContain(item.id);
    expect(await orThrow(client.GET('/watchlist/{id}', { params: { path: { id: String(item.id) } } }))).toEqual(item);
    const patched = await orThrow(client.PATCH('/watchlist/{id}', { params: { path: { id: String(item.id) } }, body: { change_type: 'price_decrease', muted_until: null } }));
    expect(patched.change_type).toBe('price_decrease');
    const deleted = await client.DELETE('/watchlist/{id}', { params: { path: { id: String(item.id) } } });
    expect(deleted.error).toBeUndefined();
    expect(deleted.response?.status).toBe(204);
    expect(await orThrow(client.GET('/watchlist/health'))).toHaveProperty('status');
  });

  it('4.4 Account: usage', async () => {
    const usage = await orThrow(client.GET('/usage'));
    expect(usage).toMatchObject({ plan: 'enterprise', status: 'active', unit: 'credits' });
    expect(usage.credits.used).toBeGreaterThan(0);
  });
});

describe('error envelopes as typed values (spec 7.1 to 7.5)', () => {
  it('7.1 gateway: invalid_credentials and forbidden, with the request id', async () => {
    const wrong = createTicketMarketClient({ baseUrl: gw.url, apiKey: 'tmk_wrong', headers: { 'x-forwarded-for': '10.77.0.2' } });
    const r = await wrong.GET('/watchlist');
    expect(r.error).toBeInstanceOf(ApiError);
    expect(r.error).toMatchObject({ status: 401, api: 'gateway', code: 'invalid_credentials', retries: 0 });
    expect(r.error!.requestId).toBe(r.response!.headers.get('x-request-id'));
    expect(r.error!.requestId).toMatch(/\S/);
    const narrow = await newAccount(gw.db, { apis: ['watchlist'] });
    const f = await createTicketMarketClient({ baseUrl: gw.url, apiKey: narrow.key }).GET('/svc/data/ping');
    expect(f.error).toMatchObject({ status: 403, api: 'gateway', code: 'forbidden' });
    expect(f.error!.is('gateway', 'forbidden')).toBe(true);
  });

  it('7.2 Market Data: INVALID_MARKETPLACE_A_ID and EVENT_NOT_FOUND', async () => {
    const bad = await client.GET('/svc/data/marketplace_a/{event_id}', { params: { path: { event_id: 'nope' } } });
    expect(bad.error).toMatchObject({ status: 400, api: 'market_data', code: 'INVALID_MARKETPLACE_A_ID' });
    expect(bad.error!.body).toMatchObject({ status: 'error', code: 'INVALID_MARKETPLACE_A_ID' });
    const missing = await client.GET('/svc/data/marketplace_a/{event_id}', { params: { path: { event_id: 'E-1' } } });
    expect(missing.error).toMatchObject({ status: 404, api: 'market_data', code: 'EVENT_NOT_FOUND' });
    expect(missing.error!.requestId).toBeTruthy();
  });

  it('7.3 Live Availability: an unsupported platform', async () => {
    const r = await client.POST('/events/scrape', { body: { platform: 'pf_99', event_id: 'x', region: 'us' } });
    expect(r.error).toMatchObject({ status: 400, api: 'live_availability', code: 'invalid_request' });
    expect(r.error!.message).toContain('pf_99');
  });

  it('7.4 Watchlist: not found, invalid input, a body that is not JSON', async () => {
    const nf = await client.GET('/watchlist/{id}', { params: { path: { id: '2000000000' } } });
    expect(nf.error).toMatchObject({ status: 404, api: 'watchlist', code: 'not_found' });
    const invalid = await client.POST('/watchlist', { body: { website: 'pf_03', event: 'e', region: 'us', seat_quantity: -4 } });
    expect(invalid.error).toMatchObject({ status: 400, api: 'watchlist', code: 'invalid_input' });
    const notJson = await client.POST('/watchlist', { body: 'not json' as never, bodySerializer: (b: unknown) => String(b) });
    expect(notJson.error).toMatchObject({ status: 400, api: 'watchlist', code: 'invalid_json' });
  });

  it('7.5 Account: 502 billing_unavailable, retried with backoff before it is returned', async () => {
    const down = await startTestGateway({ env: GATEWAY_ENV, services: { billing: new LocalBillingProvider(unreachableDb(), unreachablePool()) } });
    try {
      const retried: number[] = [];
      const c = createTicketMarketClient({
        baseUrl: down.url,
        apiKey: acct.key,
        retry: { unavailable: { maxRetries: 2, baseDelayMs: 20 }, onRetry: (i) => retried.push(i.status) },
      });
      const r = await c.GET('/usage');
      expect(r.error).toMatchObject({ status: 502, api: 'account', code: 'billing_unavailable', retries: 2 });
      expect(retried).toEqual([502, 502]);
      // Off for one call: answered at once.
      expect((await c.GET('/usage', { retry: false })).error).toMatchObject({ status: 502, retries: 0 });
    } finally {
      await down.close();
    }
  });

  it('no answer at all is an error value too (status 0), not retried', async () => {
    const c = createTicketMarketClient({ baseUrl: 'http://127.0.0.1:1', apiKey: acct.key });
    const r = await c.GET('/usage');
    expect(r.error).toMatchObject({ status: 0, api: 'network', code: 'network_error', retries: 0 });
  });
});

describe('rate limiting (spec 7.7: 429 honours Retry-After)', () => {
  it('a 429 is waited out as Retry-After says, then the call succeeds', async () => {
    // The gateway's clock is moved to a few seconds before the end of a minute, so the window
    // resets (and Retry-After ends) within seconds of real time instead of up to a minute. Set
    // just before the two calls that must share a window: the gateway's start and the account
    // before them take a variable time on a loaded machine.
    const LEFT_MS = 4_000;
    let offset = 0;
    const config = testConfig(GATEWAY_ENV);
    const pool = createRequestPool(config, databaseUrl());
    const limited = await startTestGateway({ env: GATEWAY_ENV, pool, services: { limiter: new RateLimiter(new AdmissionGroups(pool), pool, () => Date.now() + offset) } });
    try {
      const slow = await newAccount(limited.db, { rateLimit: 1 });
      const waits: { status: number; delayMs: number }[] = [];
      const c = createTicketMarketClient({ baseUrl: limited.url, apiKey: slow.key, retry: { onRetry: (i) => waits.push(i) } });
      offset = (((60_000 - LEFT_MS - (Date.now() % 60_000)) % 60_000) + 60_000) % 60_000;
      expect((await c.GET('/watchlist')).error).toBeUndefined();
      // Without retries the limit shows as the typed error with Retry-After.
      const refused = await c.GET('/watchlist', { retry: false });
      expect(refused.error).toMatchObject({ status: 429, api: 'gateway', code: 'rate_limited' });
      expect(refused.error!.retryAfterMs).toBeGreaterThan(0);
      // What is left of the window, not a minute.
      expect(refused.error!.retryAfterMs).toBeLessThanOrEqual(LEFT_MS);
      const started = Date.now();
      const r = await c.GET('/watchlist');
      expect(r.error, JSON.stringify(r.error)).toBeUndefined();
      expect(waits.map((w) => w.status)).toEqual([429]);
      expect(waits[0]!.delayMs).toBe(refused.error!.retryAfterMs);
      expect(Date.now() - started).toBeGreaterThanOrEqual(waits[0]!.delayMs - 50);
    } finally {
      await limited.close();
    }
  });
});
