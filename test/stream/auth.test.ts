// Upgrade refusals are HTTP answers in the gateway envelope, before any WebSocket exists (spec
// 5, 7.1, 7.6), checked in the gateway's order: authentication, access, rate limit, last_id.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { KeyVerifier } from '../../src/gateway/key-verifier.ts';
import { generateApiKey } from '../../src/gateway/keys.ts';
import { STREAM_PATH } from '../../src/stream/protocol.ts';
import { newAccount, type TestAccount } from '../support/harness.ts';
import { awayFromMinuteEdge, unreachableDb } from '../support/gateway-helpers.ts';
import { append, connect, randomAddress, refusal, sleep, startNode, type TestNode } from './helpers.ts';

function envelope(r: { body: { error?: { code?: unknown; message?: unknown } } }): string | undefined {
  const e = r.body?.error;
  return typeof e?.code === 'string' && typeof e.message === 'string' && Object.keys(r.body).length === 1 ? e.code : undefined;
}

describe('stream upgrade refusals', () => {
  let t: TestNode;
  let a: TestAccount;

  beforeAll(async () => {
    t = await startNode();
    a = await newAccount(t.db);
  });
  afterAll(async () => {
    await t.close();
  });

  it('401 unauthenticated without a key, 401 invalid_credentials for a rejected key, header or query', async () => {
    const none = await refusal(t.url);
    expect([none.status, envelope(none)]).toEqual([401, 'unauthenticated']);
    // Nothing was counted, so there is no window to report (spec 5.2: a header check only).
    expect(none.headers['ratelimit-policy']).toBeUndefined();
    const bad = await refusal(t.url, { apikey: 'tmk_' + 'x'.repeat(40) });
    expect([bad.status, envelope(bad)]).toEqual([401, 'invalid_credentials']);
    expect(bad.headers['ratelimit-policy']).toMatch(/^"unauthenticated";q=\d+;w=60$/);
    const badQuery = await refusal(`${t.url}?apikey=nope`);
    expect([badQuery.status, envelope(badQuery)]).toEqual([401, 'invalid_credentials']);
    const revoked = await newAccount(t.db);
    await t.db('api_keys').where({ id: revoked.keyId }).update({ revoked_at: new Date() });
    const r = await refusal(t.url, { apikey: revoked.key });
    expect([r.status, envelope(r)]).toEqual([401, 'invalid_credentials']);
  });

  it('accepts the key as ?apikey= (browsers) and answers 101 with the rate-limit headers', async () => {
    const c = await connect(`${t.url}?apikey=${encodeURIComponent(a.key)}`);
    expect(c.messages[0]).toMatchObject({ type: 'hello', account_id: a.accountId });
    c.close();
    // ws exposes the 101 response through the 'upgrade' event.
    const upgraded = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const probe = new WebSocket(t.url, { headers: { apikey: a.key } });
      probe.once('upgrade', (res) => {
        resolve(res.headers);
        probe.terminate();
      });
      probe.once('error', reject);
    });
    expect(upgraded['ratelimit-policy']).toBe('"default";q=10000;w=60');
    expect(upgraded['ratelimit']).toMatch(/^"default";r=\d+;t=\d+$/);
    expect(upgraded['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('403 forbidden for a key without the stream API, whatever else it may call', async () => {
    const k = await newAccount(t.db, { apis: ['watchlist', 'market_data', 'live_availability', 'account'] });
    const r = await refusal(t.url, { apikey: k.key });
    expect([r.status, envelope(r)]).toEqual([403, 'forbidden']);
    expect(r.headers['ratelimit-policy']).toBe('"default";q=10000;w=60');
    const ok = await connect(t.url, { key: (await newAccount(t.db, { apis: ['stream'] })).key });
    ok.close();
  });

  it('429 rate_limited past the key limit: an upgrade counts as one request; Retry-After and RateLimit headers', async () => {
    const k = await newAccount(t.db, { rateLimit: 2 });
    // Stay inside one calendar minute.
    await awayFromMinuteEdge(10_000);
    for (let i = 0; i < 2; i++) (await connect(t.url, { key: k.key })).close();
    const r = await refusal(t.url, { apikey: k.key });
    expect([r.status, envelope(r)]).toEqual([429, 'rate_limited']);
    expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(r.headers['ratelimit']).toMatch(/^"default";r=0;t=\d+$/);
    expect(r.headers['ratelimit-policy']).toBe('"default";q=2;w=60');
  });

  it('limits rejected keys per client address (X-Forwarded-For from the loopback); an upgrade with no key is always 401 and not counted', async () => {
    const strict = await startNode({ db: t.db, env: { UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: '3' } });
    try {
      await awayFromMinuteEdge(10_000);
      const address = randomAddress();
      // Keyless upgrades guess nothing (spec 5.2): however many, they use none of the allowance.
      for (let i = 0; i < 5; i++) {
        const keyless = await refusal(strict.url, { 'x-forwarded-for': address });
        expect([keyless.status, envelope(keyless)]).toEqual([401, 'unauthenticated']);
        expect(keyless.headers['ratelimit']).toBeUndefined();
      }
      const codes: number[] = [];
      for (let i = 0; i < 4; i++) codes.push((await refusal(strict.url, { 'x-forwarded-for': address, apikey: 'wrong' })).status);
      expect(codes).toEqual([401, 401, 401, 429]);
      const limited = await refusal(strict.url, { 'x-forwarded-for': address, apikey: 'wrong' });
      expect([limited.status, envelope(limited)]).toEqual([429, 'rate_limited']);
      expect(limited.headers['retry-after']).toBeDefined();
      // Past it, a well-formed key is refused before the key store is asked (issue 25).
      let lookups = 0;
      const count = (q: { sql: string }) => void (q.sql.includes('api_keys') && lookups++);
      t.db.on('query', count);
      for (let i = 0; i < 3; i++) {
        const guessed = await refusal(strict.url, { 'x-forwarded-for': address, apikey: generateApiKey().key });
        expect([guessed.status, envelope(guessed)]).toEqual([429, 'rate_limited']);
      }
      t.db.off('query', count);
      expect(lookups).toBe(0);
      // Past the limit, an upgrade with no key is still told what it lacks.
      const last = await refusal(strict.url, { 'x-forwarded-for': address });
      expect([last.status, envelope(last)]).toEqual([401, 'unauthenticated']);
      // Another address is not affected.
      expect((await refusal(strict.url, { 'x-forwarded-for': randomAddress(), apikey: 'wrong' })).status).toBe(401);
    } finally {
      await strict.close();
    }
  });

  it('502 service_unavailable when the key store is unreachable (fail closed)', async () => {
    const dead = unreachableDb();
    const down = await startNode({ db: t.db, keys: new KeyVerifier(dead, 0) });
    try {
      const r = await refusal(down.url, { apikey: a.key });
      expect([r.status, envelope(r)]).toEqual([502, 'service_unavailable']);
    } finally {
      await down.close();
      await dead.destroy();
    }
  });

  it('400 invalid_parameter for a malformed last_id, after the rate limit counted it', async () => {
    for (const bad of ['-1', 'abc', '1.5', '01', '1e3', '99999999999999999', '']) {
      const r = await refusal(`${t.url}?last_id=${encodeURIComponent(bad)}`, { apikey: a.key });
      expect([bad, r.status, envelope(r)]).toEqual([bad, 400, 'invalid_parameter']);
      expect(r.headers['ratelimit']).toBeDefined();
    }
    const twice = await refusal(`${t.url}?last_id=1&last_id=2`, { apikey: a.key });
    expect(twice.status).toBe(400);
    const header = await refusal(t.url, { apikey: a.key, 'last-event-id': 'x' });
    expect(header.status).toBe(400);
  });

  it('a last_id ahead of the log (a restored database): resumes from the log with resume_gap, then delivers what is written after', async () => {
    const [id] = await append(t.db, a.accountId, 1);
    const c = await connect(t.url, { key: a.key, lastId: id! + 1_000_000 });
    const hello = c.messages.find((m) => m.type === 'hello')!;
    expect(hello.resume_gap).toBe(true);
    // Where the replay starts: the log's last id (others' rows may have come after ours), never the id sent.
    expect(hello.last_id).toBeGreaterThanOrEqual(id!);
    expect(hello.last_id).toBeLessThanOrEqual(hello.head);
    const later = await append(t.db, a.accountId, 3);
    await c.until((x) => x.ids().length === 3, 10_000, 'the rows written after the resume');
    expect(c.ids()).toEqual(later);
    c.close();
  });

  it('closes the connections of a key revoked while connected (1008 key_rejected), and only those', async () => {
    const checking = await startNode({ db: t.db, keyRecheckMs: 300 });
    try {
      const doomed = await newAccount(t.db);
      const kept = await newAccount(t.db);
      const c1 = await connect(checking.url, { key: doomed.key });
      const c2 = await connect(checking.url, { key: doomed.key });
      const other = await connect(checking.url, { key: kept.key });
      await t.db('api_keys').where({ id: doomed.keyId }).update({ revoked_at: new Date() });
      expect(await c1.closed).toEqual({ code: 1008, reason: 'key_rejected' });
      expect(await c2.closed).toEqual({ code: 1008, reason: 'key_rejected' });
      await sleep(700);
      expect(other.closeInfo).toBeNull();
      const r = await refusal(checking.url, { apikey: doomed.key });
      expect(r.status).toBe(401);
      other.close();
    } finally {
      await checking.close();
    }
  });

  it('404 not_found for other paths, 426 upgrade_required for a plain request to the stream path', async () => {
    const base = t.url.replace(STREAM_PATH, '');
    const other = await refusal(`${base}/svc/notifications/other`, { apikey: a.key });
    expect([other.status, envelope(other)]).toEqual([404, 'not_found']);
    const plain = await fetch(`${base.replace('ws:', 'http:')}${STREAM_PATH}`, { headers: { apikey: a.key } });
    expect(plain.status).toBe(426);
    expect(plain.headers.get('upgrade')).toBe('websocket');
    expect(((await plain.json()) as { error: { code: string } }).error.code).toBe('upgrade_required');
    const nf = await fetch(`${base.replace('ws:', 'http:')}/`);
    expect(nf.status).toBe(404);
  });
});
