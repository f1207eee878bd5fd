// Property tests of the webhook resource against the real gateway and PostgreSQL (issue 15):
// whatever body, URL or path a client sends, the answer is never a 5xx. It is a 2xx with a
// webhook that reflects what was sent, or a 4xx in the watchlist envelope, and a refused
// request stores nothing. The gateway runs the strict URL rule with a table resolver: no DNS
// query is sent and creating a webhook connects nowhere.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressProblem } from '../../../src/webhooks/address-rules.ts';
import { call, newAccount, startTestGateway, type Reply, type TestAccount, type TestGateway } from '../../support/harness.ts';
import { createWebhook, expectWebhook, STRICT_ENV, tableLookup, webhookRow } from './helpers.ts';

const RUNS = 120;
const TIMEOUT = 90_000;

let gw: TestGateway;
let acct: TestAccount;

beforeAll(async () => {
  gw = await startTestGateway({ env: STRICT_ENV, services: { webhookLookup: tableLookup({ 'inside.example.com': ['10.1.2.3'] }) } });
  acct = await newAccount(gw.db);
});

afterAll(async () => {
  await gw?.close();
});

const unit = fc.oneof(
  { weight: 10, arbitrary: fc.constantFrom(...'abcXYZ019-_./:?=&%@[]'.split('')) },
  { weight: 1, arbitrary: fc.constantFrom('\u0000', '\ud800', '😀', 'é', ' ', '#', '\\', '"') },
);
const text = (maxLength = 20) => fc.string({ unit, maxLength });
const anyJson = fc.jsonValue({ maxDepth: 3 });

const u32 = fc.integer({ min: 0, max: 2 ** 32 - 1 });
const ipv4Host = u32.chain((n) =>
  fc.constantFrom(
    [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.'),
    String(n),
    `0x${n.toString(16)}`,
    `0${n.toString(8)}`,
    `[::ffff:${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}]`,
  ),
);
const ipv6Host = fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 }).map((g) => `[${g.map((x) => x.toString(16)).join(':')}]`);
const host = fc.oneof(
  fc.constantFrom('hooks.public.test', 'a.b.public.test', 'inside.example.com', 'localhost', 'unknown.example.com', 'discord.com', 'intranet'),
  ipv4Host,
  ipv6Host,
  text(12),
);
const url = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(fc.constantFrom('https://', 'http://', 'ftp://', '', 'https://user:pw@'), host, fc.option(fc.integer({ min: 0, max: 70_000 })), text(30)).map(
    ([scheme, h, port, path]) => `${scheme}${h}${port === null ? '' : `:${port}`}/${path}`,
  ) },
  { weight: 1, arbitrary: fc.constantFrom('https://discord.com/api/webhooks/123/tok-EN_9', 'https://hooks.public.test/' + 'x'.repeat(2100)) },
  { weight: 1, arbitrary: anyJson },
);
const kind = fc.oneof({ weight: 5, arbitrary: fc.constantFrom('standard', 'discord') }, { weight: 1, arbitrary: anyJson });
const extras = fc.oneof(
  { weight: 6, arbitrary: fc.constant({}) },
  { weight: 1, arbitrary: fc.dictionary(fc.constantFrom('id', 'secret', 'disabled_reason', 'created_at', 'kind', '__proto__', 'x'), anyJson, { maxKeys: 2 }) },
);
const fields = fc.record(
  {
    url,
    kind,
    description: fc.oneof(text(40), fc.constant(null), anyJson, fc.constant('d'.repeat(501))),
    active: fc.oneof(fc.boolean(), anyJson),
  },
  { requiredKeys: [] },
);
const body = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(fields, extras).map(([f, x]) => ({ ...f, ...x })) },
  { weight: 1, arbitrary: anyJson },
);

/** Never a 5xx; a refusal is exactly `{error: string}` (or `{detail}` for a body that is not JSON). */
function expectNoServerError(r: Reply, allowed: number[]): void {
  expect(r.status, r.text).toBeLessThan(500);
  expect(allowed, `${r.status} ${r.text}`).toContain(r.status);
  if (r.status >= 400) {
    const keys = Object.keys(r.body ?? {});
    expect(keys.length === 1 && (keys[0] === 'error' || keys[0] === 'detail'), r.text).toBe(true);
    expect(typeof r.body[keys[0]!]).toBe('string');
  }
}

async function count(): Promise<number> {
  return Number((await gw.db('webhooks').where({ account_id: acct.accountId }).count('* as n').first())?.n);
}

describe('POST /webhooks with any body', () => {
  it('answers 201 with what was sent, or 400 in the envelope and stores nothing', async () => {
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const before = await count();
        const r = await call(gw.url, 'POST', '/webhooks', { key: acct.key, body: b });
        expectNoServerError(r, [201, 400]);
        if (r.status === 201) {
          const sent = b as Record<string, unknown>;
          expectWebhook(r.body, true);
          expect(r.body.url).toBe(sent.url);
          expect(r.body.kind).toBe(sent.kind);
          // Whatever was accepted has a host whose every address is public.
          const h = new URL(r.body.url as string).hostname;
          if (/^[\d.]+$/.test(h) || h.startsWith('[')) expect(addressProblem(h)).toBeNull();
          else expect(h.endsWith('.public.test') || h === 'discord.com').toBe(true);
          await call(gw.url, 'DELETE', `/webhooks/${r.body.id}`, { key: acct.key });
        } else {
          expect(await count()).toBe(before);
        }
      }),
      { numRuns: RUNS * 2 },
    );
  }, TIMEOUT);

  it('never fails on a raw body of any text', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.string({ maxLength: 60 }), fc.constantFrom('', 'null', '[]', '{', '{"url":', '"x"', '1e999', '{"__proto__":{}}')), async (raw) => {
        const r = await call(gw.url, 'POST', '/webhooks', { key: acct.key, raw, headers: { 'content-type': 'application/json' } });
        expectNoServerError(r, [201, 400]);
        if (r.status === 201) await call(gw.url, 'DELETE', `/webhooks/${r.body.id}`, { key: acct.key });
      }),
      { numRuns: RUNS },
    );
  }, TIMEOUT);
});

describe('PATCH /webhooks/{id} with any body', () => {
  it('answers 200 or 400 in the envelope; a refusal leaves the row as it was', async () => {
    const hook = await createWebhook(gw.url, acct.key, { url: 'https://hooks.public.test/start' });
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const before = await webhookRow(gw.db, hook.id as number);
        const r = await call(gw.url, 'PATCH', `/webhooks/${hook.id}`, { key: acct.key, body: b });
        expectNoServerError(r, [200, 400]);
        if (r.status === 400) expect(await webhookRow(gw.db, hook.id as number)).toEqual(before);
        else expectWebhook(r.body);
      }),
      { numRuns: RUNS },
    );
  }, TIMEOUT);
});

describe('any path under /webhooks', () => {
  it('is served or refused with a 4xx, never a 5xx', async () => {
    const segment = fc.oneof(fc.constantFrom('1', '0', '-1', '99999999999999999999', 'rotate-secret', '%00', '..', 'abc'), fc.string({ maxLength: 8 }).map(encodeURIComponent));
    await fc.assert(
      fc.asyncProperty(fc.array(segment, { maxLength: 3 }), fc.constantFrom('GET', 'POST', 'PATCH', 'DELETE'), async (segs, m) => {
        const r = await call(gw.url, m, `/webhooks/${segs.join('/')}`, { key: acct.key, body: m === 'GET' || m === 'DELETE' ? undefined : {} });
        expect(r.status, `${m} ${segs.join('/')} ${r.text}`).toBeLessThan(500);
        if (r.status === 201) await call(gw.url, 'DELETE', `/webhooks/${r.body.id}`, { key: acct.key });
      }),
      { numRuns: RUNS },
    );
  }, TIMEOUT);
});
