// The simulator's limits and bans by source address (src/simulator/address-limits.ts) over real
// HTTP, from several loopback source addresses (127.0.0.0/8 is all loopback on Linux; the client
// binds 127.0.0.2, 127.0.0.3, ... as a scraper's loopback proxies do, and only ever talks to the
// simulator on 127.0.0.1): one address banned and another not, the three ban answers on HTML and
// JSON routes (the challenge per vendor family), expiry, the control API, the request log's
// address and refused flag, and bad control bodies.
import { request } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PLATFORM_KEYS } from '../../src/platform/registry.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import type { SimRequest } from '../../src/simulator/request-log.ts';
import { hits, putEvent } from '../support/simulator.ts';

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ empty: true });
});
afterAll(async () => {
  await sim?.close();
});
beforeEach(() => {
  sim.limits.reset();
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** One request to the simulator from the source address `from` (a fresh connection each time). */
function send(path: string, from: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = options.body === undefined ? undefined : Buffer.from(options.body);
    const req = request(
      {
        host: '127.0.0.1',
        port: sim.port,
        path,
        method: options.method ?? 'GET',
        localAddress: from,
        agent: false,
        headers: { ...options.headers, ...(body ? { 'content-type': 'application/json', 'content-length': String(body.length) } : {}) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const control = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${sim.url}/_sim${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, body: res.status === 204 ? null : await res.json() };
};

const JSON_ACCEPT = { accept: 'application/json' };
const sections = [{ name: 'Floor', price: 10, stock: 2 }];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the limit per address', () => {
  it('bans the address that goes past it, and only that address; the request that went past is refused', async () => {
    const set = await control('PUT', '/pf_03/limits', { requests_per_minute: 3, ban_answer: 'forbidden' });
    expect(set).toMatchObject({ status: 200, body: { requests_per_minute: 3, ban_ms: 600_000, ban_answer: 'forbidden' } });
    await putEvent(sim, 'pf_03', 'lim-1', { region: 'us', sections });
    for (let i = 0; i < 3; i++) expect((await send('/pf_03/e/lim-1?region=us', '127.0.0.2')).status).toBe(200);
    const refused = await send('/pf_03/e/lim-1?region=us', '127.0.0.2');
    expect(refused.status).toBe(403);
    expect(refused.headers['content-type']).toContain('text/html');
    expect((await send('/pf_03/e/lim-1?region=us', '127.0.0.3')).status).toBe(200);
    // Refused requests never reached the event.
    expect(await hits(sim, 'pf_03', 'lim-1')).toBe(4);
    const { body } = await control('GET', '/pf_03/limits');
    expect(body.addresses['127.0.0.2']).toEqual({ requests_last_minute: 3, banned_until: expect.any(String), bans: 1, refused: 1 });
    expect(Date.parse(body.addresses['127.0.0.2'].banned_until) - Date.now()).toBeGreaterThan(590_000);
    expect(body.addresses['127.0.0.3']).toEqual({ requests_last_minute: 1, banned_until: null, bans: 0, refused: 0 });
    expect(body.totals).toEqual({ bans_issued: 1, refused: 1, untracked: 0, tracked_addresses: 2 });
    // Other platforms have their own limits (none here).
    expect((await send('/pf_11/event/1?region=us', '127.0.0.2')).status).toBe(404);
  });

  it('refuses before the route: no hit, no failure counted down; /_sim/ is never limited', async () => {
    await putEvent(sim, 'pf_03', 'lim-2', { region: 'us', sections, failures: 2 });
    expect((await control('POST', '/pf_03/bans', { address: '127.0.0.4' })).status).toBe(201);
    const refused = await send('/pf_03/e/lim-2?region=us', '127.0.0.4');
    expect(refused.status).toBe(200);
    expect(refused.headers['cf-mitigated']).toBe('challenge');
    const event = await control('GET', '/pf_03/events/lim-2');
    expect(event.body).toMatchObject({ failures: 2, hits: 0 });
    expect((await send('/_sim/pf_03/limits', '127.0.0.4')).status).toBe(200);
    expect((await send('/_sim/pf_03/events/lim-2', '127.0.0.4')).status).toBe(200);
  });
});

describe('ban answers', () => {
  it('forbidden: 403 in the route’s type, JSON when the request prefers JSON', async () => {
    await control('PUT', '/pf_11/limits', { ban_answer: 'forbidden' });
    await control('POST', '/pf_11/bans', { address: '127.0.0.5' });
    const html = await send('/pf_11/event/5?region=us', '127.0.0.5');
    expect(html.status).toBe(403);
    expect(html.headers['content-type']).toContain('text/html');
    await control('PUT', '/pf_05/limits', { ban_answer: 'forbidden' });
    await control('POST', '/pf_05/bans', { address: '127.0.0.5' });
    const json = await send('/pf_05/api/eventi/5/settori', '127.0.0.5', { headers: JSON_ACCEPT });
    expect(json.status).toBe(403);
    expect(json.headers['content-type']).toContain('application/json');
    expect(JSON.parse(json.text)).toEqual({ error: 'Access denied' });
  });

  it('too_many: 429 with a Retry-After of the ban’s remaining whole seconds, rounded up', async () => {
    await control('PUT', '/pf_11/limits', { requests_per_minute: 1, ban_ms: 90_500, ban_answer: 'too_many' });
    expect((await send('/pf_11/event/6?region=us', '127.0.0.6')).status).toBe(404);
    const html = await send('/pf_11/event/6?region=us', '127.0.0.6');
    expect(html.status).toBe(429);
    expect(html.headers['retry-after']).toBe('91');
    expect(html.headers['content-type']).toContain('text/html');
    const json = await send('/pf_11/event/6?region=us', '127.0.0.6', { headers: JSON_ACCEPT });
    expect(json.status).toBe(429);
    expect(Number(json.headers['retry-after'])).toBeGreaterThanOrEqual(89);
    expect(Number(json.headers['retry-after'])).toBeLessThanOrEqual(91);
    expect(JSON.parse(json.text)).toEqual({ error: 'Too many requests' });
    // A ban by the control API: its own length.
    await control('POST', '/pf_11/bans', { address: '127.0.0.7', ms: 2_500 });
    expect((await send('/pf_11/event/6?region=us', '127.0.0.7')).headers['retry-after']).toBe('3');
  });

  const CHALLENGES = [
    ['pf_03', 'GET', '/pf_03/e/c1?region=us', 'html', 'cloudflare'],
    ['pf_11', 'GET', '/pf_11/event/71?region=us', 'json', 'cloudflare'],
    ['pf_01', 'GET', '/pf_01/api/v2/events/c1/seats', 'json', 'cloudflare'],
    ['pf_01', 'GET', '/pf_01/', 'html', 'cloudflare'],
    ['pf_02', 'GET', '/pf_02/uk/event/c1', 'html', 'perimeterx'],
    ['pf_06', 'GET', '/pf_06/v1/events/c1/listings?region=us&page=1', 'json', 'perimeterx'],
    ['pf_09', 'GET', '/pf_09/akce/71', 'json', 'perimeterx'],
    ['pf_04', 'GET', '/pf_04/de/tickets/c1', 'html', 'datadome'],
    ['pf_05', 'GET', '/pf_05/api/eventi/71/settori', 'json', 'datadome'],
    ['pf_10', 'POST', '/pf_10/graphql', 'post', 'datadome'],
  ] as const;

  it.each(CHALLENGES)('challenge: %s %s %s asking for %s answers the %s challenge with status 200', async (platform, method, path, asks, family) => {
    // The default ban answer; the limit is per platform.
    await control('PUT', `/${platform}/limits`, { requests_per_minute: 1 });
    const body = method === 'POST' ? JSON.stringify({ query: 'query ($id: ID!) { event(id: $id) { id } }', variables: { id: 'c1' } }) : undefined;
    const headers = asks === 'json' ? JSON_ACCEPT : asks === 'html' ? { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } : {};
    await send(path, '127.0.0.8', { method, headers, body });
    const res = await send(path, '127.0.0.8', { method, headers, body });
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const wantsJson = asks !== 'html';
    if (family === 'cloudflare') {
      expect(res.headers['cf-mitigated']).toBe('challenge');
      expect(res.headers['content-type']).toContain('text/html');
      expect(res.text).toBe(
        '<!doctype html><html><head><title>Just a moment...</title></head><body><div id="challenge-running">Checking your browser before accessing the site.</div></body></html>',
      );
    } else if (family === 'perimeterx') {
      if (wantsJson) {
        expect(res.headers['content-type']).toContain('application/json');
        expect(JSON.parse(res.text)).toMatchObject({ appId: 'PXsim0001', jsClientSrc: '/px/client.js', firstPartyEnabled: true, hostUrl: '/px/xhr', blockScript: '/px/captcha.js', vid: expect.any(String), uuid: expect.any(String) });
      } else {
        expect(res.text).toContain('<title>Access to this page has been denied</title>');
        expect(res.text).toContain('<div id="px-captcha"></div>');
      }
    } else {
      expect(res.headers['x-datadome']).toBe('protected');
      if (wantsJson) expect(JSON.parse(res.text).url).toMatch(/^https:\/\/geo\.captcha-delivery\.com\/captcha\/\?initialCid=sim&cid=/);
      else {
        expect(res.text).toContain('<script src="https://ct.captcha-delivery.com/c.js"></script>');
        expect(res.text).toContain('<iframe src="https://geo.captcha-delivery.com/captcha/?initialCid=sim"></iframe>');
      }
    }
  });
});

describe('ban expiry', () => {
  it('admits the address again when its ban ends', async () => {
    await putEvent(sim, 'pf_08', 'exp-1', { region: 'au', sections });
    expect(await control('POST', '/pf_08/bans', { address: '127.0.0.9', ms: 300 })).toMatchObject({ status: 201 });
    // pf_08 stands behind Akamai: its refusal is a 403 from AkamaiGHost.
    expect((await send('/pf_08/event/exp-1', '127.0.0.9')).headers.server).toBe('AkamaiGHost');
    await sleep(400);
    const page = await send('/pf_08/event/exp-1', '127.0.0.9');
    expect(page.status).toBe(200);
    expect(page.headers.server).toBeUndefined();
    expect((await control('GET', '/pf_08/limits')).body.addresses['127.0.0.9']).toBeUndefined();
  });

  it('refuses (and bans) again at once an address whose minute is still full when a short ban ends', async () => {
    await control('PUT', '/pf_09/limits', { requests_per_minute: 2, ban_ms: 300, ban_answer: 'forbidden' });
    expect((await send('/pf_09/akce/1', '127.0.0.10')).status).toBe(404);
    expect((await send('/pf_09/akce/1', '127.0.0.10')).status).toBe(404);
    expect((await send('/pf_09/akce/1', '127.0.0.10')).status).toBe(403);
    await sleep(400);
    expect((await send('/pf_09/akce/1', '127.0.0.10')).status).toBe(403);
    expect((await control('GET', '/pf_09/limits')).body.addresses['127.0.0.10']).toMatchObject({ requests_last_minute: 2, bans: 2, refused: 2 });
  });
});

describe('control API', () => {
  it('bans an address at once, for ban_ms by default, IPv6 too; lifts one platform’s bans or all', async () => {
    await control('PUT', '/pf_07/limits', { ban_ms: 120_000 });
    const before = Date.now();
    const banned = await control('POST', '/pf_07/bans', { address: '127.0.0.11' });
    expect(banned).toMatchObject({ status: 201, body: { address: '127.0.0.11', requests_last_minute: 0, bans: 1, refused: 0 } });
    expect(Date.parse(banned.body.banned_until)).toBeGreaterThanOrEqual(before + 120_000);
    expect(Date.parse(banned.body.banned_until)).toBeLessThanOrEqual(Date.now() + 120_000);
    expect((await control('POST', '/pf_07/bans', { address: '::ffff:127.0.0.12', ms: 5_000 })).body.address).toBe('127.0.0.12');
    expect((await control('POST', '/pf_07/bans', { address: '::1', ms: 5_000 })).status).toBe(201);
    expect((await control('POST', '/pf_04/bans', { address: '127.0.0.11', ms: 5_000 })).status).toBe(201);
    expect(Object.keys((await control('GET', '/pf_07/limits')).body.addresses).sort()).toEqual(['127.0.0.11', '127.0.0.12', '::1']);
    expect((await send('/pf_07/api/events/1/listings', '127.0.0.11')).headers.server).toBe('AkamaiGHost');

    expect((await control('DELETE', '/pf_07/bans')).status).toBe(204);
    expect((await send('/pf_07/api/events/1/listings', '127.0.0.11')).status).toBe(404);
    expect((await send('/pf_04/api/events/1/offers', '127.0.0.11')).headers['x-datadome']).toBe('protected');
    expect((await control('DELETE', '/bans')).status).toBe(204);
    expect((await send('/pf_04/api/events/1/offers', '127.0.0.11')).status).toBe(404);
    expect((await control('GET', '/pf_04/limits')).body).toMatchObject({ addresses: {}, totals: { bans_issued: 1, refused: 1 } });
  });

  it('sets every platform at once, and goes back to the defaults on reset', async () => {
    const all = await control('PUT', '/limits', { requests_per_minute: 30, ban_answer: 'too_many' });
    expect(all.status).toBe(200);
    expect(Object.keys(all.body.platforms).sort()).toEqual([...PLATFORM_KEYS].sort());
    for (const p of PLATFORM_KEYS) expect(all.body.platforms[p]).toMatchObject({ requests_per_minute: 30, ban_ms: 600_000, ban_answer: 'too_many' });
    expect((await control('PUT', '/pf_02/limits', { requests_per_minute: null })).body).toMatchObject({ requests_per_minute: null, ban_answer: 'too_many' });
    await control('POST', '/pf_02/bans', { address: '127.0.0.13' });
    expect((await control('POST', '/reset')).status).toBe(204);
    for (const p of ['pf_01', 'pf_02', 'pf_10'])
      expect((await control('GET', `/${p}/limits`)).body).toEqual({
        requests_per_minute: null,
        ban_ms: 600_000,
        ban_answer: 'challenge',
        addresses: {},
        totals: { bans_issued: 0, refused: 0, untracked: 0, tracked_addresses: 0 },
      });
    expect((await send('/pf_02/uk/event/1', '127.0.0.13')).status).toBe(404);
  });

  it.each([
    ['PUT', '/pf_03/limits', 'not json', /body must be JSON/],
    ['PUT', '/pf_03/limits', { requests_per_minute: 0 }, /requests_per_minute/],
    ['PUT', '/pf_03/limits', { requests_per_minute: 1_000_001 }, /requests_per_minute/],
    ['PUT', '/pf_03/limits', { requests_per_minute: 1.5 }, /requests_per_minute/],
    ['PUT', '/pf_03/limits', { ban_ms: -1 }, /ban_ms/],
    ['PUT', '/pf_03/limits', { ban_ms: 86_400_001 }, /ban_ms/],
    ['PUT', '/pf_03/limits', { ban_answer: 'teapot' }, /ban_answer/],
    ['PUT', '/pf_03/limits', { colour: 'red' }, /colour/],
    ['PUT', '/limits', { requests_per_minute: '10' }, /requests_per_minute/],
    ['POST', '/pf_03/bans', {}, /address/],
    ['POST', '/pf_03/bans', { address: 'localhost' }, /address/],
    ['POST', '/pf_03/bans', { address: '127.0.0.256' }, /address/],
    ['POST', '/pf_03/bans', { address: '127.0.0.2', ms: 0 }, /ms/],
    ['POST', '/pf_03/bans', { address: '127.0.0.2', ms: 86_400_001 }, /ms/],
    ['POST', '/pf_03/bans', { address: '127.0.0.2', until: 5 }, /until/],
  ])('refuses %s %s %j with a 400', async (method, path, body, message) => {
    const res = await control(method, path, body);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(message);
  });

  it('answers 404 for an unknown platform', async () => {
    expect((await control('GET', '/pf_99/limits')).status).toBe(404);
    expect((await control('POST', '/pf_99/bans', { address: '127.0.0.2' })).status).toBe(404);
    expect((await control('DELETE', '/marketplace_a/bans')).status).toBe(404);
  });
});

describe('the request log', () => {
  it('records each event request’s source address, and the refused ones with refused: true', async () => {
    const since = Date.now();
    await control('PUT', '/pf_06/limits', { requests_per_minute: 1, ban_answer: 'forbidden' });
    await control('PUT', '/pf_10/limits', { requests_per_minute: 1 });
    await control('PUT', '/pf_01/limits', { requests_per_minute: 1 });
    const listings = '/pf_06/v1/events/rl-1/listings?region=us&page=1';
    await send(listings, '127.0.0.14');
    await send(listings, '127.0.0.14');
    await send(listings, '127.0.0.15');
    const graphql = JSON.stringify({ query: 'query { event(id: $id) { id } }', variables: { id: 'rl-10' } });
    await send('/pf_10/graphql', '127.0.0.14', { method: 'POST', body: graphql });
    await send('/pf_10/graphql', '127.0.0.14', { method: 'POST', body: graphql });
    // pf_01's front page is no event's: limited, not logged.
    await send('/pf_01/', '127.0.0.14');
    expect((await send('/pf_01/', '127.0.0.14')).headers['cf-mitigated']).toBe('challenge');

    const read = async (query: string) => ((await control('GET', `/requests?since=${since}${query}`)).body as { requests: SimRequest[] }).requests;
    const strip = (rs: SimRequest[]) => rs.map(({ platform, key, address, refused }) => ({ platform, key, address, refused }));
    expect(strip(await read('&address=127.0.0.14'))).toEqual([
      { platform: 'pf_06', key: 'rl-1', address: '127.0.0.14', refused: false },
      { platform: 'pf_06', key: 'rl-1', address: '127.0.0.14', refused: true },
      { platform: 'pf_10', key: 'rl-10', address: '127.0.0.14', refused: false },
      // pf_10's key is in the body, which is not read for a refused request.
      { platform: 'pf_10', key: '', address: '127.0.0.14', refused: true },
    ]);
    expect(strip(await read('&platform=pf_06&address=127.0.0.15'))).toEqual([{ platform: 'pf_06', key: 'rl-1', address: '127.0.0.15', refused: false }]);
    expect(sim.requests.since(since, 'pf_06').map((r) => r.address)).toEqual(['127.0.0.14', '127.0.0.14', '127.0.0.15']);
    expect(await read('&address=127.0.0.99')).toEqual([]);
  });
});
