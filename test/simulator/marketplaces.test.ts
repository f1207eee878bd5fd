// The simulated marketplaces A, B and C: their demo events and pages, the control API (set,
// read back, list, forget, reset, refusals), unknown events (404), behaviours, and drift.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_IDS } from '../../src/simulator/marketplaces/demo.ts';
import { MarketplaceStore } from '../../src/simulator/marketplaces/state.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';

let sim: Simulator;
let demo: Simulator;
beforeAll(async () => {
  [sim, demo] = await Promise.all([startSimulator({ empty: true }), startSimulator()]);
});
afterAll(async () => {
  await Promise.all([sim?.close(), demo?.close()]);
});

const control = (s: Simulator, method: string, path: string, body?: unknown) =>
  fetch(`${s.url}/_sim${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });

const listing = { section: 'Floor', row: 'A', quantity: 2, price: 120.5 };
const sale = { id: 'S-1', sold_at: '2027-01-01T10:00:00Z', section: 'Floor', row: 'A', quantity: 2, price: 110 };

describe('demo events', () => {
  it('serves marketplace A’s API with details, listings, sales and links to B and C', async () => {
    const res = await fetch(`${demo.url}/marketplace_a/api/events/${DEMO_IDS.concertA}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    const body = await res.json();
    expect(body.event).toMatchObject({
      id: DEMO_IDS.concertA,
      currency: 'GBP',
      venue: { countryCode: 'GB' },
      performer: { href: '/artist/aurora-skies' },
      links: { marketplaceB: { id: DEMO_IDS.concertB }, marketplaceC: { id: DEMO_IDS.concertC } },
    });
    expect(body.listings).toHaveLength(5);
    expect(body.listings[0]).toMatchObject({ listingId: 'L1', pricePerTicket: { amount: '145.00', currency: 'GBP' }, ticketClass: 'GA' });
    expect(body.recentSales.map((s: { saleId: string }) => s.saleId)).toEqual(['S-9008', 'S-9007', 'S-9006', 'S-9005', 'S-9004', 'S-9003', 'S-9002', 'S-9001']);
  });

  it('serves marketplace B’s page and C’s page', async () => {
    const b = await (await fetch(`${demo.url}/marketplace_b/event/${DEMO_IDS.concertB}`)).text();
    expect(b).toContain('class="section-stats"');
    expect(b).toContain('data-region="uk"');
    expect(b).toContain('£131.25');
    const c = await fetch(`${demo.url}/marketplace_c/tickets/${DEMO_IDS.concertC}`);
    expect(c.status).toBe(200);
    expect(await c.text()).toContain('Aurora Skies');
  });

  it('lists each marketplace’s events, and reset puts them back with the platforms', async () => {
    const list = async () => ((await (await control(demo, 'GET', '/marketplace_a/events')).json()).events as { key: string }[]).map((e) => e.key).sort();
    expect(await list()).toEqual([DEMO_IDS.concertA, DEMO_IDS.derbyA]);
    expect((await control(demo, 'DELETE', `/marketplace_a/events/${DEMO_IDS.derbyA}`)).status).toBe(204);
    expect(await list()).toEqual([DEMO_IDS.concertA]);
    expect((await control(demo, 'POST', '/reset')).status).toBe(204);
    expect(await list()).toEqual([DEMO_IDS.concertA, DEMO_IDS.derbyA]);
    // The platforms' own events are unchanged by the marketplaces being there.
    const { events } = await (await control(demo, 'GET', '/events')).json();
    expect(events.every((e: { platform: string }) => e.platform.startsWith('pf_'))).toBe(true);
  });
});

describe('control API', () => {
  it('sets a marketplace A event exactly, reads it back by id or public URL, and forgets it', async () => {
    const put = await control(sim, 'PUT', '/marketplace_a/events/E-5001', { name: 'Show', currency: 'EUR', listings: [listing], sales: [sale] });
    expect(put.status).toBe(200);
    const event = await put.json();
    expect(event).toMatchObject({ marketplace: 'marketplace_a', key: 'E-5001', name: 'Show', currency: 'EUR', behaviour: 'ok', drift: false, hits: 0 });
    expect(event.listings[0]).toEqual({ ...listing, ticket_type: 'standard' });
    const byUrl = await control(sim, 'GET', `/marketplace_a/events/${encodeURIComponent('https://www.marketplace-a.example/event/E-5001')}`);
    expect(await byUrl.json()).toEqual(event);
    const page = await (await fetch(`${sim.url}/marketplace_a/api/events/E-5001`)).json();
    expect(page.recentSales).toEqual([
      { saleId: 'S-1', soldAt: '2027-01-01T10:00:00.000Z', section: 'Floor', row: 'A', quantity: 2, pricePerTicket: { amount: '110.00', currency: 'EUR' }, ticketClass: 'STANDARD' },
    ]);
    expect((await (await control(sim, 'GET', '/marketplace_a/events/E-5001')).json()).hits).toBe(1);
    expect((await control(sim, 'DELETE', '/marketplace_a/events/E-5001')).status).toBe(204);
    expect((await fetch(`${sim.url}/marketplace_a/api/events/E-5001`)).status).toBe(404);
    expect((await control(sim, 'GET', '/marketplace_a/events/E-5001')).status).toBe(404);
  });

  it('sets marketplace B and C events', async () => {
    const b = await control(sim, 'PUT', '/marketplace_b/events/ABCDEF123456', {
      region: 'de',
      currency: 'EUR',
      sections: [{ name: 'Wiese', capacity: 100, available: 40, sold: 60 }],
      offers: [{ name: 'Tagesticket', stock: 40, price: 1250.5, face_price: 1200 }],
    });
    expect(b.status).toBe(200);
    const page = await (await fetch(`${sim.url}/marketplace_b/event/ABCDEF123456`)).text();
    expect(page).toContain('data-capacity="100" data-available="40" data-sold="60"');
    expect(page).toContain('€1,250.50');
    expect((await control(sim, 'PUT', '/marketplace_c/events/12345', { name: 'Elsewhere' })).status).toBe(200);
    expect(await (await fetch(`${sim.url}/marketplace_c/tickets/12345`)).text()).toContain('Elsewhere');
  });

  it.each([
    ['a body that is not JSON', '/marketplace_a/events/E-1', 'nope', /body must be JSON/],
    ['an unknown field', '/marketplace_a/events/E-1', { colour: 'red' }, /colour/],
    ['a listing of no tickets', '/marketplace_a/events/E-1', { listings: [{ ...listing, quantity: 0 }] }, /quantity/],
    ['a sale without an id', '/marketplace_a/events/E-1', { sales: [{ ...sale, id: undefined }] }, /id/],
    ['a repeated sale id', '/marketplace_a/events/E-1', { sales: [sale, sale] }, /repeated/],
    ['a country code that is not ISO 3166', '/marketplace_a/events/E-1', { venue: { name: 'V', country_code: 'gbr' } }, /country_code/],
    ['a B link that is not a B id', '/marketplace_a/events/E-1', { marketplace_b_event_id: 'x' }, /marketplace_b_event_id/],
    ['a B offer of an unknown type', '/marketplace_b/events/ABCDEF123456', { offers: [{ name: 'o', stock: 1, price: 1, face_price: 1, type: 'vip' }] }, /type/],
    ['a B region that is not a code', '/marketplace_b/events/ABCDEF123456', { region: 'United Kingdom' }, /region/],
  ])('refuses %s with a 400', async (_label, path, body, message) => {
    const res = await control(sim, 'PUT', path, body);
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatch(message);
  });

  it('refuses ids that are not the marketplace’s, and URLs of other hosts', async () => {
    expect((await control(sim, 'PUT', '/marketplace_a/events/104729', {})).status).toBe(400);
    expect((await control(sim, 'PUT', `/marketplace_a/events/${encodeURIComponent('https://evil.example/event/E-1')}`, {})).status).toBe(400);
    expect((await control(sim, 'GET', '/marketplace_b/events/x')).status).toBe(400);
  });
});

describe('pages', () => {
  it('answers 404 for an unknown event on every marketplace', async () => {
    expect((await fetch(`${sim.url}/marketplace_a/api/events/E-999999`)).status).toBe(404);
    expect((await fetch(`${sim.url}/marketplace_b/event/NOSUCHEVENT1`)).status).toBe(404);
    expect((await fetch(`${sim.url}/marketplace_c/tickets/99999`)).status).toBe(404);
  });

  it('applies behaviours: transient failures first, then not_found, error and malformed', async () => {
    await control(sim, 'PUT', '/marketplace_a/events/E-6001', { listings: [listing], failures: 2 });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await fetch(`${sim.url}/marketplace_a/api/events/E-6001`)).status);
    expect(statuses).toEqual([503, 503, 200]);
    await control(sim, 'PUT', '/marketplace_a/events/E-6001', { behaviour: 'not_found' });
    expect((await fetch(`${sim.url}/marketplace_a/api/events/E-6001`)).status).toBe(404);
    await control(sim, 'PUT', '/marketplace_b/events/ABCDEF654321', { behaviour: 'error' });
    expect((await fetch(`${sim.url}/marketplace_b/event/ABCDEF654321`)).status).toBe(503);
    await control(sim, 'PUT', '/marketplace_a/events/E-6001', { listings: [listing], behaviour: 'malformed' });
    expect((await (await fetch(`${sim.url}/marketplace_a/api/events/E-6001`)).json()).listings[0].pricePerTicket.amount).toBe('call for price');
    await control(sim, 'PUT', '/marketplace_b/events/ABCDEF654321', { sections: [{ name: 'S', capacity: 1, available: 1, sold: 0 }], behaviour: 'malformed' });
    expect(await (await fetch(`${sim.url}/marketplace_b/event/ABCDEF654321`)).text()).not.toContain('section-stats');
  });
});

describe('drift', () => {
  it('sells tickets of drifting A events as new sales and moves B’s sections; events set exactly stay put', () => {
    const store = new MarketplaceStore(() => new Date('2027-01-01T00:00:00Z'));
    const still = store.put('marketplace_a', 'E-7', { ...store.get('marketplace_a', 'E-104729')!, drift: false, sales: [], listings: [{ id: 'L1', section: 'S', row: null, quantity: 5, price: 10, ticket_type: 'standard' }] });
    const before = structuredClone(store.get('marketplace_a', 'E-104729')!);
    const b = structuredClone(store.get('marketplace_b', '0B005F2A9B1E4D2C')!);
    let seed = 0;
    store.drift(() => ((seed = (seed * 9301 + 49297) % 233280) / 233280));
    const after = store.get('marketplace_a', 'E-104729')!;
    expect(after.sales.length).toBe(before.sales.length + 1);
    const sold = after.sales.at(-1)!;
    expect(sold.sold_at).toBe('2027-01-01T00:00:00.000Z');
    expect(after.listings.reduce((n, l) => n + l.quantity, 0)).toBe(before.listings.reduce((n, l) => n + l.quantity, 0) - sold.quantity);
    const bAfter = store.get('marketplace_b', '0B005F2A9B1E4D2C')!;
    expect(bAfter.sections.reduce((n, s) => n + s.sold, 0)).toBe(b.sections.reduce((n, s) => n + s.sold, 0) + 1);
    expect(store.get('marketplace_a', 'E-7')).toEqual(still);
  });
});
