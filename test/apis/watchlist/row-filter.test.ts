// `row_filter` only where offers carry rows (issue 24): spec 2.6 gives pf_01 and pf_02 seat maps
// (SeatMapSections, whose seats have rows); the other nine platforms list offers by section
// (OfferSections), which never have a row, so a non-empty row_filter there would match nothing
// and the item would never notify. It is refused with 400 {error} naming the platform, on POST
// and on PATCH; null and [] are accepted everywhere.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORMS } from '../../../src/platform/registry.ts';
import { call, newAccount, startTestGateway, type TestAccount, type TestGateway } from '../../support/harness.ts';
import { changeCount, createItem, dbRow, expectItem, expectWatchlistError, rowCount } from './helpers.ts';

let gw: TestGateway;
let acct: TestAccount;

beforeAll(async () => {
  gw = await startTestGateway();
  acct = await newAccount(gw.db);
});

afterAll(async () => {
  await gw?.close();
});

/** Spec 2.6's sections_type per platform, restated so a drift in the registry shows. */
const SEAT_MAPS = ['pf_01', 'pf_02'];
const OFFER_LISTS = ['pf_03', 'pf_04', 'pf_05', 'pf_06', 'pf_07', 'pf_08', 'pf_09', 'pf_10', 'pf_11'];

/** A valid target of each platform: its registry example, with a region it serves. */
const REGION: Record<string, string> = { pf_01: 'us', pf_02: 'uk', pf_03: 'us', pf_04: 'de', pf_05: 'it', pf_06: 'fr', pf_07: 'uk', pf_08: 'au', pf_09: 'cz', pf_10: 'us', pf_11: 'us' };
const targetOf = (website: string) => ({ website, event: PLATFORMS[website as keyof typeof PLATFORMS].event_id_example, region: REGION[website] });

async function post(body: Record<string, unknown>) {
  return call(gw.url, 'POST', '/watchlist', { key: acct.key, body });
}

async function refusedCreate(body: Record<string, unknown>): Promise<string> {
  const rows = await rowCount(gw.db, acct.accountId);
  const changes = await changeCount(gw.db, acct.accountId);
  const msg = expectWatchlistError(await post(body), 400);
  expect(await rowCount(gw.db, acct.accountId)).toBe(rows);
  expect(await changeCount(gw.db, acct.accountId)).toBe(changes);
  return msg;
}

async function refusedPatch(id: number, body: Record<string, unknown>): Promise<string> {
  const before = await dbRow(gw.db, id);
  const changes = await changeCount(gw.db, acct.accountId);
  const msg = expectWatchlistError(await call(gw.url, 'PATCH', `/watchlist/${id}`, { key: acct.key, body }), 400);
  expect(await dbRow(gw.db, id)).toEqual(before);
  expect(await changeCount(gw.db, acct.accountId)).toBe(changes);
  return msg;
}

describe('row_filter at create', () => {
  it('covers the eleven platforms of spec 2.6', () => {
    expect([...SEAT_MAPS, ...OFFER_LISTS].sort()).toEqual(Object.keys(PLATFORMS).sort());
    for (const p of SEAT_MAPS) expect(PLATFORMS[p as keyof typeof PLATFORMS].sections_type).toBe('SeatMapSections');
  });

  it('is accepted on the platforms with seat maps', async () => {
    for (const p of SEAT_MAPS) {
      const r = await post({ ...targetOf(p), row_filter: ['A', '12'] });
      expect(r.status, `${p}: ${r.text}`).toBe(201);
      expect(expectItem(r.body).row_filter).toEqual(['A', '12']);
    }
  });

  it('is refused, naming the platform, on every platform without rows; null and [] are accepted there', async () => {
    for (const p of OFFER_LISTS) {
      const msg = await refusedCreate({ ...targetOf(p), row_filter: ['A'] });
      expect(msg).toMatch(/^row_filter: /);
      expect(msg).toContain(p);
      for (const empty of [null, []]) {
        const r = await post({ ...targetOf(p), row_filter: empty });
        expect(r.status, `${p} ${JSON.stringify(empty)}: ${r.text}`).toBe(201);
        expect(r.body.row_filter).toEqual(empty);
      }
    }
  });
});

describe('row_filter at PATCH', () => {
  it('is refused on an item of a platform without rows, alone or with other fields, and changes nothing', async () => {
    const item = await createItem(gw.url, acct.key, targetOf('pf_03'));
    expect(await refusedPatch(item.id, { row_filter: ['A'] })).toContain('pf_03');
    expect(await refusedPatch(item.id, { row_filter: ['A', 'B'], notes: 'would be lost too', priority: 3 })).toContain('pf_03');
    for (const empty of [[], null]) {
      const r = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { row_filter: empty, notes: 'fine' } });
      expect(r.status, r.text).toBe(200);
      expect(r.body.row_filter).toEqual(empty);
    }
  });

  it('is accepted on an item of a platform with rows, and can be cleared', async () => {
    const item = await createItem(gw.url, acct.key, targetOf('pf_01'));
    const set = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { row_filter: ['AA'] } });
    expect(set.status, set.text).toBe(200);
    expect(set.body.row_filter).toEqual(['AA']);
    const cleared = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { row_filter: [] } });
    expect(cleared.body.row_filter).toEqual([]);
  });

  it('cannot be slipped past by changing the platform: website is not patchable', async () => {
    const item = await createItem(gw.url, acct.key, targetOf('pf_03'));
    await refusedPatch(item.id, { website: 'pf_01', row_filter: ['A'] });
  });

  it('leaves other changes to an item stored with a row_filter before the rule possible', async () => {
    const item = await createItem(gw.url, acct.key, targetOf('pf_05'));
    // As an item written before issue 24 could be.
    await gw.db('watchlist_items').where({ id: item.id }).update({ row_filter: JSON.stringify(['A']) });
    const paused = await call(gw.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { task_active: false } });
    expect(paused.status, paused.text).toBe(200);
    expect(await refusedPatch(item.id, { row_filter: ['B'] })).toContain('pf_05');
  });
});

describe('row_filter against every platform (property)', () => {
  it('a non-empty row_filter is accepted exactly on pf_01 and pf_02, at create and at PATCH', async () => {
    const items = new Map<string, number>();
    for (const p of [...SEAT_MAPS, ...OFFER_LISTS]) items.set(p, (await createItem(gw.url, acct.key, targetOf(p))).id);
    const rows = fc.array(fc.string({ unit: fc.constantFrom(...'ABCZ019'), minLength: 1, maxLength: 3 }), { maxLength: 4 });
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...SEAT_MAPS, ...OFFER_LISTS), fc.option(rows), fc.boolean(), async (p, rowFilter, viaPatch) => {
        const r = viaPatch
          ? await call(gw.url, 'PATCH', `/watchlist/${items.get(p)}`, { key: acct.key, body: { row_filter: rowFilter } })
          : await post({ ...targetOf(p), row_filter: rowFilter });
        const allowed = rowFilter === null || rowFilter.length === 0 || SEAT_MAPS.includes(p);
        if (allowed) {
          expect(r.status, r.text).toBe(viaPatch ? 200 : 201);
          expect(r.body.row_filter).toEqual(rowFilter);
          if (!viaPatch) await call(gw.url, 'DELETE', `/watchlist/${r.body.id}`, { key: acct.key });
        } else {
          expect(expectWatchlistError(r, 400)).toContain(p);
        }
      }),
      { numRuns: 80 },
    );
  }, 60_000);
});
