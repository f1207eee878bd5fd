// What is particular to each platform's shape: which endpoint a region or host leads to (pf_04,
// pf_07), paging (pf_06), GraphQL answers (pf_10), seat rows (pf_02), localized prices (pf_05,
// pf_09), and values that must be refused as malformed rather than reported.
import { load } from 'cheerio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePf04Api } from '../../src/scrapers/platforms/pf_04.ts';
import { parsePf05 } from '../../src/scrapers/platforms/pf_05.ts';
import { parsePf06, PF06_MAX_PAGES } from '../../src/scrapers/platforms/pf_06.ts';
import { parsePf09 } from '../../src/scrapers/platforms/pf_09.ts';
import { parsePf10 } from '../../src/scrapers/platforms/pf_10.ts';
import { parsePf11 } from '../../src/scrapers/platforms/pf_11.ts';
import { totalStock } from '../../src/scrapers/sections.ts';
import type { FetchInit, PageFetcher } from '../../src/scrapers/types.ts';
import { expectFailure, refOf, startHarness, type Harness } from './platform-harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ timeoutMs: 5_000 });
});
afterAll(async () => {
  await h?.close();
});

/** The real fetcher, noting every URL asked for. */
function recording(): { fetcher: PageFetcher; urls: string[] } {
  const urls: string[] = [];
  return {
    urls,
    fetcher: {
      html: (url: string, init?: FetchInit) => (urls.push(`GET ${url}`), h.http.html(url, init)),
      json: (url: string, init?: FetchInit) => (urls.push(`${init?.method ?? 'GET'} ${url}`), h.http.json(url, init)),
    },
  };
}

const one = (name: string, stock: number, extra: Record<string, unknown> = {}) => [{ name, price: 50, stock, ...extra }];

describe('pf_04 picks its strategy by region', () => {
  it.each(['de', 'at', 'ch'])('reads the offers API for %s', async (region) => {
    const ref = await h.put('pf_04', 100 + region.charCodeAt(0), { region, sections: one('Block A', 3) });
    const { fetcher, urls } = recording();
    const data = await h.adapter('pf_04', fetcher).scrape(ref);
    expect(urls).toEqual([`GET ${h.sim.baseUrls.pf_04}/api/events/${ref.key}/offers?region=${region}`]);
    expect(totalStock(data.sections)).toBe(3);
  });

  it.each(['it', 'uk', 'fr', 'pl', 'hu'])('reads the event page for %s', async (region) => {
    const ref = await h.put('pf_04', 200 + region.charCodeAt(0) + region.charCodeAt(1), { region, sections: one('Block A', 4) });
    const { fetcher, urls } = recording();
    const data = await h.adapter('pf_04', fetcher).scrape(ref);
    expect(urls).toEqual([`GET ${h.sim.baseUrls.pf_04}/${region}/tickets/${ref.key}`]);
    expect(totalStock(data.sections)).toBe(4);
    expect(data.event_info.url).toBe(`https://www.pf04.example/${region}/tickets/${ref.key}`);
  });
});

describe('pf_07 routes UK events to its UK monitor', () => {
  it('uses the listings API for other regions, every offer resale', async () => {
    const ref = await h.put('pf_07', 300, { region: 'us', sections: one('Floor', 5, { ticket_type: 'standard' }) });
    const { fetcher, urls } = recording();
    const data = await h.adapter('pf_07', fetcher).scrape(ref);
    expect(urls[0]).toContain('/api/events/');
    if (data.sections_type !== 'OfferSections') throw new Error('expected offers');
    expect(data.sections.Floor!.offers.map((o) => [o.quantity, o.ticket_type])).toEqual([
      [2, 'resale'],
      [2, 'resale'],
      [1, 'resale'],
    ]);
  });

  it('uses the UK monitor for region uk', async () => {
    const ref = await h.put('pf_07', 301, { region: 'uk', currency: 'GBP', sections: one('North Stand', 6, { ticket_type: 'platinum' }) });
    const { fetcher, urls } = recording();
    const data = await h.adapter('pf_07', fetcher).scrape(ref);
    expect(urls).toEqual([`GET ${h.sim.baseUrls.pf_07}/uk/monitor/${ref.key}?region=uk`]);
    expect(data.sections).toMatchObject({ 'North Stand': { stock: 6, currency: 'GBP', offers: [{ quantity: 6, ticket_type: 'resale', price: 50 }] } });
    expect(data.event_info.url).toBe(`https://www.pf07.example.co.uk/event/${ref.key}`);
  });

  it('uses the UK monitor for an event on the .co.uk host in any region', async () => {
    await h.put('pf_07', 302, { region: 'ie', sections: one('East Stand', 2) });
    const ref = refOf('pf_07', 'https://www.pf07.example.co.uk/event/arena-tour-100302', 'ie');
    const { fetcher, urls } = recording();
    expect(totalStock((await h.adapter('pf_07', fetcher).scrape(ref)).sections)).toBe(2);
    expect(urls[0]).toContain('/uk/monitor/arena-tour-100302?region=ie');
  });
});

describe('pf_06 follows its pages', () => {
  it('fetches every page of a large listing and adds them up', async () => {
    // 5 sections x 120 tickets in lots of 4: 150 listings, 3 pages of 50.
    const sections = ['A', 'B', 'C', 'D', 'E'].map((name, i) => ({ name: `Block ${name}`, price: 20 + i, stock: 120 }));
    const ref = await h.put('pf_06', 400, { sections });
    const { fetcher, urls } = recording();
    const data = await h.adapter('pf_06', fetcher).scrape(ref);
    expect(urls.map((u) => new URL(u.slice(4)).searchParams.get('page'))).toEqual(['1', '2', '3']);
    expect(totalStock(data.sections)).toBe(600);
    expect(Object.values(data.sections).map((s) => [s.min_price, s.max_price])).toEqual([
      [20, 20],
      [21, 21],
      [22, 22],
      [23, 23],
      [24, 24],
    ]);
  });

  it('refuses a listing that claims more pages than it would ever follow', async () => {
    const page = { event: {}, sections: [], listings: [], page: 1, total_pages: PF06_MAX_PAGES + 1 };
    const fetcher: PageFetcher = {
      html: () => Promise.reject(new Error('unused')),
      json: async (url) => ({ status: 200, url, body: JSON.stringify(page), data: page }),
    };
    const ref = refOf('pf_06', 'K0000401', 'us');
    const failure = await expectFailure(h.adapter('pf_06', fetcher).scrape(ref), 'malformed');
    expect(failure.message).toContain('total_pages');
  });

  it('refuses a listing that points at a section the event does not have', () => {
    const page = { event: {}, sections: [{ id: 'sec-1', name: 'A' }], listings: [{ id: 'L1', section_id: 'sec-9', quantity: 1, price: { amount: '1.00' }, kind: 'standard', notes: [] }], total_pages: 1, total_listings: 1 };
    expect(() => parsePf06(refOf('pf_06', 'K0000402', 'us'), [page], 'https://pf06.example/events/K0000402')).toThrow(/pf_06: listing L1 names an unknown section/);
  });
});

describe('pf_10 answers like a GraphQL server', () => {
  it('says event: null (status 200) for an unknown event, which is not_found', async () => {
    const res = await fetch(`${h.sim.baseUrls.pf_10}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'query { event(id: $id) { id } }', variables: { id: 'nope', region: 'us' } }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ data: { event: null } });
    await expectFailure(h.scrape(refOf('pf_10', '00000000-0000-4000-8000-000000000499', 'us')), 'not_found');
  });

  it('answers a request that is not a query with GraphQL errors (400)', async () => {
    const res = await fetch(`${h.sim.baseUrls.pf_10}/graphql`, { method: 'POST', body: 'not json' });
    expect(res.status).toBe(400);
    expect((await res.json()).errors[0].message).toMatch(/body must be JSON/);
  });

  it('treats errors without data as the platform failing, not as a missing event', async () => {
    const failure = await expectFailure(
      Promise.resolve().then(() => parsePf10(refOf('pf_10', '00000000-0000-4000-8000-000000000498', 'us'), { errors: [{ message: 'internal' }], data: null }, 'u')),
      'upstream',
    );
    expect(failure.message).toContain('internal');
  });
});

describe('pf_02 seat map', () => {
  it('lists seats row by row with their numbers and counts them per ticket type', async () => {
    const ref = await h.put('pf_02', 500, {
      sections: [
        { name: 'Block 1', price: 80, stock: 23, ticket_type: 'standard' },
        { name: 'Block 1', price: 95.5, stock: 2, ticket_type: 'resale', accessible: true },
        { name: 'Block 2', price: 60, stock: 0 },
      ],
    });
    const data = await h.scrape(ref);
    if (data.sections_type !== 'SeatMapSections') throw new Error('expected a seat map');
    const block = data.sections['Block 1']!;
    expect(block.seats.map((s) => `${s.row}${s.seat}`)).toEqual([...Array.from({ length: 20 }, (_, i) => `A${i + 1}`), 'B1', 'B2', 'B3', 'B4', 'B5']);
    expect(block.seats.at(-1)).toEqual({ row: 'B', seat: '5', price: 95.5, ticket_type: 'resale', restricted_view: false, accessible: true, presale: false });
    expect(block).toMatchObject({ stock: 25, min_price: 80, max_price: 95.5, by_ticket_type: { standard: 23, resale: 2, platinum: 0, general_admission: 0 } });
    // The sold-out block shows sold seats only: listed, nothing on sale.
    expect(data.sections['Block 2']).toMatchObject({ stock: 0, seats: [], min_price: null, by_ticket_type: { standard: 0 } });
  });
});

describe('values a page must not get away with', () => {
  const ref05 = refOf('pf_05', '7000900', 'it');
  const settore = { codice: 'S1', settore: 'Platea', prezzo: '1.250,50', disponibili: 2, tipologia: 'intero', visibilita_ridotta: false, accessibile: false, prevendita: false };
  const pf05 = (patch: Record<string, unknown>) => parsePf05(ref05, { evento: { valuta: 'EUR' }, settori: [{ ...settore, ...patch }] }, 'u');

  it('reads Italian prices with a decimal comma and thousands points', () => {
    expect(pf05({}).sections.Platea).toMatchObject({ min_price: 1250.5, stock: 2 });
  });

  it.each([
    ['a negative price', { prezzo: '-1,00' }, /prezzo of settore 1 is not a price/],
    ['a price in the wrong notation', { prezzo: '1,250.50' }, /prezzo/],
    ['a price that is not a number', { prezzo: 'gratis' }, /prezzo/],
    ['a fractional ticket count', { disponibili: 2.5 }, /disponibili of settore 1 is not a ticket count/],
    ['a negative ticket count', { disponibili: -1 }, /disponibili/],
    ['an unknown ticket kind', { tipologia: 'omaggio' }, /tipologia of settore 1 has an unknown value/],
    ['a missing flag', { prevendita: undefined }, /prevendita/],
    ['an empty sector name', { settore: '  ' }, /name of settore 1 is missing or empty/],
  ])('refuses %s', (_label, patch, message) => {
    expect(() => pf05(patch)).toThrow(message);
    try {
      pf05(patch);
    } catch (err) {
      expect(err).toMatchObject({ kind: 'malformed' });
    }
  });

  it('refuses non-JSON and JSON of the wrong shape as malformed, never a TypeError', () => {
    for (const data of [undefined, null, 42, 'text', [], { evento: null }, { evento: {}, settori: {} }, { evento: {}, settori: [null] }]) {
      expect(() => parsePf05(ref05, data, 'u')).toThrow(/^pf_05: /);
    }
  });

  it('refuses prices in minor units that are not whole numbers (pf_04)', () => {
    const offer = { offerId: 'o', block: 'A', priceCents: 12.5, available: 1, type: 'STANDARD', restrictedView: false, accessible: false, presale: false };
    expect(() => parsePf04Api(refOf('pf_04', 'https://www.pf04.example/de/tickets/100900', 'de'), { event: {}, offers: [offer] }, 'u')).toThrow(/priceCents of offer 1/);
  });

  it('refuses data attributes that are not numbers (pf_11)', () => {
    const ref = refOf('pf_11', 'https://tickets.pf11.example/event/70900', 'us');
    const page = (attrs: string) => load(`<ul class="offers" data-currency="USD"><li class="offer" data-offer-id="1" data-section="A" data-type="standard" ${attrs}></li></ul>`);
    expect(parsePf11(ref, page('data-price="12.50" data-qty="3"'), 'u').sections.A).toMatchObject({ stock: 3, min_price: 12.5 });
    expect(() => parsePf11(ref, page('data-price="12.50" data-qty="3.5"'), 'u')).toThrow(/data-qty of offer item 1/);
    expect(() => parsePf11(ref, page('data-price="Infinity" data-qty="3"'), 'u')).toThrow(/data-price of offer item 1/);
    expect(() => parsePf11(ref, page('data-qty="3"'), 'u')).toThrow(/data-price of offer item 1 is not a price \(missing\)/);
  });

  it('reads Czech prices and columns by their headings, in any order (pf_09)', () => {
    const ref = refOf('pf_09', '200900', 'cz');
    const html = `<table class="vstupenky" data-mena="CZK"><thead><tr><th>Typ</th><th>Cena</th><th>Sektor</th><th>Poznámka</th><th>Volných míst</th></tr></thead>
      <tbody><tr data-id="1"><td>Stání</td><td>1\u00a0250\u00a0Kč</td><td>Parter</td><td>Předprodej</td><td>7</td></tr>
      <tr data-id="2"><td>Standard</td><td>990,50 Kč</td><td>Balkon</td><td></td><td>Vyprodáno</td></tr></tbody></table>`;
    const data = parsePf09(ref, load(html), 'u');
    expect(data.sections).toMatchObject({
      Parter: { stock: 7, min_price: 1250, currency: 'CZK', offers: [{ ticket_type: 'general_admission', presale: true }] },
      Balkon: { stock: 0, min_price: null, offers: [] },
    });
    expect(() => parsePf09(ref, load(html.replace('<th>Cena</th>', '<th>Price</th>')), 'u')).toThrow('pf_09: the tickets table has no "Cena" column');
  });
});
