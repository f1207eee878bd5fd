// Watchlist CRUD through the real gateway and PostgreSQL: defaults, round trips, PATCH
// semantics, list order, soft delete and the health probe (spec 2.1, 3.1, 4.3).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, newAccount, startTestGateway, type TestAccount, type TestGateway } from '../../support/harness.ts';
import {
  BOOLEANS,
  createItem,
  dbRow,
  expectGatewayError,
  expectItem,
  expectUtcTimestamp,
  expectWatchlistError,
  getItem,
  HEALTH_FIELDS,
  type ItemField,
  NULLABLE,
  pf03Event,
  rowTarget,
  SAMPLE_VALUES,
  SETTABLE,
  sleep,
  SPEC_DEFAULTS,
  target,
  without,
} from './helpers.ts';

let gw: TestGateway;
let acct: TestAccount;

beforeAll(async () => {
  gw = await startTestGateway();
  acct = await newAccount(gw.db);
});

afterAll(async () => {
  await gw?.close();
});

describe('POST /watchlist', () => {
  it('creates an item with every default of spec 2.1 and answers 201 with the full item', async () => {
    const before = Date.now();
    const r = await call(gw.url, 'POST', '/watchlist', { key: acct.key, body: target() });
    const after = Date.now();
    expect(r.status, r.text).toBe(201);
    expect(r.headers.get('content-type')).toMatch(/application\/json/);
    const item = expectItem(r.body);
    for (const [field, value] of Object.entries(SPEC_DEFAULTS)) expect(item[field as keyof typeof item], field).toEqual(value);
    // Every client-settable field of the answer was checked against a spec default above.
    expect(Object.keys(item).filter((k) => SETTABLE.includes(k as ItemField)).sort()).toEqual(Object.keys(SPEC_DEFAULTS).sort());
    expect(item.website).toBe('pf_03');
    expect(item.event).toBe('https://pf03.example/e/42');
    expect(item.region).toBe('us');
    expect(item.client_id).toBe(acct.accountId);
    expect(Number.isInteger(item.id) && item.id > 0).toBe(true);
    expect(item.deleted).toBe(false);
    expect(item.created_at).toBe(item.updated_at);
    // The timestamps are the real time of creation, in UTC (allow for clock reads on either side).
    expect(Date.parse(item.created_at)).toBeGreaterThanOrEqual(before - 1_000);
    expect(Date.parse(item.created_at)).toBeLessThanOrEqual(after + 1_000);
  });

  it('stores the region lower-case', async () => {
    const a = await createItem(gw.url, acct.key, { website: 'pf_01', event: 'G5vYZ9A1bC2dE3fG', region: 'UK' });
    expect(a.region).toBe('uk');
    const b = await createItem(gw.url, acct.key, { region: 'Us' });
    expect(b.region).toBe('us');
    expect((await getItem(gw.url, acct.key, a.id)).region).toBe('uk');
    expect((await dbRow(gw.db, a.id))!.region).toBe('uk');
  });

  it('round-trips an explicit value for every settable field, in the response, on GET and in the list', async () => {
    const item = await createItem(gw.url, acct.key, SAMPLE_VALUES);
    for (const f of SETTABLE) expect(item[f as keyof typeof item], f).toEqual(SAMPLE_VALUES[f]);
    const fetched = await getItem(gw.url, acct.key, item.id);
    expect(fetched).toEqual(item);
    const list = await call(gw.url, 'GET', '/watchlist', { key: acct.key });
    expect(list.body.find((i: { id: number }) => i.id === item.id)).toEqual(item);
  });

  it('stores explicit null for every nullable field', async () => {
    const nulls = Object.fromEntries(NULLABLE.map((f) => [f, null]));
    const item = await createItem(gw.url, acct.key, nulls);
    for (const f of NULLABLE) expect(item[f], f).toBeNull();
    // Fields whose default is not null really were overridden, and stay null when read again.
    expect(item.stock_threshold_filter).toBeNull();
    expect(item.change_type).toBeNull();
    const row = (await dbRow(gw.db, item.id))!;
    for (const f of NULLABLE) expect(row[f], f).toBeNull();
    expect(await getItem(gw.url, acct.key, item.id)).toEqual(item);
  });

  it('passes roles_json through as opaque JSON of any shape', async () => {
    const values: unknown[] = [
      { nested: { deeper: { list: [1, 2, { x: 'y' }] } }, n: -3.25, t: true, z: null },
      'just a string',
      42,
      0.5,
      -7,
      true,
      false,
      [],
      {},
      [null, 'a', 1, [2, [3]]],
      { 'key with spaces': 'ünïcødé ✓ 😀', 'üñï': ['€'] },
    ];
    for (const roles_json of values) {
      const item = await createItem(gw.url, acct.key, { roles_json });
      expect(item.roles_json, JSON.stringify(roles_json)).toEqual(roles_json);
      expect((await getItem(gw.url, acct.key, item.id)).roles_json).toEqual(roles_json);
    }
  });

  it('round-trips keywords, date_filter and row_filter values', async () => {
    const cases: Record<string, unknown>[] = [
      { keywords: [] },
      { keywords: ['Ünïcode', 'x'] },
      { date_filter: {} },
      { date_filter: { from: '2030-02-01' } },
      { date_filter: { to: '2030-02-01' } },
      { date_filter: { from: null, to: '2030-02-01' } },
      { date_filter: { from: '2030-02-01', to: '2030-02-01' } },
      { row_filter: [] },
      { row_filter: ['AA', '1'] },
    ];
    for (const c of cases) {
      // A non-empty row_filter needs a platform whose offers have rows (row-filter.test.ts).
      const item = await createItem(gw.url, acct.key, 'row_filter' in c ? rowTarget(c) : c);
      const [field, value] = Object.entries(c)[0]!;
      expect(item[field as keyof typeof item], JSON.stringify(c)).toEqual(value);
      expect((await getItem(gw.url, acct.key, item.id))[field as keyof typeof item]).toEqual(value);
    }
  });

  it('returns muted_until in UTC with a Z, whatever offset it was sent with', async () => {
    const cases: [string, string][] = [
      ['2030-06-01T12:00:00+02:00', '2030-06-01T10:00:00.000Z'],
      ['2030-06-01T12:00:00-05:30', '2030-06-01T17:30:00.000Z'],
      ['2030-12-31T23:30:00-01:00', '2031-01-01T00:30:00.000Z'],
      ['2030-06-01T12:00:00.250Z', '2030-06-01T12:00:00.250Z'],
    ];
    for (const [sent, utc] of cases) {
      const item = await createItem(gw.url, acct.key, { muted_until: sent });
      expectUtcTimestamp(item.muted_until);
      expect(item.muted_until, sent).toBe(utc);
      expect(Date.parse(item.muted_until!)).toBe(Date.parse(sent));
    }
  });

  it('accepts money with up to two decimals and equal bounds', async () => {
    const item = await createItem(gw.url, acct.key, {
      min_price_filter: 0,
      max_price_filter: 0,
      min_avg_price_threshold: 19.99,
      max_avg_price_threshold: 19.99,
      stock_threshold_filter: 0,
      stock_threshold_filter_max: 0,
    });
    expect(item.min_price_filter).toBe(0);
    expect(item.max_price_filter).toBe(0);
    expect(item.min_avg_price_threshold).toBe(19.99);
    expect(item.max_avg_price_threshold).toBe(19.99);
    expect(item.stock_threshold_filter).toBe(0);
    expect(item.stock_threshold_filter_max).toBe(0);
  });
});

describe('GET /watchlist', () => {
  it('answers an empty array for a new account', async () => {
    const fresh = await newAccount(gw.db);
    const r = await call(gw.url, 'GET', '/watchlist', { key: fresh.key });
    expect(r.status).toBe(200);
    expect(r.body).toEqual([]);
  });

  it('lists the account’s items oldest first, each a full item', async () => {
    const a = await newAccount(gw.db);
    const created = [];
    for (let i = 0; i < 4; i++) {
      created.push(await createItem(gw.url, a.key, { event: pf03Event(`evt-${i}`), priority: i }));
      await sleep(2);
    }
    const r = await call(gw.url, 'GET', '/watchlist', { key: a.key });
    expect(r.status).toBe(200);
    expect(Array.isArray(r.body)).toBe(true);
    r.body.forEach(expectItem);
    expect(r.body).toEqual(created);
    const times = r.body.map((i: { created_at: string }) => Date.parse(i.created_at));
    expect([...times].sort((x, y) => x - y)).toEqual(times);
  });

  it('lists concurrently created items with created_at in list order', async () => {
    const a = await newAccount(gw.db);
    await Promise.all(Array.from({ length: 12 }, (_, i) => createItem(gw.url, a.key, { event: pf03Event(`c-${i}`) })));
    const r = await call(gw.url, 'GET', '/watchlist', { key: a.key });
    expect(r.body).toHaveLength(12);
    const ids = r.body.map((i: { id: number }) => i.id);
    expect([...ids].sort((x: number, y: number) => x - y)).toEqual(ids);
    const rows = await gw.db('watchlist_items').where({ client_id: a.accountId }).orderBy('id').select('created_at');
    // Microsecond timestamps from the database: "oldest first" must agree with creation time.
    const micros = await gw.db.raw(
      `SELECT (extract(epoch FROM created_at) * 1000000)::bigint AS us FROM watchlist_items WHERE client_id = ? ORDER BY id`,
      [a.accountId],
    );
    const us = micros.rows.map((x: { us: number }) => Number(x.us));
    expect(rows).toHaveLength(12);
    expect([...us].sort((x, y) => x - y)).toEqual(us);
  });
});

describe('GET /watchlist/{id}', () => {
  it('answers the item', async () => {
    const item = await createItem(gw.url, acct.key, { notes: 'get me' });
    const r = await call(gw.url, 'GET', `/watchlist/${item.id}`, { key: acct.key });
    expect(r.status).toBe(200);
    expect(expectItem(r.body)).toEqual(item);
  });

  it('answers 404 {error} for an id that was never assigned', async () => {
    const max = await gw.db('watchlist_items').max('id as m').first();
    const r = await call(gw.url, 'GET', `/watchlist/${Number(max?.m ?? 0) + 1_000_000}`, { key: acct.key });
    expectWatchlistError(r, 404);
  });

  it('answers the gateway 404 for a malformed id', async () => {
    for (const id of ['abc', '0', '-1', '1.5', '01', '12345678901234567']) {
      expectGatewayError(await call(gw.url, 'GET', `/watchlist/${id}`, { key: acct.key }), 404, 'not_found');
    }
  });
});

describe('PATCH /watchlist/{id}', () => {
  it('changes only the field it names, for every settable field', async () => {
    const item = await createItem(gw.url, acct.key);
    let current = item;
    for (const f of SETTABLE) {
      await sleep(2);
      const r = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { [f]: SAMPLE_VALUES[f] } });
      expect(r.status, `${f}: ${r.text}`).toBe(200);
      const next = expectItem(r.body);
      expect(next[f as keyof typeof next], f).toEqual(SAMPLE_VALUES[f]);
      // The health follows the item's state (paused while task_active is false), not the fields named.
      expect(without(next, f, 'updated_at', ...HEALTH_FIELDS), f).toEqual(without(current, f, 'updated_at', ...HEALTH_FIELDS));
      expect(next.check_status, f).toBe(next.task_active ? 'pending' : 'paused');
      expect(next.updated_at > current.updated_at, `${f}: updated_at must move forward`).toBe(true);
      expect(await getItem(gw.url, acct.key, item.id)).toEqual(next);
      current = next;
    }
    expect(current.created_at).toBe(item.created_at);
  });

  it('clears a nullable field with explicit null and leaves the others', async () => {
    const item = await createItem(gw.url, acct.key, SAMPLE_VALUES);
    let current = item;
    for (const f of NULLABLE) {
      const r = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { [f]: null } });
      expect(r.status, `${f}: ${r.text}`).toBe(200);
      const next = expectItem(r.body);
      expect(next[f], f).toBeNull();
      expect(without(next, f, 'updated_at')).toEqual(without(current, f, 'updated_at'));
      expect((await dbRow(gw.db, item.id))![f], f).toBeNull();
      current = next;
    }
  });

  it('changes several fields at once', async () => {
    const item = await createItem(gw.url, acct.key);
    const patch = { task_active: false, change_type: 'price_increase', muted_until: '2032-01-01T00:00:00+01:00', keywords: ['a'] };
    const r = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: patch });
    expect(r.status, r.text).toBe(200);
    const next = expectItem(r.body);
    expect(next.task_active).toBe(false);
    expect(next.change_type).toBe('price_increase');
    expect(next.muted_until).toBe('2031-12-31T23:00:00.000Z');
    expect(next.keywords).toEqual(['a']);
    expect(without(next, ...Object.keys(patch), 'updated_at', ...HEALTH_FIELDS)).toEqual(without(item, ...Object.keys(patch), 'updated_at', ...HEALTH_FIELDS));
    expect(next.check_status).toBe('paused');
  });

  it('moves between active and inactive (spec 3.1)', async () => {
    const item = await createItem(gw.url, acct.key);
    expect(item.task_active).toBe(true);
    const off = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { task_active: false } });
    expect(off.body.task_active).toBe(false);
    const on = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { task_active: true } });
    expect(on.body.task_active).toBe(true);
    expect(on.body.deleted).toBe(false);
  });

  it('leaves every field unchanged on an empty object', async () => {
    const item = await createItem(gw.url, acct.key, SAMPLE_VALUES);
    await sleep(5);
    const r = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: {} });
    expect(r.status, r.text).toBe(200);
    // Nothing changed, so nothing moves: not even updated_at.
    expect(expectItem(r.body)).toEqual(item);
    expect(await getItem(gw.url, acct.key, item.id)).toEqual(item);
  });

  it('answers 404 {error} for an id that does not exist', async () => {
    const max = await gw.db('watchlist_items').max('id as m').first();
    const r = await call(gw.url, 'PATCH', `/watchlist/${Number(max?.m ?? 0) + 1_000_000}`, { key: acct.key, body: { priority: 1 } });
    expectWatchlistError(r, 404);
  });
});

describe('DELETE /watchlist/{id}', () => {
  it('answers 204 with no body, then the item is gone from GET, PATCH, DELETE and the list', async () => {
    const keep = await createItem(gw.url, acct.key, { notes: 'keep' });
    const item = await createItem(gw.url, acct.key, { notes: 'delete me' });
    const r = await call(gw.url, 'DELETE', `/watchlist/${item.id}`, { key: acct.key });
    expect(r.status).toBe(204);
    expect(r.text).toBe('');
    expectWatchlistError(await call(gw.url, 'GET', `/watchlist/${item.id}`, { key: acct.key }), 404);
    expectWatchlistError(await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { priority: 3 } }), 404);
    expectWatchlistError(await call(gw.url, 'DELETE', `/watchlist/${item.id}`, { key: acct.key }), 404);
    const list = await call(gw.url, 'GET', '/watchlist', { key: acct.key });
    const ids = list.body.map((i: { id: number }) => i.id);
    expect(ids).not.toContain(item.id);
    expect(ids).toContain(keep.id);
  });

  it('soft-deletes: the row stays with deleted = true and its other values intact', async () => {
    const item = await createItem(gw.url, acct.key, SAMPLE_VALUES);
    const before = (await dbRow(gw.db, item.id))!;
    expect(before.deleted).toBe(false);
    expect((await call(gw.url, 'DELETE', `/watchlist/${item.id}`, { key: acct.key })).status).toBe(204);
    const after = (await dbRow(gw.db, item.id))!;
    expect(after).toBeDefined();
    expect(after.deleted).toBe(true);
    expect(after.deleted_at).toBeInstanceOf(Date);
    expect(without(after, 'deleted', 'deleted_at', 'updated_at')).toEqual(without(before, 'deleted', 'deleted_at', 'updated_at'));
    // A later PATCH attempt does not resurrect or alter it.
    await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { notes: 'zombie' } });
    expect(await dbRow(gw.db, item.id)).toEqual(after);
  });

  it('answers 404 {error} for an id that does not exist', async () => {
    const max = await gw.db('watchlist_items').max('id as m').first();
    expectWatchlistError(await call(gw.url, 'DELETE', `/watchlist/${Number(max?.m ?? 0) + 1_000_000}`, { key: acct.key }), 404);
  });
});

describe('GET /watchlist/health', () => {
  it('answers 200 {status: "ok"} with a key', async () => {
    const r = await call(gw.url, 'GET', '/watchlist/health', { key: acct.key });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ status: 'ok' });
  });

  it('answers 401 without a key, and with a rejected key', async () => {
    expectGatewayError(await call(gw.url, 'GET', '/watchlist/health'), 401, 'unauthenticated');
    expectGatewayError(await call(gw.url, 'GET', '/watchlist/health', { key: `tmk_${'x'.repeat(40)}` }), 401, 'invalid_credentials');
  });
});

describe('booleans', () => {
  it('stores each flag independently', async () => {
    for (const f of BOOLEANS) {
      const item = await createItem(gw.url, acct.key, { [f]: !SPEC_DEFAULTS[f] });
      for (const g of BOOLEANS) expect(item[g], `${f} set, ${g} read`).toBe(g === f ? !SPEC_DEFAULTS[g] : SPEC_DEFAULTS[g]);
    }
  });
});
