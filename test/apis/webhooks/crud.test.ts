// The webhook resource (issue 15): create, read, list, update, delete and rotate-secret, each
// scoped to the account; secrets shown only on create and rotate, sealed at rest and never
// logged; the URL rule enforced at the API with a table resolver (no DNS query, no connection).
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretBox } from '../../../src/webhooks/secret-box.ts';
import { createLogger } from '../../../src/logger.ts';
import { call, newAccount, startTestGateway, TEST_WEBHOOK_KEY, type TestAccount, type TestGateway } from '../../support/harness.ts';
import { createWebhook, expectError, expectWebhook, LOOPBACK_URL, OPEN_ENV, STRICT_ENV, tableLookup, webhookRow } from './helpers.ts';

let gw: TestGateway;
let strict: TestGateway;
let acct: TestAccount;
const logLines: string[] = [];

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _enc, done) {
      logLines.push(String(chunk));
      done();
    },
  });
  gw = await startTestGateway({ env: OPEN_ENV, services: { log: createLogger('trace', sink) } });
  strict = await startTestGateway({
    env: STRICT_ENV,
    services: { webhookLookup: tableLookup({ 'inside.example.com': ['127.0.0.1'], 'mixed.example.com': ['93.184.216.34', '10.0.0.7'] }) },
  });
  acct = await newAccount(gw.db);
});

afterAll(async () => {
  await gw?.close();
  await strict?.close();
});

describe('POST /webhooks', () => {
  it('creates a standard webhook and shows its secret once, whsec_ + base64 of 32 bytes', async () => {
    const hook = await createWebhook(gw.url, acct.key, { description: 'ops channel' });
    expect(hook).toMatchObject({ url: LOOPBACK_URL, kind: 'standard', description: 'ops channel', active: true, disabled_reason: null });
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from((hook.secret as string).slice(6), 'base64')).toHaveLength(32);
    const got = await call(gw.url, 'GET', `/webhooks/${hook.id}`, { key: acct.key });
    expect(got.status).toBe(200);
    expect(expectWebhook(got.body)).toEqual(Object.fromEntries(Object.entries(hook).filter(([k]) => k !== 'secret')));
  });

  it('creates a discord webhook without a secret, and inactive when asked', async () => {
    const hook = await createWebhook(gw.url, acct.key, { kind: 'discord', active: false });
    expect(hook).toMatchObject({ kind: 'discord', active: false, secret: null, description: null });
  });

  it('lists the account\'s webhooks oldest first, never with a secret', async () => {
    const a = await newAccount(gw.db);
    expect((await call(gw.url, 'GET', '/webhooks', { key: a.key })).body).toEqual([]);
    const one = await createWebhook(gw.url, a.key);
    const two = await createWebhook(gw.url, a.key, { kind: 'discord' });
    const r = await call(gw.url, 'GET', '/webhooks', { key: a.key });
    expect(r.status).toBe(200);
    expect(r.body.map((h: Record<string, unknown>) => expectWebhook(h).id)).toEqual([one.id, two.id]);
  });

  it('refuses server fields, unknown fields, a bad kind and a missing url in the watchlist envelope', async () => {
    for (const body of [
      { url: LOOPBACK_URL, kind: 'standard', secret: 'whsec_AAAA' },
      { url: LOOPBACK_URL, kind: 'standard', id: 5 },
      { url: LOOPBACK_URL, kind: 'standard', disabled_reason: 'x' },
      { url: LOOPBACK_URL, kind: 'standard', extra: 1 },
      { url: LOOPBACK_URL, kind: 'slack' },
      { kind: 'standard' },
      { url: LOOPBACK_URL },
      { url: 5, kind: 'standard' },
      { url: LOOPBACK_URL, kind: 'standard', active: 'yes' },
      { url: LOOPBACK_URL, kind: 'standard', description: 'x'.repeat(501) },
      { url: LOOPBACK_URL, kind: 'standard', description: 'a\u0000b' },
      [],
    ]) {
      expectError(await call(gw.url, 'POST', '/webhooks', { key: acct.key, body }), 400);
    }
    const notJson = await call(gw.url, 'POST', '/webhooks', { key: acct.key, raw: '{nope', headers: { 'content-type': 'application/json' } });
    expect(notJson.status).toBe(400);
    expect(Object.keys(notJson.body)).toEqual(['detail']);
  });
});

describe('the URL rule at the API (WEBHOOK_ALLOW_PRIVATE_NETWORKS=false; resolver is a table)', () => {
  it('refuses loopback and inside hosts in every form, and names that resolve inside', async () => {
    const a = await newAccount(strict.db);
    for (const url of [
      'https://127.0.0.1/h',
      'https://127.1/h',
      'https://2130706433/h',
      'https://0x7f000001/h',
      'https://0177.0.0.1/h',
      'https://[::1]/h',
      'https://[::ffff:127.0.0.1]/h',
      'https://localhost/h',
      'https://10.0.0.1/h',
      'https://169.254.169.254/latest',
      'https://100.64.0.1/h',
      'https://inside.example.com/h',
      'https://mixed.example.com/h',
      'https://unknown.example.com/h',
      'http://hooks.public.test/h',
    ]) {
      const msg = expectError(await call(strict.url, 'POST', '/webhooks', { key: a.key, body: { url, kind: 'standard' } }), 400);
      expect(msg, url).toMatch(/^url: /);
    }
    expect(Number((await strict.db('webhooks').where({ account_id: a.accountId }).count('* as n').first())?.n)).toBe(0);
  });

  it('accepts an https URL whose host resolves only to public addresses (nothing is sent at create)', async () => {
    const a = await newAccount(strict.db);
    const r = await call(strict.url, 'POST', '/webhooks', { key: a.key, body: { url: 'https://hooks.public.test/in', kind: 'standard' } });
    expect(r.status, r.text).toBe(201);
    const patched = await call(strict.url, 'PATCH', `/webhooks/${r.body.id}`, { key: a.key, body: { url: 'https://inside.example.com/x' } });
    expect(expectError(patched, 400)).toMatch(/^url: .*loopback/);
  });

  it('takes only Discord execute-webhook URLs for discord webhooks', async () => {
    const a = await newAccount(strict.db);
    const bad = await call(strict.url, 'POST', '/webhooks', { key: a.key, body: { url: 'https://hooks.public.test/api/webhooks/1/x', kind: 'discord' } });
    expect(expectError(bad, 400)).toMatch(/Discord/);
  });
});

describe('PATCH /webhooks/{id}', () => {
  it('changes the named fields only; re-activating clears disabled_reason', async () => {
    const hook = await createWebhook(gw.url, acct.key, { description: 'a' });
    await gw.db('webhooks').where({ id: hook.id }).update({ active: false, disabled_reason: 'failing for 5 days' });
    const r = await call(gw.url, 'PATCH', `/webhooks/${hook.id}`, { key: acct.key, body: { description: null } });
    expect(expectWebhook(r.body)).toMatchObject({ description: null, active: false, disabled_reason: 'failing for 5 days', url: LOOPBACK_URL });
    const on = await call(gw.url, 'PATCH', `/webhooks/${hook.id}`, { key: acct.key, body: { active: true, url: 'http://[::1]:9/other' } });
    expect(expectWebhook(on.body)).toMatchObject({ active: true, disabled_reason: null, url: 'http://[::1]:9/other' });
    expect(on.body.updated_at > (hook.updated_at as string)).toBe(true);
  });

  it('refuses kind and server fields', async () => {
    const hook = await createWebhook(gw.url, acct.key);
    expect(expectError(await call(gw.url, 'PATCH', `/webhooks/${hook.id}`, { key: acct.key, body: { kind: 'discord' } }), 400)).toMatch(/kind/);
    expect(expectError(await call(gw.url, 'PATCH', `/webhooks/${hook.id}`, { key: acct.key, body: { secret: 'x' } }), 400)).toMatch(/secret/);
  });
});

describe('DELETE /webhooks/{id}', () => {
  it('answers 204, then 404 everywhere', async () => {
    const hook = await createWebhook(gw.url, acct.key);
    expect((await call(gw.url, 'DELETE', `/webhooks/${hook.id}`, { key: acct.key })).status).toBe(204);
    for (const [m, p] of [
      ['GET', `/webhooks/${hook.id}`],
      ['PATCH', `/webhooks/${hook.id}`],
      ['DELETE', `/webhooks/${hook.id}`],
      ['POST', `/webhooks/${hook.id}/rotate-secret`],
    ] as const) {
      expect(expectError(await call(gw.url, m, p, { key: acct.key, body: m === 'PATCH' ? { active: true } : undefined }), 404)).toBe('no webhook with that id');
    }
    const list = await call(gw.url, 'GET', '/webhooks', { key: acct.key });
    expect(list.body.map((h: { id: number }) => h.id)).not.toContain(hook.id);
  });
});

describe('POST /webhooks/{id}/rotate-secret', () => {
  it('answers a new secret; the old one is kept to sign for 24 hours', async () => {
    const hook = await createWebhook(gw.url, acct.key);
    const before = await webhookRow(gw.db, hook.id as number);
    const r = await call(gw.url, 'POST', `/webhooks/${hook.id}/rotate-secret`, { key: acct.key });
    expect(r.status, r.text).toBe(200);
    expect(Object.keys(r.body)).toEqual(['secret']);
    expect(r.body.secret).toMatch(/^whsec_/);
    expect(r.body.secret).not.toBe(hook.secret);
    const after = (await webhookRow(gw.db, hook.id as number))!;
    expect(after.previous_secret_sealed).toBe(before!.secret_sealed);
    const box = new SecretBox(TEST_WEBHOOK_KEY);
    expect(box.open(after.secret_sealed as string, acct.accountId)).toBe(r.body.secret);
    expect(box.open(after.previous_secret_sealed as string, acct.accountId)).toBe(hook.secret);
    const overlap = (after.previous_secret_expires_at as Date).getTime() - (after.updated_at as Date).getTime();
    expect(overlap).toBe(24 * 3600 * 1000);
  });

  it('refuses a discord webhook, which has no secret', async () => {
    const hook = await createWebhook(gw.url, acct.key, { kind: 'discord' });
    expect(expectError(await call(gw.url, 'POST', `/webhooks/${hook.id}/rotate-secret`, { key: acct.key }), 400)).toMatch(/discord/);
  });
});

describe('scoping to the account', () => {
  it('another account\'s webhook is 404 for every operation and is left unchanged', async () => {
    const owner = await newAccount(gw.db);
    const other = await newAccount(gw.db);
    const hook = await createWebhook(gw.url, owner.key);
    const row = await webhookRow(gw.db, hook.id as number);
    for (const [m, p, body] of [
      ['GET', `/webhooks/${hook.id}`, undefined],
      ['PATCH', `/webhooks/${hook.id}`, { active: false }],
      ['PATCH', `/webhooks/${hook.id}`, {}],
      ['DELETE', `/webhooks/${hook.id}`, undefined],
      ['POST', `/webhooks/${hook.id}/rotate-secret`, undefined],
    ] as const) {
      expectError(await call(gw.url, m, p, { key: other.key, body }), 404);
    }
    expect((await call(gw.url, 'GET', '/webhooks', { key: other.key })).body).toEqual([]);
    expect(await webhookRow(gw.db, hook.id as number)).toEqual(row);
  });

  it('needs the Watchlist grant and costs nothing', async () => {
    const noWatchlist = await newAccount(gw.db, { apis: ['market_data'] });
    const r = await call(gw.url, 'GET', '/webhooks', { key: noWatchlist.key });
    expect(r.status).toBe(403);
    expect(Object.keys(r.body.error)).toEqual(['code', 'message']);
  });
});

describe('secrets at rest and in logs', () => {
  it('stores the URL and the secret sealed, bound to the account', async () => {
    const url = 'http://127.0.0.1:9/hooks/tok_ABCDEF123456';
    const hook = await createWebhook(gw.url, acct.key, { url });
    const row = (await webhookRow(gw.db, hook.id as number))!;
    const raw = JSON.stringify(row);
    expect(raw).not.toContain('tok_ABCDEF123456');
    expect(raw).not.toContain((hook.secret as string).slice(6));
    const box = new SecretBox(TEST_WEBHOOK_KEY);
    expect(box.open(row.url_sealed as string, acct.accountId)).toBe(url);
    expect(() => box.open(row.url_sealed as string, acct.accountId + 1)).toThrow();
    expect(() => new SecretBox(Buffer.alloc(32, 1).toString('base64')).open(row.secret_sealed as string, acct.accountId)).toThrow();
  });

  it('never writes a secret or a webhook URL to the log', async () => {
    const url = 'http://127.0.0.1:9/hooks/tok_LOGCHECK987';
    const hook = await createWebhook(gw.url, acct.key, { url });
    const rotated = await call(gw.url, 'POST', `/webhooks/${hook.id}/rotate-secret`, { key: acct.key });
    await call(gw.url, 'POST', '/webhooks', { key: acct.key, body: { url: 'http://127.0.0.1:9/hooks/tok_REFUSED', kind: 'standard', secret: 'whsec_mine' } });
    const all = logLines.join('');
    expect(all).toContain('"operation":"rotateWebhookSecret"');
    for (const s of [(hook.secret as string).slice(6), (rotated.body.secret as string).slice(6), 'tok_LOGCHECK987', 'tok_REFUSED', 'whsec_']) {
      expect(all).not.toContain(s);
    }
  });

  it('answers 500 with the fixed message when the deployment has no key', async () => {
    const keyless = await startTestGateway({ env: { ...OPEN_ENV, WEBHOOK_SECRET_KEY: '' } });
    try {
      const a = await newAccount(keyless.db);
      expect(expectError(await call(keyless.url, 'GET', '/webhooks', { key: a.key }), 500)).toBe('internal error');
    } finally {
      await keyless.close();
    }
  });
});
