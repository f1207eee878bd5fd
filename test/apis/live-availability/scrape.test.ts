// The Live Availability API through the real gateway, Temporal server, worker, scrapers and
// simulator: the registry exactly as spec 2.6 lists it, scrapes answering spec 2.5, every
// status of 7.3 in its `{detail}` body, billing per section 8 (5 credits; 4xx from the API
// billed once; 5xx never), a plan's per-platform scrape limit (scrape-limit.test.ts has the
// rest), the SSRF rule, and random bodies never answered with a 500.
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TemporalScrapeRunner } from '../../../src/apis/live-availability/scrape-runs.ts';
import { scrapeResponseSchema } from '../../../src/scrapers/schema.ts';
import { startTestGateway, newAccount, type TestAccount, type TestGateway } from '../../support/harness.ts';
import { awayFromMinuteEdge, clientFor, gatewayCode, GATEWAY_ENV, ledgerRows, usedCredits } from '../../support/gateway-helpers.ts';
import { hits, putEvent, section, useScrapeStack } from '../../support/scrape-stack.ts';

const stack = useScrapeStack({ timeoutMs: 4_500 });
let gw: TestGateway;
let acct: TestAccount;
let api: ReturnType<typeof clientFor>;

beforeAll(async () => {
  gw = await startTestGateway({ env: GATEWAY_ENV, services: { scrapes: stack.runner } });
  api = clientFor(gw.url);
});
afterAll(async () => {
  await gw?.close();
});

async function freshAccount(): Promise<TestAccount> {
  acct = await newAccount(gw.db, { plan: 'enterprise' });
  return acct;
}

const scrape = (body: unknown, key = acct.key) => api('POST', '/events/scrape', { key, body });

/** Spec 2.6, restated here on purpose so the test can catch a drift in the registry. */
const SPEC_REGISTRY: Record<string, { sections_type: string; regions: string[] | null; form: 'bare' | 'url' }> = {
  pf_01: { sections_type: 'SeatMapSections', regions: 'us ca uk ie au nz mx de es nl at dk be no ch se fi pl ae cz fr it za'.split(' '), form: 'bare' },
  pf_02: { sections_type: 'SeatMapSections', regions: ['uk', 'us', 'nu', 'de'], form: 'url' },
  pf_03: { sections_type: 'OfferSections', regions: null, form: 'url' },
  pf_04: { sections_type: 'OfferSections', regions: 'de it uk fi fr nl no sk es ch se pl dk at si hr ro hu'.split(' '), form: 'url' },
  pf_05: { sections_type: 'OfferSections', regions: ['it'], form: 'bare' },
  pf_06: { sections_type: 'OfferSections', regions: null, form: 'bare' },
  pf_07: { sections_type: 'OfferSections', regions: null, form: 'url' },
  pf_08: { sections_type: 'OfferSections', regions: ['au', 'nz', 'sg', 'my', 'uk', 'ph'], form: 'url' },
  pf_09: { sections_type: 'OfferSections', regions: ['cz', 'sk'], form: 'bare' },
  pf_10: { sections_type: 'OfferSections', regions: null, form: 'bare' },
  pf_11: { sections_type: 'OfferSections', regions: null, form: 'url' },
};

describe('GET /events/platforms', () => {
  it('answers the registry of spec 2.6 exactly, plus degraded (null: the worker has its browser), for 5 credits', async () => {
    await freshAccount();
    const r = await api('GET', '/events/platforms', { key: acct.key });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body)).toEqual(['platforms']);
    expect(Object.keys(r.body.platforms).sort()).toEqual(Object.keys(SPEC_REGISTRY));
    for (const [key, spec] of Object.entries(SPEC_REGISTRY)) {
      const entry = r.body.platforms[key];
      // `degraded` is added to spec 2.6's four fields (additive, spec 9); missing-browser.test.ts sets it.
      expect(Object.keys(entry).sort()).toEqual(['degraded', 'description', 'event_id_example', 'regions', 'sections_type']);
      expect(entry.degraded, key).toBeNull();
      expect(entry.sections_type).toBe(spec.sections_type);
      expect(entry.regions).toEqual(spec.regions);
      expect(entry.description === null || typeof entry.description === 'string').toBe(true);
      expect(/^https?:\/\//.test(entry.event_id_example)).toBe(spec.form === 'url');
    }
    expect(await usedCredits(gw.db, acct.accountId)).toBe(5);
  });
});

describe('POST /events/scrape', () => {
  it('answers spec 2.5 with OfferSections from the platform, for 5 credits', async () => {
    await freshAccount();
    const url = `https://pf03.example/e/api-${randomUUID().slice(0, 8)}`;
    await putEvent(stack.sim, 'pf_03', url, {
      region: 'fr',
      currency: 'EUR',
      name: 'Nuit Blanche',
      sections: [section('Fosse', 59.9, 10), section('Balcon', 35, 0), section('Loge', 120.5, 2, { accessible: true })],
    });
    const before = Date.now();
    const r = await scrape({ platform: 'pf_03', event_id: url, region: 'FR' });
    expect(r.status, r.text).toBe(200);
    expect(scrapeResponseSchema.strict().safeParse(r.body).success, r.text).toBe(true);
    expect(r.body).toMatchObject({
      success: true,
      platform: 'pf_03',
      event_id: url,
      region: 'fr',
      sections_type: 'OfferSections',
      total_stock: 12,
      degraded: null,
      error: null,
      event_info: { name: 'Nuit Blanche', currency: 'EUR' },
    });
    expect(Date.parse(r.body.scrape_timestamp)).toBeGreaterThanOrEqual(before - 1000);
    expect(r.body.sections.Fosse).toMatchObject({ name: 'Fosse', stock: 10, min_price: 59.9, max_price: 59.9, currency: 'EUR' });
    expect(r.body.sections.Balcon).toMatchObject({ stock: 0, min_price: null, max_price: null, offers: [] });
    expect(r.body.sections.Loge.offers[0]).toMatchObject({ price: 120.5, quantity: 2, accessible: true, ticket_type: 'standard' });
    expect(await usedCredits(gw.db, acct.accountId)).toBe(5);
  });

  it('scrapes pf_08 in the region of the event URL\'s domain, whatever region the body names (spec 2.6, issue 24)', async () => {
    await freshAccount();
    const url = `https://pf08.example.co.nz/event/AKL-${randomUUID().slice(0, 8)}`;
    await putEvent(stack.sim, 'pf_08', url, { region: 'nz', currency: 'NZD', sections: [section('Stalls', 89, 6)] });
    for (const region of ['au', 'NZ', 'us']) {
      const r = await scrape({ platform: 'pf_08', event_id: url, region });
      expect(r.status, `${region}: ${r.text}`).toBe(200);
      expect(r.body).toMatchObject({ success: true, platform: 'pf_08', event_id: url, region: 'nz', total_stock: 6 });
    }
  });

  it("429 rate_limited past the plan's scrapes per platform per minute (issue 36): the platform never sees the refused one, and it is not billed", async () => {
    const plan = `scrape_once_${randomUUID().slice(0, 8)}`;
    await gw.db('plans').insert({ id: plan, name: 'One scrape a minute', included: 1_000_000, hard_cap: null, price_id: `price_${plan}`, product_id: 'prod_api', scrape_requests_per_platform_per_minute: 1 });
    acct = await newAccount(gw.db, { plan });
    const url = `https://pf03.example/e/limited-${randomUUID().slice(0, 8)}`;
    await putEvent(stack.sim, 'pf_03', url, { region: 'fr', sections: [section('Fosse', 59.9, 10)] });
    await awayFromMinuteEdge(15_000); // both requests in one calendar minute
    const served = await scrape({ platform: 'pf_03', event_id: url, region: 'fr' });
    expect(served.status, served.text).toBe(200);
    expect(served.body).toMatchObject({ success: true, total_stock: 10 });
    expect(await hits(stack.sim, 'pf_03', url)).toBe(1);

    const refused = await scrape({ platform: 'pf_03', event_id: url, region: 'fr' });
    expect(refused.status, refused.text).toBe(429);
    expect(refused.body).toEqual({ error: { code: 'rate_limited', message: 'more than 1 scrape requests to pf_03 in the current minute for this account' } });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get('ratelimit-policy')).toContain('"scrape_pf_03";q=1;w=60');
    expect(await hits(stack.sim, 'pf_03', url)).toBe(1);
    // Another platform is another budget.
    expect((await scrape({ platform: 'pf_06', event_id: 'Zz9Yy8Xx', region: 'us' })).status).toBe(404);

    expect(await usedCredits(gw.db, acct.accountId)).toBe(10);
    const rows = await ledgerRows(gw.db, acct.accountId);
    expect(rows.map((row) => [row.request_id, row.state, row.status_code])).toEqual([
      [served.headers.get('x-request-id'), 'charged', 200],
      [refused.headers.get('x-request-id'), 'released', 429],
      [expect.any(String), 'charged', 404],
    ]);
  });

  it('answers a sold-out event with total_stock 0', async () => {
    await freshAccount();
    const id = String(100000 + Math.floor(Math.random() * 899999));
    await putEvent(stack.sim, 'pf_09', id, { region: 'cz', currency: 'CZK', sections: [section('Parter', 1250, 0)] });
    const r = await scrape({ platform: 'pf_09', event_id: id, region: 'cz' });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ success: true, total_stock: 0, sections_type: 'OfferSections' });
  });

  it('scrapes the client-rendered pf_01 in a browser, with SeatMapSections and degraded arms', async () => {
    await freshAccount();
    const id = randomUUID().replace(/-/g, '').slice(0, 16);
    await putEvent(stack.sim, 'pf_01', id, {
      region: 'uk',
      currency: 'GBP',
      sections: [section('Block 101', 95, 3), section('Resale 1', 140, 2, { ticket_type: 'resale' })],
    });
    const ok = await scrape({ platform: 'pf_01', event_id: id, region: 'uk' });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toMatchObject({ sections_type: 'SeatMapSections', degraded: null, total_stock: 5 });
    expect(ok.body.sections['Block 101'].seats).toHaveLength(3);

    await putEvent(stack.sim, 'pf_01', id, {
      region: 'uk',
      currency: 'GBP',
      sections: [section('Block 101', 95, 3), section('Resale 1', 140, 2, { ticket_type: 'resale' })],
      arms: { v1: 'error', v2: 'ok' },
    });
    const degraded = await scrape({ platform: 'pf_01', event_id: id, region: 'uk' });
    expect(degraded.status, degraded.text).toBe(200);
    expect(degraded.body.degraded).toBe('v1');
  });

  it.each([
    [{ platform: 'pf_99', event_id: 'x', region: 'us' }, 'unknown or unsupported platform'],
    [{ platform: 'PF_03', event_id: 'https://pf03.example/e/x', region: 'us' }, 'unknown or unsupported platform'],
    [{ event_id: 'https://pf03.example/e/x', region: 'us' }, 'platform is required'],
    [{ platform: 'pf_03', region: 'us' }, 'event_id is required'],
    [{ platform: 'pf_03', event_id: 'https://pf03.example/e/x' }, 'region is required'],
    [{ platform: 'pf_03', event_id: 42, region: 'us' }, 'event_id is required and must be a string'],
    [{ platform: 'pf_01', event_id: 'https://pf01.example/event/G5vYZ9fT1aB2cD3e', region: 'us' }, 'bare id'],
    [{ platform: 'pf_03', event_id: '4411', region: 'us' }, 'full event URL'],
    [{ platform: 'pf_05', event_id: '7730021', region: 'de' }, "region 'de' is not supported by pf_05"],
  ])('400 {detail} for %j', async (body, detail) => {
    await freshAccount();
    const r = await scrape(body);
    expect(r.status).toBe(400);
    expect(Object.keys(r.body)).toEqual(['detail']);
    expect(r.body.detail).toContain(detail);
    // A 4xx from the API itself is billed once (spec 7.7).
    expect(await usedCredits(gw.db, acct.accountId)).toBe(5);
  });

  it('400 {detail} for a body that is not JSON or not an object', async () => {
    await freshAccount();
    for (const raw of ['{', '[]', '"pf_03"', 'null']) {
      const r = await api('POST', '/events/scrape', { key: acct.key, raw, headers: { 'content-type': 'application/json' } });
      expect(r.status, raw).toBe(400);
      expect(Object.keys(r.body)).toEqual(['detail']);
    }
  });

  it('SSRF: a URL naming any host but the platform\'s is a 400 and is never fetched', async () => {
    await freshAccount();
    let fetched = 0;
    const { createServer } = await import('node:http');
    const trap = createServer((_, res) => {
      fetched++;
      res.end('{}');
    });
    await new Promise<void>((r) => trap.listen(0, '127.0.0.1', r));
    const port = (trap.address() as { port: number }).port;
    try {
      for (const eventId of [`http://127.0.0.1:${port}/e/x`, `http://localhost:${port}/e/x`, 'http://169.254.169.254/e/x', `${stack.sim.url}/pf_03/e/x`]) {
        const r = await scrape({ platform: 'pf_03', event_id: eventId, region: 'us' });
        expect(r.status, eventId).toBe(400);
        expect(r.body.detail).toMatch(/does not belong to pf_03|must not name a port/);
      }
    } finally {
      trap.close();
    }
    expect(fetched).toBe(0);
  });

  it('404 {detail} when the event is not on the platform (billed: a 4xx of the API)', async () => {
    await freshAccount();
    const r = await scrape({ platform: 'pf_06', event_id: 'Zz9Yy8Xx', region: 'us' });
    expect(r.status, r.text).toBe(404);
    expect(Object.keys(r.body)).toEqual(['detail']);
    expect(await usedCredits(gw.db, acct.accountId)).toBe(5);
  });

  it('408 {detail} when the platform takes longer than the limit', async () => {
    await freshAccount();
    const url = `https://pf03.example/e/slow-${randomUUID().slice(0, 8)}`;
    await putEvent(stack.sim, 'pf_03', url, { region: 'us', sections: [section('A', 10, 1)], behaviour: 'slow', delay_ms: 60_000 });
    const r = await scrape({ platform: 'pf_03', event_id: url, region: 'us' });
    expect(r.status, r.text).toBe(408);
    expect(r.body.detail).toContain('took longer than');
  });

  it('500 {detail} for a page that cannot be understood, not billed', async () => {
    await freshAccount();
    const url = `https://pf03.example/e/broken-${randomUUID().slice(0, 8)}`;
    await putEvent(stack.sim, 'pf_03', url, { region: 'us', sections: [section('A', 10, 1)], behaviour: 'malformed' });
    const r = await scrape({ platform: 'pf_03', event_id: url, region: 'us' });
    expect(r.status, r.text).toBe(500);
    expect(Object.keys(r.body)).toEqual(['detail']);
    expect(await hits(stack.sim, 'pf_03', url)).toBe(1); // malformed is final: not retried
    expect(await usedCredits(gw.db, acct.accountId)).toBe(0);
    const rows = await ledgerRows(gw.db, acct.accountId);
    expect(rows.map((row) => [row.state, row.status_code])).toEqual([['released', 500]]);
  });

  it('500 {detail} when the platform refuses us (429), saying so and for how long; not retried, not billed', async () => {
    await freshAccount();
    const url = `https://pf03.example/e/blocked-${randomUUID().slice(0, 8)}`;
    await putEvent(stack.sim, 'pf_03', url, { region: 'us', sections: [section('A', 10, 1)], behaviour: 'blocked', retry_after_s: 90 });
    const r = await scrape({ platform: 'pf_03', event_id: url, region: 'us' });
    expect(r.status, r.text).toBe(500);
    expect(Object.keys(r.body)).toEqual(['detail']);
    expect(r.body.detail).toBe('pf_03 is refusing our requests for this event for now; try again in 90 s');
    expect(await hits(stack.sim, 'pf_03', url)).toBe(1); // a platform asking us to back off is not asked again at once
    expect(await usedCredits(gw.db, acct.accountId)).toBe(0);
  });

  it('502 service_unavailable (gateway envelope, not billed) when Temporal cannot be reached', async () => {
    const connection = Connection.lazy({ address: '127.0.0.1:1', connectTimeout: 1_000 });
    const down = await startTestGateway({ env: GATEWAY_ENV, services: { scrapes: new TemporalScrapeRunner(new Client({ connection }), { taskQueue: 'nobody', timeoutMs: 4_000 }) } });
    try {
      const a = await newAccount(down.db, { plan: 'enterprise' });
      const r = await clientFor(down.url)('POST', '/events/scrape', { key: a.key, body: { platform: 'pf_06', event_id: 'Zz9Yy8Xx', region: 'us' } });
      expect(r.status, r.text).toBe(502);
      expect(gatewayCode(r)).toBe('service_unavailable');
      expect(await usedCredits(down.db, a.accountId)).toBe(0);
    } finally {
      await down.close();
      await connection.close().catch(() => {});
    }
  });

  it('property: random bodies are answered 200, 400 or 404 in {detail}, never 5xx', async () => {
    await freshAccount();
    const platform = fc.oneof(fc.constantFrom('pf_01', 'pf_03', 'pf_05', 'pf_06', 'pf_10', 'pf_11'), fc.string({ maxLength: 8 }));
    const body = fc.oneof(
      fc.record({ platform, event_id: fc.oneof(fc.string({ maxLength: 40 }), fc.webUrl(), fc.constant('https://pf03.example/e/zzz')), region: fc.oneof(fc.constantFrom('us', 'IT', 'fr'), fc.string({ maxLength: 6 })) }, { requiredKeys: [] }),
      fc.jsonValue({ maxDepth: 2 }),
    );
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const r = await scrape(b);
        expect([200, 400, 404]).toContain(r.status);
        if (r.status !== 200) expect(Object.keys(r.body ?? {})).toEqual(['detail']);
      }),
      { numRuns: 60 },
    );
  });
});
