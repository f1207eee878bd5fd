// `role_id` holds a Discord role id exactly (issue 24): a string of 17-20 digits (a snowflake,
// past what a JSON number holds) or an integer up to 2^53 - 1, each returned in the form it was
// sent, through POST, GET, PATCH and the list, and stored digit for digit. Anything else is a
// 400 in the watchlist envelope, never a 500, and stores nothing. Role ids inside roles_json
// that arrive as numbers past 2^53 - 1 (already rounded by JSON) are refused the same way.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, newAccount, startTestGateway, type TestAccount, type TestGateway } from '../../support/harness.ts';
import { changeCount, createItem, dbRow, expectItem, expectWatchlistError, getItem, rowCount, target } from './helpers.ts';

let gw: TestGateway;
let acct: TestAccount;

beforeAll(async () => {
  gw = await startTestGateway();
  acct = await newAccount(gw.db);
});

afterAll(async () => {
  await gw?.close();
});

/** Digits of a snowflake: 17 to 20, the first not 0. */
const snowflake = fc.integer({ min: 17, max: 20 }).chain((n) =>
  fc
    .tuple(fc.constantFrom(...'123456789'), fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: n - 1, maxLength: n - 1 }))
    .map(([first, rest]) => first + rest),
);

async function refusedCreate(body: Record<string, unknown>): Promise<string> {
  const rows = await rowCount(gw.db, acct.accountId);
  const changes = await changeCount(gw.db, acct.accountId);
  const msg = expectWatchlistError(await call(gw.url, 'POST', '/watchlist', { key: acct.key, body }), 400);
  expect(await rowCount(gw.db, acct.accountId)).toBe(rows);
  expect(await changeCount(gw.db, acct.accountId)).toBe(changes);
  return msg;
}

async function refusedPatch(id: number, body: Record<string, unknown>): Promise<string> {
  const before = await dbRow(gw.db, id);
  const msg = expectWatchlistError(await call(gw.url, 'PATCH', `/watchlist/${id}`, { key: acct.key, body }), 400);
  expect(await dbRow(gw.db, id)).toEqual(before);
  return msg;
}

describe('role_id as a Discord snowflake', () => {
  it('round-trips "112233445566778899" through POST, GET, the list and PATCH, stored digit for digit', async () => {
    const item = await createItem(gw.url, acct.key, { role_id: '112233445566778899' });
    expect(item.role_id).toBe('112233445566778899');
    expect((await getItem(gw.url, acct.key, item.id)).role_id).toBe('112233445566778899');
    const list = await call(gw.url, 'GET', '/watchlist', { key: acct.key });
    expect(list.body.find((i: { id: number }) => i.id === item.id).role_id).toBe('112233445566778899');
    expect((await dbRow(gw.db, item.id))!.role_id).toBe('112233445566778899');

    // The largest 20-digit id, past bigint's 9223372036854775807 too.
    const r = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { role_id: '99999999999999999999' } });
    expect(r.status, r.text).toBe(200);
    expect(expectItem(r.body).role_id).toBe('99999999999999999999');
    expect((await getItem(gw.url, acct.key, item.id)).role_id).toBe('99999999999999999999');
    // The text of the answer carries the digits, not a number JSON would round.
    expect(r.text).toContain('"role_id":"99999999999999999999"');
  });

  it('returns an integer as an integer and a string as a string', async () => {
    const int = await createItem(gw.url, acct.key, { role_id: Number.MAX_SAFE_INTEGER });
    expect(int.role_id).toBe(Number.MAX_SAFE_INTEGER);
    const small = await createItem(gw.url, acct.key, { role_id: 1 });
    expect(small.role_id).toBe(1);
    const r = await call(gw.url, 'PATCH', `/watchlist/${small.id}`, { key: acct.key, body: { role_id: '10000000000000000' } });
    expect(r.body.role_id).toBe('10000000000000000');
    const back = await call(gw.url, 'PATCH', `/watchlist/${small.id}`, { key: acct.key, body: { role_id: 42 } });
    expect(back.body.role_id).toBe(42);
    const cleared = await call(gw.url, 'PATCH', `/watchlist/${small.id}`, { key: acct.key, body: { role_id: null } });
    expect(cleared.body.role_id).toBeNull();
  });

  it('round-trips any 17-20 digit string exactly (property)', async () => {
    const item = await createItem(gw.url, acct.key);
    await fc.assert(
      fc.asyncProperty(snowflake, fc.boolean(), async (id, viaPatch) => {
        const r = viaPatch
          ? await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { role_id: id } })
          : await call(gw.url, 'POST', '/watchlist', { key: acct.key, body: target({ role_id: id }) });
        expect(r.status, r.text).toBe(viaPatch ? 200 : 201);
        expect(r.body.role_id).toBe(id);
        const read = await call(gw.url, 'GET', `/watchlist/${r.body.id}`, { key: acct.key });
        expect(read.body.role_id).toBe(id);
        expect((await dbRow(gw.db, r.body.id))!.role_id).toBe(id);
        if (!viaPatch) await call(gw.url, 'DELETE', `/watchlist/${r.body.id}`, { key: acct.key });
      }),
      { numRuns: 40 },
    );
  }, 60_000);
});

describe('malformed role ids', () => {
  const fixed: unknown[] = [
    '1234567890123456', // 16 digits as a string: an integer that small is sent as a number
    '123456789012345678901', // 21 digits
    '+112233445566778899',
    '-112233445566778899',
    ' 112233445566778899',
    '112233445566778899 ',
    '01122334455667788',
    '1122334455667788x9',
    '1.12233445566778899e17',
    '１１２２３３４４５５６６７７８８９９', // full-width digits
    '',
    '12',
    2 ** 53,
    Number.MAX_SAFE_INTEGER + 2,
    1e20,
    0,
    -1,
    1.5,
    true,
    [],
    {},
    ['112233445566778899'],
  ];

  it('are refused with 400 {error} naming role_id on POST and PATCH, storing nothing', async () => {
    const item = await createItem(gw.url, acct.key, { role_id: 7 });
    for (const v of fixed) {
      expect(await refusedCreate(target({ role_id: v })), JSON.stringify(v)).toMatch(/^role_id: /);
      expect(await refusedPatch(item.id, { role_id: v }), JSON.stringify(v)).toMatch(/^role_id: /);
    }
  });

  it('112233445566778899 sent as a JSON number is refused, with the advice to send a string', async () => {
    const raw = JSON.stringify(target()).replace(/\}$/, ',"role_id":112233445566778899}');
    const r = await call(gw.url, 'POST', '/watchlist', { key: acct.key, raw, headers: { 'content-type': 'application/json' } });
    expect(expectWatchlistError(r, 400)).toMatch(/send them as strings/);
  });

  it('anything that is not a snowflake string or a safe positive integer gets a 400, never a 500 (property)', async () => {
    const item = await createItem(gw.url, acct.key);
    const digits = (min: number, max: number) => fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: min, maxLength: max });
    const malformed = fc.oneof(
      digits(0, 16),
      digits(21, 40),
      fc.tuple(fc.constantFrom('+', '-', ' ', '0', 'x', '\u0000'), snowflake).map(([p, s]) => p + s),
      fc.tuple(snowflake, fc.constantFrom(' ', '.0', 'n', '\n')).map(([s, t]) => s + t),
      fc.string({ maxLength: 24 }).filter((s) => !/^[1-9][0-9]{16,19}$/.test(s)),
      fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer({ max: 0 })).filter((n) => !(Number.isSafeInteger(n) && n >= 1)),
      fc.constantFrom(2 ** 53, 2 ** 64, 1e20, Number.MAX_VALUE),
    );
    await fc.assert(
      fc.asyncProperty(malformed, fc.boolean(), async (v, viaPatch) => {
        const r = viaPatch
          ? await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { role_id: v } })
          : await call(gw.url, 'POST', '/watchlist', { key: acct.key, body: target({ role_id: v }) });
        expect(expectWatchlistError(r, 400), JSON.stringify(v)).toMatch(/^role_id: /);
      }),
      { numRuns: 100 },
    );
    expect((await getItem(gw.url, acct.key, item.id)).role_id).toBeNull();
  }, 60_000);
});

describe('role ids in roles_json', () => {
  it('keeps ids sent as strings exactly, and refuses ids sent as numbers past 2^53 - 1', async () => {
    const ok = await createItem(gw.url, acct.key, { roles_json: { roles: ['112233445566778899', { id: '99999999999999999999' }] } });
    expect(ok.roles_json).toEqual({ roles: ['112233445566778899', { id: '99999999999999999999' }] });
    for (const shape of ['[%]', '{"roles":[%]}', '{"role_ids":[1,%]}', '[{"id":%}]']) {
      const raw = JSON.stringify(target()).replace(/\}$/, `,"roles_json":${shape.replace('%', '112233445566778899')}}`);
      const r = await call(gw.url, 'POST', '/watchlist', { key: acct.key, raw, headers: { 'content-type': 'application/json' } });
      expect(expectWatchlistError(r, 400), shape).toMatch(/^roles_json: .*send them as strings/);
    }
    const patched = await call(gw.url, 'PATCH', `/watchlist/${ok.id}`, { key: acct.key, body: { roles_json: [2 ** 60] } });
    expect(expectWatchlistError(patched, 400)).toMatch(/^roles_json: /);
    // Outside the places role ids are read, roles_json stays opaque: any number is kept.
    const opaque = await createItem(gw.url, acct.key, { roles_json: { other: [2 ** 60], roles: [Number.MAX_SAFE_INTEGER] } });
    expect(opaque.roles_json).toEqual({ other: [2 ** 60], roles: [Number.MAX_SAFE_INTEGER] });
  });
});
