// Migration 040: the indexes a filtered search reads carry the attributes filters use most, so a
// filter's count and its page's event ids can be read without visiting event_search's heap.
// - Migrated over an existing catalog in a transaction with a 2 ms statement timeout (the
//   service migrates through its request-timed connections; each index build outlasts them).
// - Property: for random filters over the covered attributes and every sortBy but the name's,
//   the count and the page's ids (the very statements the search runs, indexOrderedPage) are
//   planned as index-only scans of event_search once sequential and bitmap scans are ruled out
//   (whichever index the planner then takes, it reads index-only). A filter on an attribute
//   not covered (a city) is not, which shows the check can fail.
// - One country in price order is read off the (country, price) indexes, in both directions.
// Whether the results are right is held elsewhere: the orders by test/apis/market-data/
// search.test.ts, the filters against a reference evaluator by search-properties.test.ts.
import fc from 'fast-check';
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { migrateLatest } from '../../db/migrations/index.ts';
import * as m040 from '../../db/migrations/040_search_covering_indexes.ts';
import { COVERED_FILTER_COLUMNS } from '../../db/migrations/040_search_covering_indexes.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { COUNT_CAP, compileSearchFilter, indexOrderedPage, SORT_BY, type SearchParams } from '../../src/market-data/search-query.ts';
import { seedCatalog } from '../../src/market-data/seed/seed.ts';
import { CATEGORIES, COUNTRIES } from '../../src/market-data/seed/vocabulary.ts';
import { databaseUrl } from '../support/harness.ts';

let scratch: ScratchDatabase;
let db: Db;

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_search_covering', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 1 });
  await seedCatalog(db, { events: 10_000, detail: 'light', seed: 9, now: new Date('2026-01-15T12:00:00Z') });
}, 120_000);
afterAll(async () => {
  await db?.destroy();
  await scratch?.drop();
});

/** Migration 005's definitions of the indexes 040 rebuilds. */
const BEFORE: Record<string, string> = {
  event_search_recommended: 'tickets_sold_24h DESC, tickets_sold DESC, event_id',
  event_search_event_date: 'event_date, event_id',
  event_search_event_date_desc: 'event_date DESC NULLS LAST, event_id DESC',
  event_search_price: 'average_ticket_price_sold, event_id',
  event_search_price_desc: 'average_ticket_price_sold DESC NULLS LAST, event_id DESC',
  event_search_tickets_sold: 'tickets_sold, event_id',
  event_search_tickets_sold_24h: 'tickets_sold_24h, event_id',
  event_search_available_tickets: 'available_tickets, event_id',
  event_search_capacity: 'capacity, event_id',
  event_search_capacity_desc: 'capacity DESC NULLS LAST, event_id DESC',
  event_search_country_code: 'lower(venue_country_code)',
  event_search_category: 'lower(category_name)',
};
const REBUILT = Object.keys(BEFORE);

/** Every (relation, node type) a plan reads, from EXPLAIN (FORMAT JSON). */
function scans(plan: Record<string, unknown>): { relation: string; node: string; index?: string }[] {
  const here = typeof plan['Relation Name'] === 'string' ? [{ relation: plan['Relation Name'] as string, node: plan['Node Type'] as string, index: plan['Index Name'] as string | undefined }] : [];
  return [...here, ...((plan.Plans as Record<string, unknown>[] | undefined) ?? []).flatMap(scans)];
}

/** `sql` with its $n placeholders replaced by their values as literals (each keeps its ::type). */
function inline(sql: string, values: readonly unknown[]): string {
  return sql.replace(/\$(\d+)/g, (_, n: string) => `'${String(values[Number(n) - 1]).replace(/'/g, "''")}'`);
}

/**
 * The plan of `sql` when event_search may be read through indexes only (the other paths cost
 * 10^10, still taken when nothing else can). Index-only scans cannot be left alone: the planner
 * considers them only with plain index scans enabled. Between the two on one index, with the
 * visibility map set, index-only is the cheaper whenever it can be had.
 */
async function planWithIndexOnly(sql: string, values: unknown[]): Promise<{ relation: string; node: string; index?: string }[]> {
  return db.transaction(async (trx) => {
    for (const off of ['enable_seqscan', 'enable_bitmapscan', 'enable_tidscan']) await trx.raw(`SET LOCAL ${off} = off`);
    const { rows } = await trx.raw(`EXPLAIN (FORMAT JSON) ${inline(sql, values)}`);
    return scans(rows[0]['QUERY PLAN'][0].Plan);
  });
}

const BASE: SearchParams = { query: '', page: 1, hitsPerPage: 20, sortBy: 'recommended', filterExpression: '' };

/** The two statements of a filtered page in an index's order, as the search builds them. */
function statements(filterExpression: string, sortBy: SearchParams['sortBy'], page: number) {
  const p = { ...BASE, filterExpression, sortBy, page };
  return indexOrderedPage(p, compileSearchFilter(filterExpression), [], COUNT_CAP);
}

// Filters over the covered attributes only: comparisons, ranges, a country, a category, and
// their AND, OR and NOT.
const NUMERIC = ['tickets_sold', 'tickets_sold_24h', 'available_tickets', 'capacity', 'average_ticket_price_sold', 'event_date'] as const;
const atom = fc.oneof(
  fc.tuple(fc.constantFrom(...NUMERIC), fc.constantFrom('<', '<=', '>', '>=', '=', '!='), fc.integer({ min: 0, max: 2_000_000_000 })).map(([a, op, v]) => `${a} ${op} ${v}`),
  fc.tuple(fc.constantFrom(...NUMERIC), fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 0, max: 1000 })).map(([a, lo, hi]) => `${a}:${lo} TO ${lo + hi}`),
  fc.constantFrom(...COUNTRIES.map((c) => `venue_country_code:${c.code}`)),
  fc.constantFrom(...CATEGORIES.map((c) => `category_name:"${c.name}"`)),
);
const { filter } = fc.letrec<{ filter: string }>((tie) => ({
  filter: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    atom,
    fc.tuple(tie('filter'), fc.constantFrom('AND', 'OR'), tie('filter')).map(([a, op, b]) => `(${a} ${op} ${b})`),
    tie('filter').map((f) => `NOT ${f}`),
  ),
}));

describe('migration 040: covering indexes for filtered search', () => {
  it('migrates an existing catalog through connections whose statement timeout each index build outlasts', async () => {
    // Back to before 040: its indexes as migration 005 left them.
    await db.raw('DROP INDEX event_search_country_price, event_search_country_price_desc');
    for (const [name, keys] of Object.entries(BEFORE)) {
      await db.raw(`DROP INDEX ${name}`);
      await db.raw(`CREATE INDEX ${name} ON event_search (${keys})`);
    }
    await db.raw("DELETE FROM knex_migrations WHERE name = '040_search_covering_indexes'");

    // The service migrates through its own connections, whose statement timeout is a request's;
    // here 2 ms, far under one index build (~12 ms at this size), set the way those connections
    // set theirs. Without the migration's own setting, one build alone is refused.
    const tight = async (fn: (trx: Knex.Transaction) => Promise<unknown>) =>
      db.transaction(async (trx) => {
        await trx.raw("SET LOCAL statement_timeout = '2ms'");
        return fn(trx);
      });
    await expect(
      tight((trx) => trx.raw(`CREATE INDEX probe ON event_search (event_date, event_id) INCLUDE (${COVERED_FILTER_COLUMNS.join(', ')})`)),
    ).rejects.toThrow(/statement timeout/);
    await tight((trx) => m040.up(trx));
    await db('knex_migrations').insert({ name: '040_search_covering_indexes', batch: 99, migration_time: new Date() });
    expect(await migrateLatest(db)).toEqual([]);
    const { rows } = await db.raw(
      `SELECT c.relname, i.indnatts - i.indnkeyatts AS included FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
       WHERE i.indrelid = 'event_search'::regclass AND c.relname = ANY (?) ORDER BY 1`,
      [[...REBUILT, 'event_search_country_price', 'event_search_country_price_desc']],
    );
    expect(Object.fromEntries(rows.map((r: { relname: string; included: number }) => [r.relname, r.included]))).toEqual({
      ...Object.fromEntries(REBUILT.map((n) => [n, COVERED_FILTER_COLUMNS.length])),
      event_search_country_price: 1,
      event_search_country_price_desc: 1,
    });
    await db.raw('VACUUM ANALYZE event_search');
  }, 120_000);

  it('property: a filter over the covered attributes is counted and paged index-only, in every order', async () => {
    // A filter the planner proves false (a country that is two countries) reads nothing at all;
    // the statements that read the table must be most of them, or the check checked nothing.
    let statementsRead = 0;
    await fc.assert(
      // The name orders are left out: a name is not covered, so no index carries their key.
      fc.asyncProperty(filter, fc.constantFrom(...SORT_BY.filter((o) => !o.startsWith('event_name'))), fc.integer({ min: 1, max: 50 }), async (f, sortBy, page) => {
        const s = statements(f, sortBy, page);
        for (const sql of [s.countSql, s.idsSql]) {
          const read = (await planWithIndexOnly(sql, s.values)).filter((r) => r.relation === 'event_search');
          if (read.length) statementsRead++;
          for (const r of read) expect(`${r.node} using ${r.index}`, `${f} / ${sortBy}: ${sql}`).toMatch(/^Index Only Scan using /);
        }
      }),
      { numRuns: 120 },
    );
    expect(statementsRead).toBeGreaterThan(160);
  }, 120_000);

  it('a filter on an attribute left out (a city) reads the heap: the check above can fail', async () => {
    const s = statements('venue_city:"London" AND tickets_sold > 10', 'recommended', 1);
    for (const sql of [s.countSql, s.idsSql]) {
      const nodes = (await planWithIndexOnly(sql, s.values)).filter((r) => r.relation === 'event_search').map((r) => r.node);
      expect(nodes.some((n) => n !== 'Index Only Scan'), sql).toBe(true);
    }
  });

  it("one country's page in price order, either way, is read off the (country, price) indexes", async () => {
    for (const [sortBy, index] of [
      ['average_ticket_price_sold', 'event_search_country_price'],
      ['average_ticket_price_sold.desc', 'event_search_country_price_desc'],
    ] as const) {
      for (const page of [1, 7]) {
        const s = statements('venue_country_code:MX', sortBy, page);
        const read = await db.transaction(async (trx) => {
          // No way to the order but an index's: the price order's own, walked through every
          // country, or the country's.
          for (const off of ['enable_seqscan', 'enable_bitmapscan', 'enable_sort']) await trx.raw(`SET LOCAL ${off} = off`);
          const { rows } = await trx.raw(`EXPLAIN (FORMAT JSON) ${inline(s.idsSql, s.values)}`);
          return scans(rows[0]['QUERY PLAN'][0].Plan);
        });
        expect(read, `${sortBy} page ${page}`).toEqual([{ relation: 'event_search', node: 'Index Only Scan', index }]);
      }
    }
  });
});
