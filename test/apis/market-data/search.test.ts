// POST /svc/data/search through the real gateway, a real key and PostgreSQL, on a catalog of its
// own (search-catalog.ts): the response shape against the schema and the spec's field list,
// defaults, paging, every sortBy order against the documented rule, matching (prefix, typos,
// non-ASCII, several words), relevance, filters, every INVALID_REQUEST case, billing, the
// database-failure mapping, the OpenAPI document and the vocabulary's freshness.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createPool } from '../../../db/pool.ts';
import { marketDataFailures } from '../../../src/apis/market-data/errors.ts';
import { searchRequestSchema, searchResponseSchema } from '../../../src/apis/market-data/search.ts';
import { refreshSearchRows } from '../../../src/market-data/search-index.ts';
import { searchEvents, SORT_BY, type SortBy } from '../../../src/market-data/search-query.ts';
import { SearchVocabulary } from '../../../src/market-data/search-vocabulary.ts';
import { ledgerRows, usedCredits } from '../../support/gateway-helpers.ts';
import { eventually, newAccount, type Reply } from '../../support/harness.ts';
import { expectMarketDataError } from '../../support/market-data-fixtures.ts';
import { EVENTS, expectedHit, useSearchGateway, type FixtureEvent } from './search-catalog.ts';

const t = useSearchGateway();

/** Spec 2.4, in the order the hit lists them. */
const HIT_FIELDS = [
  'objectID', 'event_id', 'event_name', 'event_date', 'category_name', 'artist_id', 'artist_name', 'venue_id', 'venue_name',
  'venue_city', 'venue_country', 'venue_country_code', 'tickets_sold', 'tickets_sold_24h', 'available_tickets', 'capacity',
  'average_ticket_price_sold',
];

/** A 200 search answer, checked against the schema, the field list and the catalog. */
function ok(r: Reply) {
  expect(r.status, r.text).toBe(200);
  expect(Object.keys(r.body).sort()).toEqual(['exhaustiveNbHits', 'hits', 'hitsPerPage', 'nbHits', 'nbPages', 'page', 'processingTimeMS']);
  const body = searchResponseSchema.parse(r.body);
  for (const hit of r.body.hits) {
    expect(Object.keys(hit)).toEqual(HIT_FIELDS);
    expect(hit).toEqual(expectedHit(EVENTS.find((e) => e.id === hit.event_id)!));
  }
  return body;
}

const ids = (r: Reply) => ok(r).hits.map((h) => h.event_id);

async function all(body: Record<string, unknown>): Promise<number[]> {
  return ids(await t.search({ hitsPerPage: 100, ...body }));
}

describe('response shape and defaults', () => {
  it('{} lists the whole catalog on page 1, 20 per page, most popular first, every field as in the catalog', async () => {
    const r = await t.search({});
    const body = ok(r);
    expect(body).toMatchObject({ page: 1, hitsPerPage: 20, nbHits: EVENTS.length, nbPages: 1, exhaustiveNbHits: true });
    expect(body.hits.map((h) => h.event_id)).toEqual([6, 7, 3, 1, 2, 4, 12, 5, 11, 8, 9, 10]);
    expect(Number.isInteger(body.processingTimeMS) && body.processingTimeMS >= 0).toBe(true);
  });

  it('gives nulls where the catalog has nothing and numbers for ids, dates and prices', async () => {
    const hits = ok(await t.search({ hitsPerPage: 100 })).hits;
    const mystery = hits.find((h) => h.event_id === 10)!;
    expect(mystery).toMatchObject({ objectID: '10', event_date: null, category_name: null, artist_id: null, venue_name: null, venue_country_code: null, capacity: null, average_ticket_price_sold: null, tickets_sold: 0 });
    const hamlet = hits.find((h) => h.event_id === 8)!;
    expect(hamlet.average_ticket_price_sold).toBeNull(); // sold nothing yet: the newest snapshot has no average
    const arsenal = hits.find((h) => h.event_id === 7)!;
    expect(arsenal.average_ticket_price_sold).toBe(95.25);
    expect(arsenal.event_date).toBe(Date.parse('2029-11-11T15:00:00Z') / 1000);
    expect(hits.find((h) => h.event_id === 5)!.capacity).toBe(1_400); // the event's own capacity over its venue's
  });

  it('answers an empty result with zero hits and zero pages', async () => {
    const body = ok(await t.search({ query: 'xylophonequartet' }));
    expect(body).toMatchObject({ hits: [], nbHits: 0, nbPages: 0, page: 1 });
  });

  it('takes the documented defaults when fields are left out', () => {
    expect(searchRequestSchema.parse({})).toEqual({ query: '', page: 1, hitsPerPage: 20, sortBy: 'recommended', filterExpression: '' });
  });
});

describe('paging', () => {
  it('splits the hits into pages with nbPages, a short last page and nothing beyond it', async () => {
    const full = await all({});
    const pages: number[][] = [];
    for (const page of [1, 2, 3]) {
      const body = ok(await t.search({ hitsPerPage: 5, page }));
      expect(body).toMatchObject({ page, hitsPerPage: 5, nbHits: 12, nbPages: 3 });
      pages.push(body.hits.map((h) => h.event_id));
    }
    expect(pages.map((p) => p.length)).toEqual([5, 5, 2]);
    expect(pages.flat()).toEqual(full);
    const beyond = ok(await t.search({ hitsPerPage: 5, page: 4 }));
    expect(beyond).toMatchObject({ hits: [], nbHits: 12, nbPages: 3, page: 4 });
    const last = ok(await t.search({ hitsPerPage: 100, page: 1000 }));
    expect(last).toMatchObject({ hits: [], nbHits: 12, nbPages: 1 });
  });

  it('pages stay stable for every order (ties broken by event_id)', async () => {
    for (const sortBy of SORT_BY) {
      const full = await all({ sortBy });
      const paged: number[] = [];
      for (let page = 1; page <= 4; page++) paged.push(...ids(await t.search({ sortBy, hitsPerPage: 3, page })));
      expect(paged, sortBy).toEqual(full);
    }
  });
});

// The documented orders, written independently of the SQL: NULLs last in both directions, ties
// by event_id in the sort's direction; recommended without a query is popularity.
function expectedOrder(sortBy: SortBy, events: readonly FixtureEvent[] = EVENTS): number[] {
  const hit = (e: FixtureEvent) => expectedHit(e) as Record<string, number | string | null>;
  if (sortBy === 'recommended') {
    return [...events]
      .sort((a, b) => (hit(b).tickets_sold_24h as number) - (hit(a).tickets_sold_24h as number) || (hit(b).tickets_sold as number) - (hit(a).tickets_sold as number) || a.id - b.id)
      .map((e) => e.id);
  }
  const [attribute, dir] = sortBy.split('.') as [string, string | undefined];
  const sign = dir === 'desc' ? -1 : 1;
  const key = (e: FixtureEvent): number | string | null => {
    const v = hit(e)[attribute] ?? null;
    return typeof v === 'string' ? v.toLowerCase() : v;
  };
  return [...events]
    .sort((a, b) => {
      const x = key(a);
      const y = key(b);
      if (x === null || y === null) return x === y ? sign * (a.id - b.id) : x === null ? 1 : -1;
      if (x !== y) return sign * (x < y ? -1 : 1);
      return sign * (a.id - b.id);
    })
    .map((e) => e.id);
}

describe('sortBy', () => {
  it.each(SORT_BY)('%s orders the catalog by its documented rule', async (sortBy) => {
    expect(await all({ sortBy })).toEqual(expectedOrder(sortBy));
  });

  it('spot checks against hand-written orders', async () => {
    expect(await all({ sortBy: 'average_ticket_price_sold.desc' })).toEqual([6, 3, 1, 2, 4, 7, 11, 5, 12, 10, 9, 8]);
    expect(await all({ sortBy: 'event_date' })).toEqual([8, 5, 7, 3, 11, 12, 1, 2, 4, 6, 9, 10]);
    expect(await all({ sortBy: 'event_name' })).toEqual([3, 7, 4, 8, 5, 12, 11, 1, 2, 10, 6, 9]);
    expect(await all({ sortBy: 'capacity.desc' })).toEqual([1, 2, 4, 6, 7, 3, 11, 5, 8, 12, 10, 9]);
  });

  it('orders only the matching events when combined with a query or a filter', async () => {
    expect(await all({ query: 'london ', sortBy: 'tickets_sold.desc' })).toEqual([1, 3, 11, 7, 5, 8]);
    const gb = EVENTS.filter((e) => e.venue?.code === 'GB');
    expect(await all({ filterExpression: 'venue_country_code:GB', sortBy: 'event_date.desc' })).toEqual(expectedOrder('event_date.desc', gb));
  });
});

describe('matching', () => {
  it('matches the last word as a prefix while it is being typed, and whole words after a space', async () => {
    expect(await all({ query: 'metal' })).toEqual([11, 1, 2]);
    expect(await all({ query: 'metal ' })).toEqual([11]);
    // No whole word "lon": both names that start with it rank by popularity.
    expect(await all({ query: 'lon' })).toEqual([12, 5, 7, 3, 1, 11, 8]);
    expect(await all({ query: 'Londonderry' })).toEqual([12]);
  });

  it('ranks words in the event or artist name first, then whole words, then popularity', async () => {
    // 5 is named London (whole word), 12 starts with it, the rest only play in London.
    expect(await all({ query: 'london' })).toEqual([5, 12, 7, 3, 1, 11, 8]);
    expect(await all({ query: 'london ' })).toEqual([5, 7, 3, 1, 11, 8]);
  });

  it('tolerates 1 typo from 4 characters and 2 from 8: swaps, missing, extra and wrong letters', async () => {
    expect(await all({ query: 'lodnon' })).toEqual([12, 5, 7, 3, 1, 11, 8]); // swap (no whole-word match to favour 5)
    expect(await all({ query: 'metalica' })).toEqual([1, 2]); // missing letter
    expect(await all({ query: 'metallicaa ' })).toEqual([1, 2]); // extra letter, whole word
    expect(await all({ query: 'coldplya' })).toEqual([4]);
    expect(await all({ query: 'tayler swift' })).toEqual([6]); // wrong letter in a word before the last
    expect(await all({ query: 'adle' })).toEqual([3]);
    expect(await all({ query: 'zurich' })).toEqual([9]); // u for ü is one typo
  });

  it('does not stretch typos past the rule', async () => {
    expect(await all({ query: 'adl ' })).toEqual([]); // 3 letters: no typo allowed
    expect(await all({ query: 'lndn ' })).toEqual([]); // 2 typos in a 4-letter word
    expect(await all({ query: 'mtalca ' })).toEqual([]); // 3 typos in metallica-like text
  });

  it('reads typos only when the words as typed match nothing', async () => {
    // "para" starts event 5's venue Paradiso, so event 2's Paris (one typo: "pari") stays out.
    expect(await all({ query: 'para' })).toEqual([5]);
    // "parj" matches nothing as typed; with one typo it reaches both, the name match first.
    expect(await all({ query: 'parj' })).toEqual([2, 5]);
    expect(await all({ query: 'metalica world' })).toEqual([1]);
    // Typing "tour": a replaced letter ("toul…") could match, but the words as typed do.
    expect(await all({ query: 'tour' })).toEqual([6, 1]);
    // A filter that empties the result does not make the words as typed count as unmatched:
    // "para" matches event 5, the filter excludes it, and Paris (event 2) is not read as a typo.
    expect(await all({ query: 'para', filterExpression: 'event_id != 5' })).toEqual([]);
    // Words that match nothing as typed are still read with typos under a filter.
    expect(await all({ query: 'parj', filterExpression: 'event_id != 5' })).toEqual([2]);
    expect(await all({ query: 'parj', filterExpression: 'event_id = 5' })).toEqual([5]);
  });

  it('requires every word, folds case and accents the way the catalog was folded', async () => {
    expect(await all({ query: 'metallica paris' })).toEqual([2]);
    expect(await all({ query: 'metallica berlin' })).toEqual([]);
    expect(await all({ query: 'ZÜRICH jazz' })).toEqual([9]);
    expect(await all({ query: '  ,.!  ' })).toEqual(expectedOrder('recommended')); // no words: everything
    expect(await all({ query: 'arsenal-vs_chelsea' })).toEqual([7]); // punctuation separates words
    expect(await all({ query: '𝄞'.repeat(100) })).toEqual([]); // a word too long to be stored matches nothing
    expect(await all({ query: 'arsenal—chelsea,' })).toEqual([7]);
    expect(await all({ query: "arsenal's " })).toEqual([]); // "s" is a word of its own, and no event has it
  });
});

describe('filterExpression', () => {
  const cases: [string, number[]][] = [
    ['venue_country_code:gb', [7, 3, 1, 12, 11, 8]],
    ['venue_city:"Los Angeles"', [6]],
    ['tickets_sold > 1000', [6, 3, 1, 2, 4]],
    ['tickets_sold >= 1000', [6, 7, 3, 1, 2, 4, 11]],
    ['tickets_sold:1000 TO 5000', [7, 3, 1, 2, 11]],
    ['event_date < 1893456000', [7, 3, 5, 8]],
    ['average_ticket_price_sold > 140.5', [6, 3, 1]],
    ['artist_id = 1', [1, 2]],
    ['venue_country_code:GB AND NOT category_name:Metal', [7, 3, 12, 8]],
    ['category_name:Pop OR category_name:Rock', [6, 3, 4]],
    ['(category_name:Pop OR category_name:Rock) AND tickets_sold > 5000', [6, 4]],
    ['NOT category_name:Pop', [7, 1, 2, 4, 12, 5, 11, 8, 9, 10]],
    ['capacity != 90000 AND NOT venue_country:"United Kingdom"', [6, 2, 4, 5]],
    ['venue_country_code:"x\'; DROP TABLE events;--"', []],
  ];
  it.each(cases)('%s', async (filterExpression, expected) => {
    expect(await all({ filterExpression })).toEqual(expected);
  });

  it('combines with the query', async () => {
    expect(await all({ query: 'london', filterExpression: 'tickets_sold > 1000' })).toEqual([3, 1]);
  });
});

describe('INVALID_REQUEST', () => {
  const raw = async (text: string) => t.api('POST', '/svc/data/search', { key: t.acct.key, raw: text, headers: { 'content-type': 'application/json' } });

  it('refuses a body that is not a JSON object', async () => {
    expect(expectMarketDataError(await raw('{"query": '), 400, 'INVALID_REQUEST')).toMatch(/^body is not valid JSON/);
    expect(expectMarketDataError(await raw(''), 400, 'INVALID_REQUEST')).toMatch(/JSON object/);
    for (const text of ['[]', '"london"', 'null', '42']) expect(expectMarketDataError(await raw(text), 400, 'INVALID_REQUEST')).toBe('body must be a JSON object (send {} for the defaults)');
  });

  it.each([
    [{ query: 5 }, /^query must be a string/],
    [{ query: null }, /^query must be a string/],
    [{ query: 'x'.repeat(201) }, /^query must be at most 200 characters/],
    [{ query: 'a\u0000b' }, /NUL/],
    [{ page: 0 }, /^page must be an integer from 1 to 1000/],
    [{ page: 1001 }, /^page must be an integer from 1 to 1000/],
    [{ page: 1.5 }, /^page must be an integer from 1 to 1000/],
    [{ page: '2' }, /^page must be an integer from 1 to 1000/],
    [{ hitsPerPage: 0 }, /^hitsPerPage must be an integer from 1 to 100/],
    [{ hitsPerPage: 101 }, /^hitsPerPage must be an integer from 1 to 100/],
    [{ sortBy: 'price' }, /^sortBy must be one of recommended, event_date, /],
    [{ sortBy: 'EVENT_DATE' }, /^sortBy must be one of/],
    [{ filterExpression: 7 }, /^filterExpression must be a string/],
    [{ filterExpression: 'x'.repeat(6001) }, /^filterExpression must be at most 6000 characters/],
    [{ hitsperpage: 10 }, /^unknown field "hitsperpage"; accepted: query, page, hitsPerPage, sortBy, filterExpression/],
  ])('%j', async (body, message) => {
    expect(expectMarketDataError(await t.search(body), 400, 'INVALID_REQUEST')).toMatch(message);
  });

  it.each([
    ['tickets_sold >', 'at position 14'],
    ['foo:bar', 'unknown attribute "foo" at position 0'],
    ['venue_country_code:GB AND', 'at position 25'],
    ['(tickets_sold > 5', 'position 0'],
    ['venue_country_code:x\'; DROP TABLE events;--', 'position 20'],
    ['venue_city > 5', 'position 11'],
    ['tickets_sold:1.5', 'position 13'],
    ['event_name:"open', 'position 11'],
  ])('filterExpression %j names the position', async (filterExpression, where) => {
    const message = expectMarketDataError(await t.search({ filterExpression }), 400, 'INVALID_REQUEST');
    expect(message.startsWith('filterExpression: ')).toBe(true);
    expect(message).toContain(where);
  });

  it('accepts exactly the limits', async () => {
    ok(await t.search({ query: 'x'.repeat(200), page: 1000, hitsPerPage: 100, filterExpression: ' '.repeat(6000) }));
  });
});

describe('billing', () => {
  it('costs 1 credit per search, answered or refused by the API', async () => {
    const a = await newAccount(t.gw.db, { rateLimit: 1_000 });
    for (const body of [{}, { query: 'london' }, { sortBy: 'capacity' }, { page: 0 }, { filterExpression: 'nope:1' }]) {
      await t.api('POST', '/svc/data/search', { key: a.key, body });
    }
    expect(await usedCredits(t.gw.db, a.accountId)).toBe(5);
    const rows = await ledgerRows(t.gw.db, a.accountId);
    expect(rows.map((r) => [r.operation, r.credits, r.state])).toEqual(Array(5).fill(['searchEvents', 1, 'charged']));
  });
});

describe('database failures', () => {
  it('a statement timeout is 504 EDGE_TIMEOUT and an unreachable database 503 EDGE_UNAVAILABLE', async () => {
    const slow = createPool({ connectionString: t.scratch.url, max: 1 });
    const client = await slow.connect();
    // Hold a lock the search needs (reading event_search) longer than the statement timeout.
    await client.query('BEGIN');
    await client.query('LOCK TABLE event_search IN ACCESS EXCLUSIVE MODE');
    const timed = createPool({ connectionString: t.scratch.url, max: 2, statementTimeoutMs: 200 });
    try {
      const err = await searchEvents(timed, { query: '', page: 1, hitsPerPage: 5, sortBy: 'recommended', filterExpression: '' }, new SearchVocabulary(timed)).catch((e: unknown) => e);
      expect((err as { code?: string }).code).toBe('57014');
      const rendered = marketDataFailures.fromUnexpected(err);
      expect([rendered.status, rendered.body()]).toEqual([504, { status: 'error', code: 'EDGE_TIMEOUT', message: 'data backend exceeded its timeout' }]);
    } finally {
      await client.query('ROLLBACK');
      client.release();
      await slow.end();
      await timed.end();
    }
    const down = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/x', connectionTimeoutMillis: 1_000 });
    down.on('error', () => {});
    const err = await searchEvents(down, { query: 'london', page: 1, hitsPerPage: 5, sortBy: 'recommended', filterExpression: '' }, new SearchVocabulary(down)).catch((e: unknown) => e);
    await down.end();
    const rendered = marketDataFailures.fromUnexpected(err);
    expect([rendered.status, (rendered.body() as { code: string }).code]).toEqual([503, 'EDGE_UNAVAILABLE']);
  });
});

describe('OpenAPI', () => {
  it('documents the request and response schemas by name', async () => {
    const doc = (await t.api('GET', '/openapi.json')).body;
    const op = doc.paths['/svc/data/search'].post;
    expect(op.operationId).toBe('searchEvents');
    expect(op['x-credits']).toBe(1);
    expect(op.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/SearchRequest' });
    expect(op.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/SearchResponse' });
    expect(op.responses['400']).toBeDefined();
    const request = doc.components.schemas.SearchRequest;
    expect(request.additionalProperties).toBe(false);
    expect(request.properties.sortBy.enum).toEqual([...SORT_BY]);
    expect(request.properties.hitsPerPage).toMatchObject({ minimum: 1, maximum: 100, default: 20 });
    expect(doc.components.schemas.SearchHit.required).toEqual(HIT_FIELDS);
  });
});

describe('a newly tracked event', () => {
  it('is found at once by its words, and by a typo within seconds', async () => {
    const db = t.gw.db;
    await db('events').insert({ id: 99, name: 'Quixotica Orchestra', event_date: '2030-02-02T20:00:00Z' });
    try {
      await refreshSearchRows(db, [99]);
      await refreshSearchRows(db, [99]); // an update: the catalog still counts it once
      expect((await t.search({})).body.nbHits).toBe(EVENTS.length + 1);
      const found99 = async (query: string) => {
        const r = await t.search({ query });
        expect(r.status).toBe(200);
        return (r.body.hits as { event_id: number }[]).map((h) => h.event_id);
      };
      expect(await found99('quixotica')).toEqual([99]);
      const found = await eventually(async () => {
        const hits = await found99('quixoitca orchestra');
        return hits.length ? hits : undefined;
      }, 15_000, 250);
      expect(found).toEqual([99]);
    } finally {
      await db('events').where({ id: 99 }).delete();
    }
    expect((await t.search({})).body.nbHits).toBe(EVENTS.length);
  });
});
