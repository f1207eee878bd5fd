// Input validation of POST and PATCH (spec 2.1, 4.3, 7.4): envelopes, body shapes, field
// types, range rules (also after merging a PATCH with stored values), body size, and values
// the database cannot store as sent. A rejected request never stores anything.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PLATFORMS } from '../../../src/platform/registry.ts';
import { call, newAccount, startTestGateway, type TestAccount, type TestGateway } from '../../support/harness.ts';
import {
  changeCount,
  createItem,
  dbRow,
  expectDetail,
  expectItem,
  expectWatchlistError,
  NON_NULLABLE_SETTABLE,
  pf03Event,
  rowCount,
  SERVER_ONLY,
  target,
  TARGET_ONLY,
} from './helpers.ts';

let gw: TestGateway;
let acct: TestAccount;

beforeAll(async () => {
  gw = await startTestGateway();
});

beforeEach(async () => {
  acct = await newAccount(gw.db);
});

afterAll(async () => {
  await gw?.close();
});

/** POST that must be refused with 400 {error} and leave no row and no change behind. */
async function rejectCreate(body: unknown, status = 400): Promise<string> {
  const rows = await rowCount(gw.db, acct.accountId);
  const changes = await changeCount(gw.db, acct.accountId);
  const r = await call(gw.url, 'POST', '/watchlist', { key: acct.key, body });
  const msg = expectWatchlistError(r, status);
  expect(await rowCount(gw.db, acct.accountId)).toBe(rows);
  expect(await changeCount(gw.db, acct.accountId)).toBe(changes);
  return msg;
}

/** PATCH that must be refused with 400 {error} and leave the stored row untouched. */
async function rejectPatch(id: number, body: unknown, status = 400): Promise<string> {
  const before = await dbRow(gw.db, id);
  const changes = await changeCount(gw.db, acct.accountId);
  const r = await call(gw.url, 'PATCH', `/watchlist/${id}`, { key: acct.key, body });
  const msg = expectWatchlistError(r, status);
  expect(await dbRow(gw.db, id)).toEqual(before);
  expect(await changeCount(gw.db, acct.accountId)).toBe(changes);
  return msg;
}

async function raw(method: string, path: string, text: string) {
  return call(gw.url, method, path, { key: acct.key, raw: text, headers: { 'content-type': 'application/json' } });
}

describe('required target fields', () => {
  it('refuses a create without website, event or region', async () => {
    for (const f of TARGET_ONLY) {
      const body = target();
      delete body[f];
      await rejectCreate(body);
    }
  });

  it('refuses an unknown platform, an empty event and a region the platform does not serve', async () => {
    await rejectCreate(target({ website: 'not_a_platform' }));
    await rejectCreate(target({ website: '' }));
    await rejectCreate(target({ event: '' }));
    await rejectCreate(target({ event: '   ' }));
    await rejectCreate(target({ region: '' }));
    await rejectCreate(target({ website: 'pf_05', region: 'de' }));
    await rejectCreate(target({ website: 'pf_03', region: 'u' }));
    await rejectCreate(target({ website: 'pf_03', region: 'u1' }));
  });

  it('refuses website, event and region in a PATCH, even unchanged', async () => {
    const item = await createItem(gw.url, acct.key);
    for (const f of TARGET_ONLY) {
      await rejectPatch(item.id, { [f]: item[f] });
      await rejectPatch(item.id, { [f]: 'other', priority: 5 });
    }
  });
});

// The monitors scrape what is stored, so an item's event passes the same check as the event_id
// of POST /events/scrape (spec 2.6 and the table in docs/live-availability.md, "Event ids"): format, the platform's own hosts only,
// and for pf_08 a domain that gives the region.
describe('event format per platform (spec 2.6)', () => {
  async function rejectEvent(body: Record<string, unknown>): Promise<void> {
    const msg = await rejectCreate(body);
    expect(msg, JSON.stringify(body)).toMatch(/^event: /);
  }

  it('refuses a bare id on a URL platform', async () => {
    await rejectEvent(target({ event: '42' }));
    await rejectEvent(target({ event: 'summer-open-air-4411' }));
    await rejectEvent(target({ event: 'pf03.example/e/42' }));
    await rejectEvent({ website: 'pf_07', event: '551902', region: 'us' });
    await rejectEvent({ website: 'pf_11', event: '70215', region: 'us' });
    await rejectEvent({ website: 'pf_02', event: 'ev-2024-0917', region: 'uk' });
  });

  it('refuses a URL on a bare-id platform, even the event’s own page', async () => {
    await rejectEvent({ website: 'pf_01', event: 'https://pf01.example/event/G5vYZ9fT1aB2cD3e', region: 'us' });
    await rejectEvent({ website: 'pf_05', event: 'https://www.pf05.example/7730021', region: 'it' });
    await rejectEvent({ website: 'pf_10', event: 'https://pf10.example/9b1f3c2e-4d5a-4f6b-8c7d-0e1f2a3b4c5d', region: 'us' });
  });

  it('refuses a bare id of the wrong shape', async () => {
    await rejectEvent({ website: 'pf_01', event: 'G5vYZ9fT1aB2cD3', region: 'us' });
    await rejectEvent({ website: 'pf_01', event: 'G5vYZ9fT-aB2cD3e', region: 'us' });
    await rejectEvent({ website: 'pf_05', event: 'abc123', region: 'it' });
    await rejectEvent({ website: 'pf_10', event: '9B1F3C2E-4D5A-4F6B-8C7D-0E1F2A3B4C5D', region: 'us' });
  });

  it('refuses a URL on another platform’s host, an internal address or a look-alike host', async () => {
    for (const event of [
      'https://www.pf07.example/event/arena-tour-551902',
      'https://www.pf02.example/uk/event/ev-2024-0917',
      'http://127.0.0.1/e/1',
      'http://localhost/e/1',
      'http://[::1]/e/1',
      'http://169.254.169.254/e/1',
      'https://pf03.example.evil.test/e/1',
      'https://evil.test/pf03.example/e/1',
      'https://evil.test/e/1?u=https://pf03.example/e/1',
    ]) {
      await rejectEvent(target({ event }));
    }
    await rejectEvent({ website: 'pf_11', event: 'http://127.0.0.1/event/70215', region: 'us' });
  });

  it('refuses a URL on the platform’s host with credentials, a port, another scheme or another path', async () => {
    for (const event of [
      'https://user:secret@pf03.example/e/42',
      'https://pf03.example@127.0.0.1/e/42',
      'https://pf03.example:8443/e/42',
      'ftp://pf03.example/e/42',
      'file:///etc/passwd',
      'javascript:alert(1)',
      'https://pf03.example/event/42',
      'https://pf03.example/e/42/../../admin',
      'https://pf03.example/e/',
    ]) {
      await rejectEvent(target({ event }));
    }
  });

  it('takes a pf_08 region from the URL’s domain, not refusing a body region that differs (pf08-region.test.ts)', async () => {
    const other = await createItem(gw.url, acct.key, { website: 'pf_08', event: 'https://pf08.example.com.au/event/SYD-20417', region: 'nz' });
    expect(other.region).toBe('au');
    const ok = await createItem(gw.url, acct.key, { website: 'pf_08', event: 'https://pf08.example.co.nz/event/AKL-7', region: 'NZ' });
    expect(ok.region).toBe('nz');
  });

  // What GET /events/platforms advertises as each platform's example, with a region it serves.
  const SERVED_REGION: Record<string, string> = {
    pf_01: 'us',
    pf_02: 'uk',
    pf_03: 'us',
    pf_04: 'de',
    pf_05: 'it',
    pf_06: 'fr',
    pf_07: 'uk',
    pf_08: 'au',
    pf_09: 'cz',
    pf_10: 'us',
    pf_11: 'us',
  };

  it('accepts the example event of every platform, stored as sent (trimmed)', async () => {
    expect(Object.keys(SERVED_REGION).sort()).toEqual(Object.keys(PLATFORMS).sort());
    for (const [website, info] of Object.entries(PLATFORMS)) {
      const example = info.event_id_example;
      for (const sent of [example, ` ${example}\n`]) {
        const r = await call(gw.url, 'POST', '/watchlist', { key: acct.key, body: { website, event: sent, region: SERVED_REGION[website] } });
        expect(r.status, `${website} ${JSON.stringify(sent)}: ${r.text}`).toBe(201);
        const item = expectItem(r.body);
        expect(item.event).toBe(example);
        expect((await dbRow(gw.db, item.id))!.event).toBe(example);
      }
    }
  });
});

describe('server-assigned fields', () => {
  it('refuses each of them in a POST', async () => {
    for (const f of SERVER_ONLY) {
      const value = f === 'deleted' ? false : f.endsWith('_at') ? new Date().toISOString() : 1;
      await rejectCreate({ ...target(), [f]: value });
    }
  });

  it('refuses each of them in a PATCH', async () => {
    const item = await createItem(gw.url, acct.key);
    for (const f of SERVER_ONLY) await rejectPatch(item.id, { [f]: item[f] });
    await rejectPatch(item.id, { deleted: true });
  });
});

describe('unknown fields', () => {
  it('are refused with {error} on POST and PATCH', async () => {
    const item = await createItem(gw.url, acct.key);
    for (const extra of [{ colour: 'red' }, { Priority: 1 }, { 'priority ': 1 }, { __proto__x: 1 }, { deleted_at: null }]) {
      await rejectCreate({ ...target(), ...extra });
      await rejectPatch(item.id, extra);
    }
    // A JSON key spelt "__proto__" is a field like any other, and unknown.
    const body = JSON.stringify({ ...target() }).replace(/^\{/, '{"__proto__":{"priority":9},');
    const rows = await rowCount(gw.db, acct.accountId);
    expectWatchlistError(await raw('POST', '/watchlist', body), 400);
    expect(await rowCount(gw.db, acct.accountId)).toBe(rows);
  });
});

describe('field types', () => {
  const wrong: Record<string, unknown[]> = {
    min_price_filter: ['10', true, [], {}, -1],
    max_price_filter: ['10', false, -0.01],
    min_avg_price_threshold: ['1', {}],
    max_avg_price_threshold: [[1], -5],
    stock_threshold_filter: [1.5, '1', -1, true],
    stock_threshold_filter_max: [2.25, '2', -1],
    seat_quantity: [0, 1.5, '2', null, -1, 101],
    priority: [1.5, '1', null, -1, 1001],
    section: [1, true, [], '', {}],
    keywords: ['vip', [1], [''], {}, [null], 5],
    date_filter: ['2030-01-01', [], { from: 'tomorrow' }, { from: '2030-02-30' }, { to: 20300101 }, { from: '2030-01-01', until: '2030-02-01' }],
    row_filter: ['A', [1], [''], {}],
    change_type: ['stock_decrease', 'STOCK_INCREASE', '', 1, true],
    standard_tickets: ['true', 1, 0, null],
    resale_tickets: ['false', null],
    general_admission_tickets: [0, null],
    platinum_tickets: ['yes', null],
    no_restricted_view: [[], null],
    no_accessibility: [{}, null],
    no_presale: [1, null],
    auto_add_to_watchlist: ['', null],
    task_active: ['false', 0, null],
    muted_until: ['tomorrow', '2030-01-01', '2030-01-01T00:00:00', '2030-13-01T00:00:00Z', 1893456000, true],
    mb_did: [5, '', [], true],
    webhook_setting_id: ['1', 1.5, 0, -1, true],
    role_id: ['2', 2.5, 0, '1234567890123456', '123456789012345678901', 2 ** 53],
    cooldown_seconds: [-1, 86_401, 1.5, '60', null, true],
    website_id: ['3', -3, 0],
    notes: [7, [], {}, false],
    website: [3, null, ['pf_01'], 'PF_01'],
    event: [3, null, {}],
    region: [3, null, ['us']],
  };

  for (const [field, values] of Object.entries(wrong)) {
    it(`refuses wrong values of ${field} on POST${(TARGET_ONLY as readonly string[]).includes(field) ? '' : ' and PATCH'}`, async () => {
      const item = await createItem(gw.url, acct.key);
      for (const v of values) {
        const msg = await rejectCreate({ ...target(), [field]: v });
        expect(msg, JSON.stringify(v)).toContain(field);
        if (!(TARGET_ONLY as readonly string[]).includes(field)) await rejectPatch(item.id, { [field]: v });
      }
    });
  }

  it('refuses null for every non-nullable settable field', async () => {
    const item = await createItem(gw.url, acct.key);
    for (const f of NON_NULLABLE_SETTABLE) {
      await rejectCreate({ ...target(), [f]: null });
      await rejectPatch(item.id, { [f]: null });
    }
  });

  it('keeps the first problem when several fields are wrong, and stores nothing', async () => {
    await rejectCreate({ ...target(), priority: 'high', seat_quantity: 0, colour: 'red' });
  });
});

describe('range rules', () => {
  const conflicts: Record<string, unknown>[] = [
    { min_price_filter: 50, max_price_filter: 49.99 },
    { min_avg_price_threshold: 10.01, max_avg_price_threshold: 10 },
    { stock_threshold_filter: 5, stock_threshold_filter_max: 4 },
    { date_filter: { from: '2030-02-02', to: '2030-02-01' } },
    { date_filter: { from: '2031-01-01', to: '2030-12-31' } },
  ];

  it('refuses min above max on create', async () => {
    for (const c of conflicts) await rejectCreate({ ...target(), ...c });
  });

  it('accepts the same pairs when ordered or equal', async () => {
    await createItem(gw.url, acct.key, { min_price_filter: 49.99, max_price_filter: 50 });
    await createItem(gw.url, acct.key, { min_price_filter: 50, max_price_filter: 50 });
    await createItem(gw.url, acct.key, { stock_threshold_filter: 4, stock_threshold_filter_max: 4 });
    await createItem(gw.url, acct.key, { date_filter: { from: '2030-02-01', to: '2030-02-01' } });
    await createItem(gw.url, acct.key, { min_price_filter: 100, max_price_filter: null });
  });

  it('refuses a stock maximum below the default minimum of 1 on create', async () => {
    await rejectCreate({ ...target(), stock_threshold_filter_max: 0 });
  });

  it('refuses a PATCH whose conflict only appears merged with the stored values', async () => {
    const item = await createItem(gw.url, acct.key, {
      min_price_filter: 10,
      max_price_filter: 50,
      min_avg_price_threshold: 20,
      max_avg_price_threshold: 30,
      stock_threshold_filter: 2,
      stock_threshold_filter_max: 8,
    });
    await rejectPatch(item.id, { min_price_filter: 60 });
    await rejectPatch(item.id, { max_price_filter: 9.99 });
    await rejectPatch(item.id, { min_avg_price_threshold: 31 });
    await rejectPatch(item.id, { max_avg_price_threshold: 19 });
    await rejectPatch(item.id, { stock_threshold_filter: 9 });
    await rejectPatch(item.id, { stock_threshold_filter_max: 1 });
    await rejectPatch(item.id, { min_price_filter: 60, notes: 'would be lost too' });
    // Moving both bounds together, or clearing the other bound, is fine.
    const both = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { min_price_filter: 60, max_price_filter: 70 } });
    expect(both.status, both.text).toBe(200);
    expect([both.body.min_price_filter, both.body.max_price_filter]).toEqual([60, 70]);
    const cleared = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { stock_threshold_filter_max: null } });
    expect(cleared.status).toBe(200);
    const up = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { stock_threshold_filter: 500 } });
    expect(up.status, up.text).toBe(200);
    expect(up.body.stock_threshold_filter).toBe(500);
  });

  it('refuses a stock maximum under the stored default minimum, and accepts it once the minimum is cleared', async () => {
    const item = await createItem(gw.url, acct.key);
    await rejectPatch(item.id, { stock_threshold_filter_max: 0 });
    const ok = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, {
      key: acct.key,
      body: { stock_threshold_filter: null, stock_threshold_filter_max: 0 },
    });
    expect(ok.status, ok.text).toBe(200);
  });

  it('refuses a date_filter PATCH that is reversed', async () => {
    const item = await createItem(gw.url, acct.key, { date_filter: { from: '2030-01-01', to: '2030-06-01' } });
    await rejectPatch(item.id, { date_filter: { from: '2030-07-01', to: '2030-06-01' } });
  });
});

describe('bodies that are not a JSON object', () => {
  it('answers {detail} for invalid JSON, on POST and PATCH, storing nothing', async () => {
    const item = await createItem(gw.url, acct.key);
    const before = await dbRow(gw.db, item.id);
    for (const text of ['{', '{"website": "pf_03",}', "{'a': 1}", 'not json', '{"a":1}}', '[1,]', 'nul', '\u0000']) {
      const rows = await rowCount(gw.db, acct.accountId);
      expectDetail(await raw('POST', '/watchlist', text));
      expect(await rowCount(gw.db, acct.accountId)).toBe(rows);
      expectDetail(await raw('PATCH', `/watchlist/${item.id}`, text));
    }
    expect(await dbRow(gw.db, item.id)).toEqual(before);
  });

  it('answers {error} for JSON that is not an object, and for an empty body', async () => {
    const item = await createItem(gw.url, acct.key);
    const before = await dbRow(gw.db, item.id);
    for (const text of ['[]', '[{"website":"pf_03","event":"https://pf03.example/e/1","region":"us"}]', '"a string"', '42', 'true', 'null', '', '   ']) {
      const rows = await rowCount(gw.db, acct.accountId);
      expectWatchlistError(await raw('POST', '/watchlist', text), 400);
      expect(await rowCount(gw.db, acct.accountId)).toBe(rows);
      expectWatchlistError(await raw('PATCH', `/watchlist/${item.id}`, text), 400);
    }
    // No body at all (no Content-Length, no Content-Type).
    expectWatchlistError(await call(gw.url, 'POST', '/watchlist', { key: acct.key }), 400);
    expectWatchlistError(await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key }), 400);
    expect(await dbRow(gw.db, item.id)).toEqual(before);
  });
});

describe('body size', () => {
  it('answers 413 {error} for a body over the limit, and accepts one exactly at it', async () => {
    const limit = gw.services.config.MAX_BODY_BYTES;
    const json = JSON.stringify(target());
    const atLimit = json.slice(0, -1) + ' '.repeat(limit - json.length) + '}';
    expect(Buffer.byteLength(atLimit)).toBe(limit);
    const ok = await raw('POST', '/watchlist', atLimit);
    expect(ok.status, ok.text).toBe(201);
    expectItem(ok.body);

    const rows = await rowCount(gw.db, acct.accountId);
    const over = json.slice(0, -1) + ' '.repeat(limit - json.length + 1) + '}';
    expectWatchlistError(await raw('POST', '/watchlist', over), 413);
    expectWatchlistError(await raw('PATCH', `/watchlist/${ok.body.id}`, over), 413);
    expect(await rowCount(gw.db, acct.accountId)).toBe(rows);
  });

  it('answers 413 for a streamed body without Content-Length', async () => {
    const limit = gw.services.config.MAX_BODY_BYTES;
    const chunk = new TextEncoder().encode(' '.repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent > limit + chunk.length) {
          controller.close();
          return;
        }
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });
    const res = await fetch(`${gw.url}/watchlist`, {
      method: 'POST',
      headers: { apikey: acct.key, 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit & { duplex: 'half' }).catch((err: Error) => err);
    // The server may answer before it has read the whole upload; either way it must be a 413.
    if (res instanceof Error) throw res;
    expect(res.status).toBe(413);
    expect(Object.keys(await res.json())).toEqual(['error']);
    // The client's connection pool must still work: the next requests are answered promptly.
    const started = Date.now();
    for (let i = 0; i < 3; i++) expect((await call(gw.url, 'GET', '/watchlist', { key: acct.key })).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('refuses roles_json serialising to more than 16 KiB', async () => {
    const big = { blob: 'x'.repeat(17_000) };
    await rejectCreate({ ...target(), roles_json: big });
    const item = await createItem(gw.url, acct.key, { roles_json: { blob: 'x'.repeat(16_000) } });
    await rejectPatch(item.id, { roles_json: big });
  });
});

// Values the types allow but PostgreSQL cannot store as sent: each must be a 400 (or be stored
// exactly), never a 500 and never a silent change.
describe('values at the edge of what is stored', () => {
  it('refuses NUL characters in text fields instead of failing in the database', async () => {
    const item = await createItem(gw.url, acct.key);
    for (const [f, v] of Object.entries({
      // A URL parser drops a trailing NUL, so only the text check stands between it and the database.
      event: `${pf03Event('evt')}\u0000`,
      section: 'A\u0000B',
      mb_did: '\u0000',
      notes: 'x\u0000y',
      keywords: ['a\u0000'],
      row_filter: ['\u0000'],
    })) {
      await rejectCreate({ ...target(), [f]: v });
      if (f !== 'event') await rejectPatch(item.id, { [f]: v });
    }
  });

  it('refuses NUL characters and unpaired surrogates anywhere in roles_json', async () => {
    const item = await createItem(gw.url, acct.key);
    const bad = ['\u0000', { k: 'a\u0000' }, { 'a\u0000': 1 }, ['ok', ['\ud800']], { x: '\udfff' }, { '\ud83d': true }];
    for (const v of bad) {
      await rejectCreate({ ...target(), roles_json: v });
      await rejectPatch(item.id, { roles_json: v });
    }
    // Paired surrogates (astral characters) are fine.
    const ok = await createItem(gw.url, acct.key, { roles_json: { '😀': '𝄞' }, notes: '😀' });
    expect(ok.roles_json).toEqual({ '😀': '𝄞' });
    expect(ok.notes).toBe('😀');
  });

  it('refuses unpaired surrogates in text fields instead of storing a replacement character', async () => {
    for (const [f, v] of Object.entries({ notes: 'a\ud800b', section: '\udc00', keywords: ['\ud83d'], mb_did: 'x\udfff' })) {
      await rejectCreate({ ...target(), [f]: v });
    }
  });

  it('keeps a roles_json member named "__proto__"', async () => {
    const body = JSON.stringify(target()).replace(/\}$/, ',"roles_json":{"__proto__":{"admin":true},"b":2}}');
    const r = await raw('POST', '/watchlist', body);
    expect(r.status, r.text).toBe(201);
    expect(r.text).toContain('"__proto__"');
    const back = JSON.parse(r.text);
    expect(Object.keys(back.roles_json).sort()).toEqual(['__proto__', 'b']);
    const row = await dbRow(gw.db, back.id);
    expect(Object.keys(row!.roles_json as object).sort()).toEqual(['__proto__', 'b']);
  });

  it('refuses roles_json nested too deeply to handle, instead of crashing', async () => {
    for (const depth of [1_000, 100_000]) {
      const deep = '['.repeat(depth) + ']'.repeat(depth);
      const body = JSON.stringify(target()).replace(/\}$/, `,"roles_json":${deep}}`);
      const rows = await rowCount(gw.db, acct.accountId);
      const r = await raw('POST', '/watchlist', body);
      expect(r.status, r.text.slice(0, 200)).toBeLessThan(500);
      expect(r.status).toBe(400);
      expect(await rowCount(gw.db, acct.accountId)).toBe(rows);
    }
  });

  it('accepts roles_json nested up to the documented 100 levels and refuses 101', async () => {
    const nest = (depth: number) => JSON.parse('['.repeat(depth) + '{"x":1}' + ']'.repeat(depth));
    // 99 arrays around one object: 100 levels of arrays and objects.
    const ok = await createItem(gw.url, acct.key, { roles_json: nest(99) });
    expect(ok.roles_json).toEqual(nest(99));
    await rejectCreate({ ...target(), roles_json: nest(100) });
    await rejectPatch(ok.id, { roles_json: nest(100) });
  });

  it('refuses money the price columns cannot hold exactly', async () => {
    const item = await createItem(gw.url, acct.key);
    for (const v of [1.005, 0.1 + 0.2, 1e-7, 10_000_000.01, 10_000_001, 1e300]) {
      await rejectCreate({ ...target(), min_price_filter: v });
      await rejectPatch(item.id, { max_avg_price_threshold: v });
    }
    const top = await createItem(gw.url, acct.key, { max_price_filter: 10_000_000, min_price_filter: 0.01 });
    expect([top.min_price_filter, top.max_price_filter]).toEqual([0.01, 10_000_000]);
    const cents = await createItem(gw.url, acct.key, { max_price_filter: 9_999_999.99 });
    expect(cents.max_price_filter).toBe(9_999_999.99);
  });

  it('refuses muted_until the database cannot store, or that leaves the four-digit-year range', async () => {
    const item = await createItem(gw.url, acct.key);
    for (const v of ['0000-01-01T00:00:00Z', '2030-01-01T00:00:00+16:00', '2030-01-01T00:00:00-23:59', '9999-12-31T23:59:59-05:00', '0001-01-01T00:00:00+01:00']) {
      await rejectCreate({ ...target(), muted_until: v });
      await rejectPatch(item.id, { muted_until: v });
    }
    const edge = await createItem(gw.url, acct.key, { muted_until: '2030-01-01T00:00:00+14:00' });
    expect(edge.muted_until).toBe('2029-12-31T10:00:00.000Z');
  });

  it('accepts the largest documented values of the bounded integers', async () => {
    const item = await createItem(gw.url, acct.key, {
      stock_threshold_filter: 1_000_000,
      stock_threshold_filter_max: 1_000_000,
      seat_quantity: 100,
      priority: 1000,
      role_id: 1,
      website_id: 2 ** 40,
    });
    expect(item.website_id).toBe(2 ** 40);
    expect(item.seat_quantity).toBe(100);
  });
});
