// The simulator's control API: set, read back, forget and reset events, by key or by the whole
// client event id (URL-encoded), and refuse bodies and ids it cannot take with a 400.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORM_KEYS } from '../../src/platform/registry.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ empty: true });
});
afterAll(async () => {
  await sim?.close();
});

const control = (method: string, path: string, body?: unknown) =>
  fetch(`${sim.url}/_sim${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });

const section = { name: 'Floor', price: 120.5, stock: 4 };

describe('events', () => {
  it('sets an event with defaults filled in, reads it back, and forgets it', async () => {
    const put = await control('PUT', '/pf_03/events/show-1', { region: 'US', sections: [section] });
    expect(put.status).toBe(200);
    const event = await put.json();
    expect(event).toMatchObject({
      platform: 'pf_03',
      key: 'show-1',
      region: 'us',
      behaviour: 'ok',
      failures: 0,
      delay_ms: 2000,
      drift: false,
      currency: 'EUR',
      hits: 0,
      sections: [{ ...section, ticket_type: 'standard', restricted_view: false, accessible: false, presale: false }],
    });
    expect(await (await control('GET', '/pf_03/events/show-1')).json()).toEqual(event);
    expect((await (await control('GET', '/events')).json()).events.map((e: { key: string }) => e.key)).toContain('show-1');
    expect((await control('DELETE', '/pf_03/events/show-1')).status).toBe(204);
    expect((await control('GET', '/pf_03/events/show-1')).status).toBe(404);
    expect((await control('DELETE', '/pf_03/events/show-1')).status).toBe(404);
  });

  it('takes the whole client event id, URL-encoded, as well as the key', async () => {
    const eventId = 'https://www.pf02.example/uk/event/ev-2024-0917';
    expect((await control('PUT', `/pf_02/events/${encodeURIComponent(eventId)}`, { region: 'uk', sections: [section] })).status).toBe(200);
    const byKey = await (await control('GET', '/pf_02/events/ev-2024-0917')).json();
    expect(byKey).toMatchObject({ key: 'ev-2024-0917', region: 'uk' });
    expect(await (await control('GET', `/pf_02/events/${encodeURIComponent(eventId)}`)).json()).toEqual(byKey);
  });

  it('keeps the request count across a PUT of the same event', async () => {
    await control('PUT', '/pf_11/events/70001', { region: 'us', sections: [section] });
    await fetch(`${sim.baseUrls.pf_11}/event/70001?region=us`);
    await fetch(`${sim.baseUrls.pf_11}/event/70001?region=us`);
    await control('PUT', '/pf_11/events/70001', { region: 'us', sections: [] });
    expect((await (await control('GET', '/pf_11/events/70001')).json()).hits).toBe(2);
  });

  it('goes back to one demo event per platform on reset', async () => {
    expect((await control('POST', '/reset')).status).toBe(204);
    const { events } = await (await control('GET', '/events')).json();
    expect(events.map((e: { platform: string }) => e.platform).sort()).toEqual([...PLATFORM_KEYS].sort());
    expect(events.every((e: { drift: boolean; sections: unknown[] }) => e.drift && e.sections.length === 5)).toBe(true);
  });

  it('answers its health check', async () => {
    expect(await (await control('GET', '/health')).json()).toEqual({ status: 'ok' });
  });
});

describe('refusals', () => {
  it.each([
    ['a body that is not JSON', 'not json', /body must be JSON/],
    ['no region', { sections: [] }, /region/],
    ['an unknown field', { region: 'us', colour: 'red' }, /colour/],
    ['a negative stock', { region: 'us', sections: [{ ...section, stock: -1 }] }, /stock/],
    ['a fractional stock', { region: 'us', sections: [{ ...section, stock: 1.5 }] }, /stock/],
    ['a negative price', { region: 'us', sections: [{ ...section, price: -5 }] }, /price/],
    ['an empty section name', { region: 'us', sections: [{ ...section, name: '   ' }] }, /name/],
    ['an unknown ticket type', { region: 'us', sections: [{ ...section, ticket_type: 'vip' }] }, /ticket_type/],
    ['an unknown behaviour', { region: 'us', behaviour: 'explode' }, /behaviour/],
    ['a currency that is not ISO 4217', { region: 'us', currency: 'euro' }, /currency/],
    ['a start that is not a date-time', { region: 'us', starts_at: 'next friday' }, /starts_at/],
  ])('refuses %s with a 400', async (_label, body, message) => {
    const res = await control('PUT', '/pf_03/events/show-2', body);
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatch(message);
  });

  it('refuses event ids that are not the platform’s (400) and unknown platforms (404)', async () => {
    const body = { region: 'us' };
    expect((await control('PUT', `/pf_03/events/${encodeURIComponent('bad key!')}`, body)).status).toBe(400);
    expect((await control('PUT', `/pf_03/events/${encodeURIComponent('https://evil.example/e/show-1')}`, body)).status).toBe(400);
    expect((await control('GET', `/pf_11/events/${encodeURIComponent('https://tickets.pf11.example/not-an-event')}`)).status).toBe(400);
    expect((await control('PUT', '/pf_99/events/show-1', body)).status).toBe(404);
  });
});

describe('request log (GET /_sim/requests)', () => {
  it('records every event request as it arrives, found or not, and filters by time and platform', async () => {
    const since = Date.now();
    await control('PUT', '/pf_03/events/logged-1', { region: 'us', sections: [section] });
    await fetch(`${sim.url}/pf_03/e/logged-1`);
    await fetch(`${sim.url}/pf_03/e/no-such-event`);
    await fetch(`${sim.url}/pf_06/v1/events/logged-6/listings?region=us&page=1`);
    const all = (await (await control('GET', `/requests?since=${since}`)).json()) as { requests: { at: number; platform: string; key: string }[] };
    expect(all.requests.map((r) => [r.platform, r.key])).toEqual([
      ['pf_03', 'logged-1'],
      ['pf_03', 'no-such-event'],
      ['pf_06', 'logged-6'],
    ]);
    for (const r of all.requests) expect(r.at).toBeGreaterThanOrEqual(since);
    const pf06 = (await (await control('GET', `/requests?since=${since}&platform=pf_06`)).json()) as { requests: unknown[] };
    expect(pf06.requests).toHaveLength(1);
    expect((await control('GET', '/requests?since=soon')).status).toBe(400);
  });

  it('keeps the last N requests (a ring), and reads per-key figures over a window', async () => {
    const { RequestLog, keyFigures } = await import('../../src/simulator/request-log.ts');
    const log = new RequestLog(3);
    for (const [i, key] of ['a', 'b', 'a', 'c'].entries()) log.record('pf_03', key, '127.0.0.1', 1_000 + i * 100);
    expect(log.since(0).map((r) => r.key)).toEqual(['b', 'a', 'c']);
    expect(log.total).toBe(4);
    const figures = keyFigures(log.since(0), ['a', 'b', 'z'], 1_000, 2_000);
    expect(figures.get('a')).toEqual({ requests: 1, maxGapMs: 800 });
    expect(figures.get('b')).toEqual({ requests: 1, maxGapMs: 900 });
    expect(figures.get('z')).toEqual({ requests: 0, maxGapMs: 1_000 });
  });
});
