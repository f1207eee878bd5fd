// Request ids and logs: every response carries a fresh X-Request-Id (a client's own id never
// replaces it), every access-log line carries that id, and no log line ever contains an API
// key (brief "Security: no key in any log").
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeKey } from '../../src/accounts/operations.ts';
import { createLogger } from '../../src/logger.ts';
import { newAccount, startTestGateway, type TestGateway } from '../support/harness.ts';
import { clientFor, createFixtureApi, withFixture, GATEWAY_ENV, unreachableDb, unreachablePool, type Client } from '../support/gateway-helpers.ts';
import type { Db } from '../../db/connection.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Collects every line a pino logger writes. */
class MemoryLog extends Writable {
  readonly chunks: string[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.chunks.push(chunk.toString('utf8'));
    done();
  }
  get text(): string {
    return this.chunks.join('');
  }
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  lines(): any[] {
    return this.text
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l));
  }
}

describe('X-Request-Id', () => {
  let gw: TestGateway;
  let api: Client;

  beforeAll(async () => {
    gw = await startTestGateway({ env: GATEWAY_ENV, apis: withFixture(createFixtureApi()) });
    api = clientFor(gw.url);
  });
  afterAll(async () => {
    await gw.close();
  });

  it('is on every response, whatever its status, and unique per request', async () => {
    const a = await newAccount(gw.db);
    const limited = await newAccount(gw.db, { rateLimit: 1, apis: ['account'] });
    const replies = [
      await api('GET', '/svc/data/ping', { key: a.key }), // 200
      await api('GET', '/nope', { key: a.key }), // 404 unknown
      await api('PUT', '/watchlist', { key: a.key }), // 404 method
      await api('GET', '/watchlist/abc', { key: a.key }), // 404 malformed
      await api('GET', '/usage'), // 401 unauthenticated
      await api('GET', '/usage', { key: 'garbage' }), // 401 invalid_credentials
      await api('GET', '/watchlist', { key: limited.key }), // 403
      await api('GET', '/usage', { key: limited.key }), // 200
      await api('GET', '/usage', { key: limited.key }), // 429
      await api('GET', '/svc/data/sales/marketplace_a/E-1?sales_limit=0', { key: a.key }), // 400
      await api('POST', '/svc/data/search?outcome=throw', { key: a.key }), // 500 from the API
      await api('POST', '/watchlist', { key: a.key, raw: '{not json', headers: { 'content-type': 'application/json' } }), // 400 from the API
      await api('GET', '/openapi.json'),
    ];
    expect(replies.map((r) => r.status)).toEqual([200, 404, 404, 404, 401, 401, 403, 200, 429, 400, 500, 400, 200]);
    const ids = replies.map((r) => r.headers.get('x-request-id'));
    for (const id of ids) expect(id).toMatch(UUID);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('stays unique across 100 concurrent requests', async () => {
    const a = await newAccount(gw.db);
    const replies = await Promise.all(Array.from({ length: 100 }, (_, i) => api('GET', i % 2 ? '/watchlist' : '/nope', { key: a.key })));
    expect(new Set(replies.map((r) => r.headers.get('x-request-id'))).size).toBe(100);
  });

  it('a client-sent X-Request-Id does not replace it', async () => {
    const a = await newAccount(gw.db);
    for (const sent of ['client-chosen-id', '00000000-0000-4000-8000-000000000000']) {
      const r = await api('GET', '/svc/data/ping', { key: a.key, headers: { 'x-request-id': sent } });
      const id = r.headers.get('x-request-id');
      expect(id).toMatch(UUID);
      expect(id).not.toBe(sent);
      // And the ledger is keyed by the gateway's id, so a client cannot collide with another charge.
      expect(await gw.db('credit_ledger').where({ request_id: id }).first('account_id')).toEqual({ account_id: a.accountId });
    }
    // Sending the same id twice still creates two charges.
    const b = await newAccount(gw.db);
    for (let i = 0; i < 2; i++) await api('GET', '/svc/data/ping', { key: b.key, headers: { 'x-request-id': 'same' } });
    expect(await gw.db('credit_ledger').where({ account_id: b.accountId }).count({ n: '*' }).first()).toEqual({ n: 2 });
  });
});

describe('logs', () => {
  let gw: TestGateway;
  let deadGw: TestGateway;
  let dead: Db;
  const sink = new MemoryLog();
  let api: Client;

  beforeAll(async () => {
    const log = createLogger('info', sink);
    gw = await startTestGateway({ env: GATEWAY_ENV, apis: withFixture(createFixtureApi()), services: { log } });
    dead = unreachableDb();
    deadGw = await startTestGateway({ env: GATEWAY_ENV, db: dead, pool: unreachablePool(), services: { log } });
    api = clientFor(gw.url);
  });
  afterAll(async () => {
    await gw.close();
    await deadGw.close();
    await dead.destroy();
  });

  it('every request line carries the response’s request id, and no line contains an API key', async () => {
    const a = await newAccount(gw.db);
    const revoked = await newAccount(gw.db);
    await revokeKey(gw.db, revoked.keyId);
    const keys = [a.key, revoked.key];
    const sent: { id: string; status: number; key?: string }[] = [];
    const record = async (p: Promise<Awaited<ReturnType<Client>>>, key?: string) => {
      const r = await p;
      sent.push({ id: r.headers.get('x-request-id')!, status: r.status, key });
    };
    await record(api('GET', '/svc/data/ping', { key: a.key }), a.key);
    await record(api('GET', '/watchlist', { key: a.key }), a.key);
    await record(api('POST', '/watchlist', { key: a.key, body: { website: 'pf_01', event: 'G5vYZ9fT1aB2cD3e', region: 'us', notes: 'hello' } }), a.key);
    await record(api('POST', '/svc/data/search?outcome=throw', { key: a.key }), a.key); // logged as an error
    await record(api('POST', '/svc/data/search?outcome=edge_timeout', { key: a.key }), a.key);
    await record(api('GET', '/nope', { key: a.key }), a.key);
    await record(api('GET', '/usage', { key: revoked.key }), revoked.key);
    await record(api('GET', '/usage', { key: a.key, headers: { 'x-request-id': 'client-id-1' } }), a.key);
    await record(clientFor(deadGw.url)('GET', '/usage', { key: a.key }), a.key); // key store unreachable: logged as an error
    expect(sent.map((s) => s.status)).toEqual([200, 200, 201, 500, 504, 404, 401, 200, 502]);

    const lines = sink.lines();
    const requestLines = lines.filter((l) => l.msg === 'request');
    expect(requestLines.length).toBe(sent.length);
    for (const s of sent) {
      const line = requestLines.find((l) => l.request_id === s.id);
      expect(line, `request line for ${s.id}`).toBeDefined();
      expect(line.status).toBe(s.status);
    }
    // Error lines carry the id of the request they belong to.
    const errors = lines.filter((l) => l.level >= 50);
    expect(errors.length).toBeGreaterThanOrEqual(2);
    for (const e of errors) expect(sent.map((s) => s.id)).toContain(e.request_id);
    // The client's own id is kept beside ours, not instead of it.
    expect(requestLines.some((l) => l.client_request_id === 'client-id-1' && l.request_id !== 'client-id-1')).toBe(true);
    // The key never appears, nor any recognisable piece of it.
    for (const key of keys) {
      expect(sink.text).not.toContain(key);
      expect(sink.text).not.toContain(key.slice(4));
      expect(sink.text).not.toContain(key.slice(10, 30));
    }
  });

  it('a key sent in the wrong place (another header, the client request id, the path) is not logged either', async () => {
    const a = await newAccount(gw.db);
    const before = sink.text.length;
    await api('GET', '/usage', { key: a.key, headers: { authorization: `Bearer ${a.key}` } });
    const misplaced = await api('GET', '/usage', { key: a.key, headers: { 'x-request-id': a.key } });
    await api('GET', '/usage', { key: a.key, headers: { 'x-request-id': `req-${a.key}` } });
    await api('GET', `/watchlist/${a.key}`, { key: a.key });
    await api('GET', `/${a.key}`);
    expect(sink.text.slice(before)).not.toContain(a.key.slice(4));
    // The request is still logged under the gateway's own id.
    expect(sink.lines().some((l) => l.request_id === misplaced.headers.get('x-request-id') && l.msg === 'request')).toBe(true);
  });
});
