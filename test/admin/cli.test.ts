// The admin CLI (`npm run admin -- <command>`), run as a real subprocess against the run's
// database: JSON on stdout; on error a message on stderr, nothing on stdout, non-zero exit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../src/accounts/operations.ts';
import { addMonths } from '../../src/billing/periods.ts';
import { call, databaseUrl, runTs, startTestGateway, testConfig, type ProcessResult, type TestGateway } from '../support/harness.ts';
import { awayFromMinuteEdge } from '../support/gateway-helpers.ts';

const DAY = 86_400_000;
let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => {
  await gw?.close();
});

function admin(...args: string[]): Promise<ProcessResult> {
  return runTs('src/admin/cli.ts', args, { ...process.env, DATABASE_URL: databaseUrl() });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function adminOk(...args: string[]): Promise<any> {
  const r = await admin(...args);
  expect(r.code, `admin ${args.join(' ')}\n${r.stderr}`).toBe(0);
  return JSON.parse(r.stdout);
}

/** A failing command: non-zero exit, a message on stderr, nothing on stdout. Returns stderr. */
async function adminFails(...args: string[]): Promise<string> {
  const r = await admin(...args);
  expect(r.code, `admin ${args.join(' ')} should fail\n${r.stdout}`).not.toBe(0);
  expect(r.code).not.toBeNull(); // exited, not killed by the timeout
  expect(r.stdout).toBe('');
  expect(r.stderr.trim()).not.toBe('');
  expect(r.stderr).not.toMatch(/^\s+at /m); // a message, not a stack trace
  return r.stderr;
}

async function newAccountViaCli(...extra: string[]): Promise<number> {
  const out = await adminOk('accounts:create', '--plan', 'free', ...extra);
  expect(Object.keys(out)).toEqual(['account_id']);
  expect(Number.isSafeInteger(out.account_id)).toBe(true);
  return out.account_id;
}

async function keyViaCli(accountId: number, ...extra: string[]): Promise<{ key_id: string; key: string }> {
  const out = await adminOk('keys:create', '--account', String(accountId), ...extra);
  expect(Object.keys(out).sort()).toEqual(['key', 'key_id']);
  return out;
}

/** An account made directly (not under test here), on plan free. Each CLI run costs about a second. */
async function account(): Promise<number> {
  return (await createAccount(gw.db, { plan: 'free' })).account_id;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('plans:list', () => {
  it('prints every plan with id, included and hard_cap; the defaults are capped and unlimited ones', async () => {
    const plans = await adminOk('plans:list');
    expect(Array.isArray(plans)).toBe(true);
    for (const p of plans) {
      expect(typeof p.id).toBe('string');
      expect(Number.isInteger(p.included)).toBe(true);
      expect(p.hard_cap === 'unlimited' || Number.isInteger(p.hard_cap)).toBe(true);
    }
    const byId = Object.fromEntries(plans.map((p: { id: string }) => [p.id, p]));
    expect(byId.free).toMatchObject({ included: 1000, hard_cap: 1000 });
    expect(byId.starter).toMatchObject({ included: 20_000, hard_cap: 25_000 });
    expect(byId.pro).toMatchObject({ included: 200_000, hard_cap: 'unlimited' });
    expect(plans.some((p: { hard_cap: unknown }) => typeof p.hard_cap === 'number')).toBe(true);
    expect(plans.some((p: { hard_cap: unknown }) => p.hard_cap === 'unlimited')).toBe(true);
    // Exactly the plans on file.
    const rows = await gw.db('plans').select('id');
    expect(plans.map((p: { id: string }) => p.id).sort()).toEqual(expect.arrayContaining(['free', 'starter', 'pro', 'enterprise']));
    expect(plans.length).toBeGreaterThanOrEqual(4);
    expect(rows.length).toBeGreaterThanOrEqual(plans.length);
  });
});

describe('accounts:create', () => {
  it('defaults: status active, a billing account, the billing period starting now', async () => {
    const before = Date.now();
    const id = await newAccountViaCli();
    const after = Date.now();
    const account = await gw.db('accounts').where({ id }).first();
    expect(account.customer_id).toMatch(/^cus_/);
    const sub = await gw.db('subscriptions').where({ account_id: id }).first();
    expect(sub).toMatchObject({ plan_id: 'free', status: 'active', cancel_at_period_end: false, trial_end: null, canceled_at: null });
    const start = (sub.current_period_start as Date).getTime();
    expect(start).toBeGreaterThanOrEqual(before);
    expect(start).toBeLessThanOrEqual(after);
    expect((sub.current_period_end as Date).toISOString()).toBe(addMonths(sub.current_period_start, 1).toISOString());
  });

  it('--status trialing starts a trial', async () => {
    const id = await newAccountViaCli('--status', 'trialing');
    const sub = await gw.db('subscriptions').where({ account_id: id }).first();
    expect(sub.status).toBe('trialing');
    expect(sub.trial_end).not.toBeNull();
    expect((sub.trial_end as Date).getTime()).toBeGreaterThan(Date.now() + 13 * DAY);
  });

  it('--status canceled records when', async () => {
    const id = await newAccountViaCli('--status', 'canceled', '--name', 'gone');
    const sub = await gw.db('subscriptions').where({ account_id: id }).first();
    expect(sub.status).toBe('canceled');
    expect(sub.canceled_at).not.toBeNull();
    expect((await gw.db('accounts').where({ id }).first()).name).toBe('gone');
  });

  it('--no-billing: no billing account, so paid calls get 402 no_billing_account', async () => {
    const id = await newAccountViaCli('--no-billing');
    const account = await gw.db('accounts').where({ id }).first();
    expect(account.customer_id).toBeNull();
    const { key } = await keyViaCli(id);
    const r = await call(gw.url, 'GET', '/svc/data/ping', { key });
    expect(r.status).toBe(402);
    expect(r.body.error.code).toBe('no_billing_account');
  });
});

describe('keys:create', () => {
  it('prints a tmk_ key that works through the gateway at once, for every API', async () => {
    const id = await account();
    const { key, key_id } = await keyViaCli(id);
    expect(key).toMatch(/^tmk_/);
    expect(typeof key_id).toBe('string');
    const row = await gw.db('api_keys').where({ id: key_id }).first();
    expect(Number(row.account_id)).toBe(id);
    expect([...row.apis].sort()).toEqual(['account', 'live_availability', 'market_data', 'stream', 'watchlist']);
    expect(row.rate_limit_per_minute).toBeNull();
    expect(row.expires_at).toBeNull();
    // The key itself is never stored.
    expect(JSON.stringify(row)).not.toContain(key);
    expect((await call(gw.url, 'GET', '/usage', { key })).status).toBe(200);
    expect((await call(gw.url, 'GET', '/watchlist', { key })).status).toBe(200);
    expect((await call(gw.url, 'GET', '/svc/data/ping', { key })).status).toBe(200);
    expect((await call(gw.url, 'GET', '/events/platforms', { key })).status).toBe(200);
  });

  it('--apis narrows the key: other APIs answer 403, /usage stays open', async () => {
    const id = await account();
    const { key, key_id } = await keyViaCli(id, '--apis', 'watchlist,stream');
    const row = await gw.db('api_keys').where({ id: key_id }).first();
    expect([...row.apis].sort()).toEqual(['stream', 'watchlist']);
    expect((await call(gw.url, 'GET', '/watchlist', { key })).status).toBe(200);
    expect((await call(gw.url, 'GET', '/usage', { key })).status).toBe(200);
    for (const path of ['/svc/data/ping', '/events/platforms']) {
      const r = await call(gw.url, 'GET', path, { key });
      expect(r.status, path).toBe(403);
      expect(r.body.error.code).toBe('forbidden');
    }
  });

  it('--rate-limit sets the per-minute limit of the key', async () => {
    const id = await account();
    const { key, key_id } = await keyViaCli(id, '--rate-limit', '2');
    expect((await gw.db('api_keys').where({ id: key_id }).first()).rate_limit_per_minute).toBe(2);
    // Stay clear of a calendar-minute boundary so the three calls share one window.
    await awayFromMinuteEdge(10_000);
    expect((await call(gw.url, 'GET', '/watchlist', { key })).status).toBe(200);
    expect((await call(gw.url, 'GET', '/watchlist', { key })).status).toBe(200);
    const third = await call(gw.url, 'GET', '/watchlist', { key });
    expect(third.status).toBe(429);
    expect(third.body.error.code).toBe('rate_limited');
  });

  it('--expires-at in the past: the key is rejected with 401 invalid_credentials', async () => {
    const id = await account();
    const { key } = await keyViaCli(id, '--expires-at', '2020-01-01T00:00:00Z');
    const r = await call(gw.url, 'GET', '/usage', { key });
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('invalid_credentials');
  });

  it('--expires-at in the future: stored exactly, the key works', async () => {
    const id = await account();
    const { key, key_id } = await keyViaCli(id, '--expires-at', '2099-06-30T12:34:56+02:00');
    const row = await gw.db('api_keys').where({ id: key_id }).first();
    expect((row.expires_at as Date).toISOString()).toBe('2099-06-30T10:34:56.000Z');
    expect((await call(gw.url, 'GET', '/usage', { key })).status).toBe(200);
  });
});

describe('keys:revoke', () => {
  it('the key is rejected once the key cache expires (KEY_CACHE_TTL_MS)', async () => {
    const ttl = testConfig().KEY_CACHE_TTL_MS;
    const id = await account();
    const { key, key_id } = await keyViaCli(id);
    expect((await call(gw.url, 'GET', '/usage', { key })).status).toBe(200); // cached as valid now
    const out = await adminOk('keys:revoke', '--key-id', key_id);
    expect(out.key_id).toBe(key_id);
    expect(Number.isNaN(Date.parse(out.revoked_at))).toBe(false);
    await sleep(ttl + 50);
    const r = await call(gw.url, 'GET', '/usage', { key });
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('invalid_credentials');
    // Revoking again keeps the first revocation time.
    const again = await adminOk('keys:revoke', '--key-id', key_id);
    expect(again.revoked_at).toBe(out.revoked_at);
  });

  it('an unknown key id fails', async () => {
    expect(await adminFails('keys:revoke', '--key-id', 'key_doesnotexist')).toMatch(/key/);
  });
});

describe('subscriptions:set and usage:set', () => {
  it('subscriptions:set moves the subscription; /usage and paid calls follow', async () => {
    const id = await account();
    const { key } = await keyViaCli(id);
    expect(await adminOk('subscriptions:set', '--account', String(id), '--status', 'past_due')).toEqual({ account_id: id, status: 'past_due' });
    expect((await gw.db('subscriptions').where({ account_id: id }).first()).status).toBe('past_due');
    const r = await call(gw.url, 'GET', '/usage', { key });
    expect(r.body).toMatchObject({ status: 'none', usage_status: 'none' });
    const p = await call(gw.url, 'GET', '/svc/data/ping', { key });
    expect(p.status).toBe(402);
    expect(p.body.error.code).toBe('no_subscription');

    await adminOk('subscriptions:set', '--account', String(id), '--status', 'canceled');
    const canceled = await gw.db('subscriptions').where({ account_id: id }).first();
    expect(canceled.canceled_at).not.toBeNull();

    await adminOk('subscriptions:set', '--account', String(id), '--status', 'active');
    expect((await call(gw.url, 'GET', '/usage', { key })).body.status).toBe('active');
    expect((await call(gw.url, 'GET', '/svc/data/ping', { key })).status).toBe(200);
  });

  it('subscriptions:set is refused under BILLING_PROVIDER=stripe, the subscription untouched', async () => {
    const id = await account();
    const before = await gw.db('subscriptions').where({ account_id: id }).first();
    const r = await runTs('src/admin/cli.ts', ['subscriptions:set', '--account', String(id), '--status', 'canceled'], {
      ...process.env,
      DATABASE_URL: databaseUrl(),
      BILLING_PROVIDER: 'stripe',
      STRIPE_SECRET_KEY: 'sk_test_cli',
      STRIPE_WEBHOOK_SECRET: 'whsec_cli',
    });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^error: with BILLING_PROVIDER=stripe a subscription’s state comes from Stripe/);
    expect(await gw.db('subscriptions').where({ account_id: id }).first()).toEqual(before);
  });

  it('usage:set is visible in /usage, up to the hard cap', async () => {
    const id = await account();
    const { key } = await keyViaCli(id);
    expect(await adminOk('usage:set', '--account', String(id), '--used', '850')).toEqual({ account_id: id, used: 850 });
    let r = await call(gw.url, 'GET', '/usage', { key });
    expect(r.body.credits).toMatchObject({ used: 850, remaining: 150 });
    expect(r.body.usage_status).toBe('approaching_limit');

    await adminOk('usage:set', '--account', String(id), '--used', '1000');
    r = await call(gw.url, 'GET', '/usage', { key });
    expect(r.body.usage_status).toBe('at_hard_cap');
    expect((await call(gw.url, 'GET', '/svc/data/ping', { key })).status).toBe(402);

    await adminOk('usage:set', '--account', String(id), '--used', '0');
    r = await call(gw.url, 'GET', '/usage', { key });
    expect(r.body.credits.used).toBe(0);
    expect((await call(gw.url, 'GET', '/svc/data/ping', { key })).status).toBe(200);
  });
});

// Concurrent: a dozen CLI processes start at once, which on a loaded machine took past 30 s.
describe.concurrent('errors: non-zero exit, message on stderr, nothing on stdout', { timeout: 90_000 }, () => {
  it('no command', async () => {
    expect(await adminFails()).toMatch(/usage/);
  });

  it('unknown command', async () => {
    expect(await adminFails('accounts:delete')).toMatch(/unknown command/);
  });

  it('unknown option and stray argument', async () => {
    await adminFails('plans:list', '--bogus');
    await adminFails('plans:list', 'extra');
  });

  it('accounts:create without --plan', async () => {
    expect(await adminFails('accounts:create')).toMatch(/--plan/);
  });

  it('accounts:create with an unknown plan', async () => {
    expect(await adminFails('accounts:create', '--plan', 'platinum')).toMatch(/platinum/);
  });

  it('accounts:create with a bad status', async () => {
    expect(await adminFails('accounts:create', '--plan', 'free', '--status', 'frozen')).toMatch(/status/);
  });

  it('subscriptions:set with a bad status or an unknown account', async () => {
    const id = await account();
    expect(await adminFails('subscriptions:set', '--account', String(id), '--status', 'frozen')).toMatch(/status/);
    expect((await gw.db('subscriptions').where({ account_id: id }).first()).status).toBe('active');
    expect(await adminFails('subscriptions:set', '--account', '999999999', '--status', 'active')).toMatch(/999999999/);
    await adminFails('subscriptions:set', '--account', String(id));
  });

  it.each([
    ['not a timestamp', 'tomorrow'],
    ['no offset (RFC 3339 needs one)', '2030-01-01T00:00:00'],
    ['a day that does not exist', '2030-02-30T00:00:00Z'],
  ])('keys:create with a bad --expires-at: %s', async (_why, value) => {
    const id = await account();
    expect(await adminFails('keys:create', '--account', String(id), '--expires-at', value)).toMatch(/expires-at/);
    expect(await gw.db('api_keys').where({ account_id: id })).toEqual([]);
  });

  it('keys:create with a non-numeric, missing or unknown --account', async () => {
    expect(await adminFails('keys:create', '--account', 'abc')).toMatch(/--account/);
    expect(await adminFails('keys:create')).toMatch(/--account/);
    expect(await adminFails('keys:create', '--account', '999999999')).toMatch(/999999999/);
  });

  it('keys:create with an unknown API or a bad rate limit', async () => {
    const id = String(await account());
    expect(await adminFails('keys:create', '--account', id, '--apis', 'watchlist,teleport')).toMatch(/teleport/);
    expect(await adminFails('keys:create', '--account', id, '--apis', '')).toMatch(/--apis/);
    expect(await adminFails('keys:create', '--account', id, '--rate-limit', '0')).toMatch(/rate/);
    expect(await adminFails('keys:create', '--account', id, '--rate-limit', 'fast')).toMatch(/rate-limit/);
  });

  it('usage:set with a negative, non-numeric or missing --used', async () => {
    const id = String(await account());
    await adminFails('usage:set', '--account', id, '--used', '-5');
    expect(await adminFails('usage:set', '--account', id, '--used', 'lots')).toMatch(/--used/);
    expect(await adminFails('usage:set', '--account', id)).toMatch(/--used/);
    expect(await adminFails('usage:set', '--account', 'x', '--used', '1')).toMatch(/--account/);
  });

  it('an unreachable database: a message, nothing on stdout', async () => {
    const r = await runTs('src/admin/cli.ts', ['plans:list'], { ...process.env, DATABASE_URL: 'postgres://postgres@127.0.0.1:1/x' });
    expect(r.code).not.toBe(0);
    expect(r.code).not.toBeNull();
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/ECONNREFUSED/);
  });

  it('arguments are checked before the database is opened', async () => {
    // With an unreachable database, the answer is still about the argument.
    const env = { ...process.env, DATABASE_URL: 'postgres://postgres@127.0.0.1:1/x' };
    const r = await runTs('src/admin/cli.ts', ['keys:create', '--account', 'abc'], env);
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/--account/);
    expect(r.stderr).not.toMatch(/ECONNREFUSED/);
    const s = await runTs('src/admin/cli.ts', ['accounts:create', '--plan', 'free', '--status', 'frozen'], env);
    expect(s.stderr).toMatch(/--status/);
    expect(s.stderr).not.toMatch(/ECONNREFUSED/);
  });

  it('a bad configuration names the variable', async () => {
    const r = await runTs('src/admin/cli.ts', ['plans:list'], { ...process.env, DATABASE_URL: 'not a url' });
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/DATABASE_URL/);
  });
});
