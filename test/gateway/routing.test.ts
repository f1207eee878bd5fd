// Routing (spec 7.1 not_found): unknown routes, wrong methods, malformed paths, and catalog
// operations of an API that is not mounted all answer 404 not_found in the gateway envelope,
// never a fake answer, and never cost anything.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APIS } from '../../src/apis/index.ts';
import { OPERATIONS } from '../../src/gateway/catalog.ts';
import { GatewayError } from '../../src/gateway/errors.ts';
import { newAccount, startTestGateway, type TestAccount, type TestGateway } from '../support/harness.ts';
import { clientFor, GATEWAY_ENV, gatewayCode, ledgerRows, totalUsed, type Client } from '../support/gateway-helpers.ts';

let gw: TestGateway;
let api: Client;
let acct: TestAccount;

beforeAll(async () => {
  gw = await startTestGateway({ env: GATEWAY_ENV });
  api = clientFor(gw.url);
  acct = await newAccount(gw.db);
});
afterAll(async () => {
  await gw.close();
});

const mounted = new Set(APIS.flatMap((a) => a.routes.map((r) => r.operationId)));

/** A concrete request path for a catalog path, with a well-formed value in each `:param`. */
function concrete(path: string): string {
  return path.replace(/:([A-Za-z_]+)/g, (_m, name: string) => (name === 'id' ? '1' : 'E-123'));
}

describe('unknown routes', () => {
  it.each(['/', '/nope', '/svc', '/svc/data', '/svc/data/unknown', '/events', '/events/nope', '/usage/extra', '/watchlist/1/extra', '/openapi.yaml'])(
    '%s answers 404 not_found, with or without a key',
    async (path) => {
      for (const key of [acct.key, undefined]) {
        const r = await api('GET', path, { key });
        expect(r.status).toBe(404);
        expect(gatewayCode(r)).toBe('not_found');
        expect(r.headers.get('x-request-id')).toBeTruthy();
      }
    },
  );
});

describe('wrong HTTP method on a known path', () => {
  it.each([
    ['PUT', '/watchlist'],
    ['DELETE', '/watchlist'],
    ['PATCH', '/watchlist'],
    ['POST', '/watchlist/1'],
    ['PUT', '/watchlist/1'],
    ['POST', '/usage'],
    ['DELETE', '/usage'],
    ['POST', '/svc/data/ping'],
    ['POST', '/events/ping'],
    ['POST', '/openapi.json'],
    ['OPTIONS', '/usage'],
  ])('%s %s answers 404 not_found', async (method, path) => {
    const r = await api(method, path, { key: acct.key, body: method === 'GET' || method === 'OPTIONS' ? undefined : {} });
    expect(r.status).toBe(404);
    expect(gatewayCode(r)).toBe('not_found');
  });

  it('the same paths with the right method are served (so the 404 above is about the method)', async () => {
    expect((await api('GET', '/watchlist', { key: acct.key })).status).toBe(200);
    expect((await api('GET', '/usage', { key: acct.key })).status).toBe(200);
    expect((await api('GET', '/svc/data/ping', { key: acct.key })).status).toBe(200);
  });
});

// No endpoint lists HEAD (spec 4, 7.1): it is a wrong method like any other, never the GET.
describe('HEAD on any route', () => {
  const getOps = APIS.flatMap((a) => a.routes.map((r) => OPERATIONS[r.operationId as keyof typeof OPERATIONS])).filter((op) => op.method === 'GET');
  const getPaths = [...new Set([...getOps.map((op) => concrete(op.path)), '/openapi.json'])];
  /** A HEAD answer has no body; its length is that of the gateway's not_found envelope. */
  const notFoundLength = String(Buffer.byteLength(JSON.stringify(new GatewayError('not_found').body())));

  it.each(getPaths)('HEAD %s answers 404 not_found, with or without a key, as PUT does', async (path) => {
    for (const key of [acct.key, undefined]) {
      const r = await api('HEAD', path, { key });
      expect(r.status, `HEAD ${path} key=${key !== undefined}`).toBe(404);
      expect(r.text).toBe('');
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      expect(r.headers.get('content-length')).toBe(notFoundLength);
      expect(r.headers.get('x-request-id')).toBeTruthy();
      const put = await api('PUT', path, { key, body: {} });
      expect(gatewayCode(put)).toBe('not_found');
      expect(r.headers.get('content-length')).toBe(put.headers.get('content-length'));
    }
  });

  it('is not counted in the key’s window (no RateLimit headers), like any 404', async () => {
    const a = await newAccount(gw.db, { rateLimit: 2 });
    for (let i = 0; i < 5; i++) {
      const r = await api('HEAD', '/usage', { key: a.key });
      expect(r.status).toBe(404);
      expect(r.headers.get('ratelimit')).toBeNull();
    }
    expect((await api('GET', '/usage', { key: a.key })).status).toBe(200);
  });
});

describe('malformed paths', () => {
  it.each(['abc', '0', '-1', '1.5', '01', '1e3', '%20', '12345678901234567'])('/watchlist/%s answers the gateway 404, not the watchlist envelope', async (id) => {
    for (const method of ['GET', 'PATCH', 'DELETE']) {
      const r = await api(method, `/watchlist/${id}`, { key: acct.key, body: method === 'PATCH' ? { notes: 'x' } : undefined });
      expect(r.status, `${method} /watchlist/${id}`).toBe(404);
      expect(gatewayCode(r), `${method} /watchlist/${id}`).toBe('not_found');
    }
  });

  it('a well-formed id that is not the caller’s is the watchlist API’s own 404', async () => {
    const r = await api('GET', '/watchlist/999999999', { key: acct.key });
    expect(r.status).toBe(404);
    expect(gatewayCode(r)).toBeUndefined();
  });
});

describe('catalog operations', () => {
  it('every operation of spec section 4 is served by a real API', () => {
    expect(Object.keys(OPERATIONS).filter((id) => !mounted.has(id))).toEqual([]);
  });
});

// With an API left out (as a deployment that runs without it would), its operations are not
// faked: the gateway answers 404 not_found and charges nothing.
describe('operations of an API that is not mounted', () => {
  let partial: TestGateway;
  let partialApi: Client;
  beforeAll(async () => {
    partial = await startTestGateway({ env: GATEWAY_ENV, apis: APIS.filter((a) => a.api !== 'market_data') });
    partialApi = clientFor(partial.url);
  });
  afterAll(async () => {
    await partial.close();
  });
  const notMounted = Object.entries(OPERATIONS).filter(([, op]) => op.api === 'market_data');

  it.each(notMounted.map(([id, op]) => [id, op.method, concrete(op.path)] as const))(
    '%s (%s %s) answers 404 not_found and charges nothing',
    async (_id, method, path) => {
      const a = await newAccount(partial.db);
      const query = path === '/svc/data/artist' ? '?url=https%3A%2F%2Fexample.com%2Fa' : '';
      const r = await partialApi(method, path + query, { key: a.key, body: method === 'POST' ? { query: 'x', platform: 'pf_01' } : undefined });
      expect(r.status).toBe(404);
      expect(gatewayCode(r)).toBe('not_found');
      expect(await totalUsed(partial.db, a.accountId)).toBe(0);
      expect(await ledgerRows(partial.db, a.accountId)).toEqual([]);
    },
  );
});

describe('mounted operations', () => {
  const routes = APIS.flatMap((a) => a.routes.map((r) => [r.operationId, OPERATIONS[r.operationId as keyof typeof OPERATIONS]] as const));

  it.each(routes.map(([id, op]) => [id, op.method, concrete(op.path)] as const))(
    '%s (%s %s) is routed to its API (never the gateway 404)',
    async (_id, method, path) => {
      const r = await api(method, path, { key: acct.key, body: method === 'POST' || method === 'PATCH' ? {} : undefined });
      // A ping reports its dependency: this gateway has no scrape worker, so /events/ping answers
      // 503 service_unavailable. That is its API answering; any other 5xx is not.
      if (r.status === 503) expect(gatewayCode(r)).toBe('service_unavailable');
      else expect(r.status).toBeLessThan(500);
      if (r.status === 404) expect(gatewayCode(r)).toBeUndefined();
    },
  );
});
