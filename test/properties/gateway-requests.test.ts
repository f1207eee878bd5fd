// Property tests of the gateway over real HTTP and the real database: whatever a client sends
// as its key, path, query or body, the gateway answers in its contract and never with a 5xx;
// the quantity-billed sales_limit is either refused with 400 invalid_parameter and costs
// nothing, or accepted and costs exactly ceil(n / 20); a method no operation of a path lists
// (HEAD included) is 404 not_found and costs nothing.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAccount, startTestGateway, type TestAccount, type TestGateway } from '../support/harness.ts';
import { OPERATIONS, type Operation } from '../../src/gateway/catalog.ts';
import { clientFor, createFixtureApi, withFixture, GATEWAY_ENV, gatewayCode, usedCredits, type Client } from '../support/gateway-helpers.ts';

let gw: TestGateway;
let api: Client;
let acct: TestAccount;

beforeAll(async () => {
  // The fixture API stands in for the sales-list operation (a 200 with no rows for any event),
  // so the sales_limit property below covers the gateway's billing of that operation alone:
  // refused before billing, or charged exactly ceil(n / 20) credits. What the real sales
  // endpoint answers is test/apis/market-data/sales.test.ts's subject.
  gw = await startTestGateway({ env: GATEWAY_ENV, apis: withFixture(createFixtureApi()) });
  api = clientFor(gw.url);
  acct = await newAccount(gw.db, { plan: 'pro', rateLimit: 1_000_000 });
});
afterAll(async () => {
  await gw.close();
});

const char = (min: number, max: number) => fc.integer({ min, max }).map((c) => String.fromCharCode(c));
/** Characters a header value may carry (visible ASCII, space, tab, Latin-1 obs-text). */
const headerValue = fc.oneof(
  fc.string({ unit: char(0x20, 0x7e), maxLength: 80 }),
  fc.string({ unit: fc.oneof(char(0x20, 0x7e), char(0xa0, 0xff), fc.constant('\t')), maxLength: 60 }),
  fc.stringMatching(/^tmk_[0-9A-Za-z]{40}$/), // well-formed, never issued
  fc.stringMatching(/^tmk_[0-9A-Za-z]{0,60}$/),
  fc.string({ unit: char(0x21, 0x7e), minLength: 500, maxLength: 4000 }),
);

const ROUTED: [string, string][] = [
  ['GET', '/svc/data/ping'],
  ['GET', '/events/platforms'],
  ['GET', '/watchlist'],
  ['GET', '/watchlist/health'],
  ['GET', '/watchlist/1'],
  ['GET', '/usage'],
  ['GET', '/svc/data/sales/marketplace_a/E-1'],
];

function expectGatewayEnvelope(r: Awaited<ReturnType<Client>>): string {
  const code = gatewayCode(r);
  expect(code, `${r.status} ${r.text}`).toBeDefined();
  return code!;
}

describe('random apikey header values', () => {
  it('always answer 401 (or 429) in the gateway envelope, never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(headerValue, fc.constantFrom(...ROUTED), async (key, [method, path]) => {
        if (key === acct.key) return;
        const r = await api(method, path, { key });
        expect([401, 429], `${JSON.stringify(key)} -> ${r.status} ${r.text}`).toContain(r.status);
        const code = expectGatewayEnvelope(r);
        const sentNothing = key.replace(/^[\t ]+|[\t ]+$/g, '') === '';
        if (r.status === 401) expect(code).toBe(sentNothing ? 'unauthenticated' : 'invalid_credentials');
        else expect(code).toBe('rate_limited');
        expect(r.headers.get('x-request-id')).toBeTruthy();
      }),
      { numRuns: 150 },
    );
  });

  it('single-character edits of a real key are always rejected', async () => {
    const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: acct.key.length - 1 }), fc.constantFrom(...alphabet.split('')), async (i, c) => {
        const key = acct.key.slice(0, i) + c + acct.key.slice(i + 1);
        const r = await api('GET', '/usage', { key });
        if (key === acct.key) expect(r.status).toBe(200);
        else {
          expect(r.status).toBe(401);
          expect(expectGatewayEnvelope(r)).toBe('invalid_credentials');
        }
      }),
      { numRuns: 60 },
    );
  });
});

const segment = fc.oneof(
  fc.string({ maxLength: 20 }).map(encodeURIComponent),
  fc.string({ unit: 'grapheme', maxLength: 12 }).map(encodeURIComponent),
  fc.stringMatching(/^[A-Za-z0-9%._~!$&'()*+,;=:@-]{0,20}$/),
  fc.constantFrom('%', '%zz', '%E0%A4%A', '%00', '%2F', '%2e%2e', 'E-1', 'E-', '1', '0', '-1', '99999999999999999999', 'health', 'ping', ''),
);
const prefix = fc.constantFrom(
  '/',
  '/svc/',
  '/svc/data/',
  '/svc/data/sales/marketplace_a/',
  '/svc/data/marketplace_a/',
  '/events/',
  '/watchlist/',
  '/usage/',
  '/openapi.json/',
);
const method = fc.constantFrom('GET', 'POST', 'PATCH', 'DELETE', 'PUT', 'HEAD', 'OPTIONS');
const body = fc.option(
  fc.oneof(
    fc.json({ maxDepth: 2 }),
    fc.string({ maxLength: 50 }),
    fc.constant('{"website":"pf_01","event":"e-1","region":"us"}'),
    fc.constant('{"task_active":false}'),
  ),
  { nil: undefined },
);

const READINESS = new Set(['GET /events/ping', 'GET /svc/data/ping', 'GET /watchlist/health']);

describe('random paths under the routed prefixes', () => {
  it('never answer a 5xx, with or without a key; the gateway’s own answers are in its envelope', async () => {
    await fc.assert(
      fc.asyncProperty(method, prefix, fc.array(segment, { minLength: 1, maxLength: 3 }), fc.boolean(), body, async (m, p, segs, withKey, raw) => {
        const path = p + segs.join('/');
        const sendsBody = raw !== undefined && !['GET', 'HEAD'].includes(m);
        const r = await api(m, path, {
          key: withKey ? acct.key : undefined,
          raw: sendsBody ? raw : undefined,
          headers: sendsBody ? { 'content-type': 'application/json' } : {},
        });
        // The readiness endpoints report their backend (issue 14): this gateway has no scrape
        // backend, so GET /events/ping rightly answers 503 service_unavailable; nothing else may.
        const readiness = READINESS.has(`${m} ${path}`) && r.status === 503 && r.body?.error?.code === 'service_unavailable';
        if (!readiness) expect(r.status, `${m} ${path} -> ${r.status} ${r.text}`).toBeLessThan(500);
        if (m === 'HEAD') expect(r.status, `HEAD ${path}`).toBe(404); // no endpoint lists HEAD (spec 7.1)
        if (!withKey && r.status !== 200 && m !== 'HEAD') {
          expect([401, 404], `${m} ${path}`).toContain(r.status);
          expectGatewayEnvelope(r);
        }
      }),
      { numRuns: 200 },
    );
  });
});

/** Each catalog path (as a concrete request path) with the methods its operations list. */
const SERVED = new Map<string, Set<string>>();
for (const op of Object.values(OPERATIONS) as Operation[]) {
  const path = op.path.replace(/:([A-Za-z_]+)/g, (_m, name: string) => (name === 'id' ? '1' : 'E-1'));
  SERVED.set(path, (SERVED.get(path) ?? new Set()).add(op.method));
}
const wrongMethod = fc
  .tuple(fc.constantFrom(...SERVED.keys()), method)
  .filter(([path, m]) => !SERVED.get(path)!.has(m));

describe('a method no operation of the path lists', () => {
  it('answers 404 not_found (spec 7.1) and is never billed, with or without a key', async () => {
    await fc.assert(
      fc.asyncProperty(wrongMethod, fc.boolean(), async ([path, m], withKey) => {
        const before = await usedCredits(gw.db, acct.accountId);
        const sendsBody = !['GET', 'HEAD'].includes(m);
        const r = await api(m, path, { key: withKey ? acct.key : undefined, body: sendsBody ? {} : undefined });
        expect(r.status, `${m} ${path} -> ${r.status} ${r.text}`).toBe(404);
        if (m !== 'HEAD') expect(gatewayCode(r)).toBe('not_found');
        expect(r.headers.get('ratelimit')).toBeNull();
        expect(await usedCredits(gw.db, acct.accountId)).toBe(before);
      }),
      { numRuns: 80 },
    );
  });
});

const queryPart = fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('sales_limit', 'limit', 'outcome', 'apikey', '__proto__', 'constructor', ''));
const query = fc
  .array(fc.tuple(queryPart, fc.oneof(fc.string({ maxLength: 12 }), fc.integer().map(String))), { maxLength: 6 })
  .chain((pairs) =>
    fc.constantFrom(
      pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&'),
      pairs.map(([k, v]) => `${k}=${v}`.replace(/[#\s]/g, '')).join('&'), // unencoded: stray %, +, =, &
    ),
  );

describe('random query strings', () => {
  it('never answer a 5xx on any routed path', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ROUTED), query, async ([m, path], q) => {
        const r = await api(m, `${path}?${q}`, { key: acct.key });
        expect(r.status, `${m} ${path}?${q} -> ${r.status} ${r.text}`).toBeLessThan(500);
        if (r.status === 400 && path.startsWith('/svc/data/sales/')) expect(gatewayCode(r)).toBe('invalid_parameter');
      }),
      { numRuns: 150 },
    );
  });
});

/** The contract: an integer 1..200 written in decimal digits. */
function acceptedSalesLimit(s: string): number | null {
  if (!/^[0-9]+$/.test(s)) return null;
  const n = Number(s);
  return n >= 1 && n <= 200 ? n : null;
}

const salesLimit = fc.oneof(
  fc.integer({ min: -20, max: 260 }).map(String),
  fc.integer({ min: 1, max: 200 }).map((n) => '0'.repeat(3) + n), // leading zeros
  fc.stringMatching(/^[0-9]{0,6}$/),
  fc.stringMatching(/^[0-9.eE+-]{1,6}$/),
  fc.string({ maxLength: 8 }),
  fc.string({ unit: 'grapheme', maxLength: 4 }),
  fc.constantFrom('1.0', '20.', '.5', '1e1', '0x14', ' 20', '20 ', '٢٠', 'Infinity', 'NaN', '200', '201', '1'),
);

describe('random sales_limit values on the sales route', () => {
  it('answer 400 invalid_parameter and cost nothing, or 2xx and cost exactly ceil(n / 20)', async () => {
    await fc.assert(
      fc.asyncProperty(salesLimit, async (s) => {
        const before = await usedCredits(gw.db, acct.accountId);
        const r = await api('GET', `/svc/data/sales/marketplace_a/E-7?sales_limit=${encodeURIComponent(s)}`, { key: acct.key });
        const used = (await usedCredits(gw.db, acct.accountId)) - before;
        const n = acceptedSalesLimit(s);
        if (n === null) {
          expect(r.status, `${JSON.stringify(s)} -> ${r.status}`).toBe(400);
          expect(gatewayCode(r)).toBe('invalid_parameter');
          expect(used).toBe(0);
        } else {
          expect(r.status, `${JSON.stringify(s)} -> ${r.status} ${r.text}`).toBe(200);
          expect(used).toBe(Math.ceil(n / 20));
          const row = await gw.db('credit_ledger').where({ request_id: r.headers.get('x-request-id') }).first('credits', 'state');
          expect(row).toEqual({ credits: Math.ceil(n / 20), state: 'charged' });
        }
      }),
      { numRuns: 200 },
    );
  });
});
