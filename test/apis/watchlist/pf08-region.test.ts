// pf_08's region is its event URL's domain (spec 2.6: "region inferred from event URL domain";
// issue 24): a body region that differs is not an error, and the answer and the stored item
// carry the domain's region, which is also the target the monitors scrape.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEventRef } from '../../../src/platform/event-ref.ts';
import { call, newAccount, startTestGateway, type TestAccount, type TestGateway } from '../../support/harness.ts';
import { createItem, dbRow, expectWatchlistError, getItem } from './helpers.ts';

let gw: TestGateway;
let acct: TestAccount;

beforeAll(async () => {
  gw = await startTestGateway();
  acct = await newAccount(gw.db);
});

afterAll(async () => {
  await gw?.close();
});

/** pf_08's domains and the region each one means (spec 2.6 regions, issue 24). */
const DOMAINS: [string, string][] = [
  ['pf08.example.com.au', 'au'],
  ['pf08.example.co.nz', 'nz'],
  ['pf08.example.sg', 'sg'],
  ['pf08.example.com.my', 'my'],
  ['pf08.example.co.uk', 'uk'],
  ['pf08.example.com.ph', 'ph'],
];

describe('pf_08 items', () => {
  it('take the region of the event URL’s domain, whatever region the body names', async () => {
    for (const [host, region] of DOMAINS) {
      for (const sent of ['au', 'NZ', 'uk', 'us', 'zz', region]) {
        const item = await createItem(gw.url, acct.key, { website: 'pf_08', event: `https://${host}/event/EV-1`, region: sent });
        expect(item.region, `${host} with ${sent}`).toBe(region);
        expect((await getItem(gw.url, acct.key, item.id)).region).toBe(region);
        expect((await dbRow(gw.db, item.id))!.region).toBe(region);
      }
    }
  });

  it('are stored as the target POST /events/scrape would scrape for the same body', async () => {
    const item = await createItem(gw.url, acct.key, { website: 'pf_08', event: 'https://pf08.example.co.uk/event/LON-1', region: 'au' });
    const ref = parseEventRef('pf_08', 'https://pf08.example.co.uk/event/LON-1', 'au');
    expect(ref).toMatchObject({ ok: true, ref: { region: 'uk' } });
    expect(item.region).toBe('uk');
  });

  it('still need a region in the body, and a URL on one of pf_08’s domains', async () => {
    expectWatchlistError(await call(gw.url, 'POST', '/watchlist', { key: acct.key, body: { website: 'pf_08', event: 'https://pf08.example.com.au/event/SYD-1' } }), 400);
    const other = await call(gw.url, 'POST', '/watchlist', { key: acct.key, body: { website: 'pf_08', event: 'https://pf08.example.com/event/SYD-1', region: 'au' } });
    expect(expectWatchlistError(other, 400)).toMatch(/^event: /);
  });

  it('any domain and any well-formed body region give the domain’s region (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...DOMAINS), fc.stringMatching(/^[A-Za-z]{1,8}$/), async ([host, region], sent) => {
        const r = await call(gw.url, 'POST', '/watchlist', { key: acct.key, body: { website: 'pf_08', event: `https://${host}/event/P-123`, region: sent } });
        expect(r.status, r.text).toBe(201);
        expect(r.body.region).toBe(region);
        await call(gw.url, 'DELETE', `/watchlist/${r.body.id}`, { key: acct.key });
      }),
      { numRuns: 40 },
    );
  }, 60_000);
});
