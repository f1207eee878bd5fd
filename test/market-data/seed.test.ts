// The catalog seed (src/market-data/seed/): a small full-detail seed obeys the rules tracked data
// obeys (one search row per event matching its newest snapshot, 24 h flows equal to the stored
// sales, percentages from stats-formulas.ts, histograms from priceHistogram, events without
// sales with null averages and a "0" histogram), is spread like a real catalog, is
// deterministic, refuses to mix catalogs unless appending, and the CLI and the demo catalog work.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { priceHistogram } from '../../src/market-data/price-histogram.ts';
import { ensureDemoCatalog, seedCatalog, SeedRefusedError, SEED_FIRST_EVENT_ID, type SeedResult } from '../../src/market-data/seed/seed.ts';
import { percentChange } from '../../src/market-data/stats-formulas.ts';
import { databaseUrl, runTs } from '../support/harness.ts';

const NOW = new Date('2026-03-01T10:00:00Z');
const DAY_MS = 86_400_000;

interface Scratch {
  scratch: ScratchDatabase;
  db: Db;
}

async function scratchDb(prefix: string): Promise<Scratch> {
  const scratch = await createScratchDatabase(prefix, databaseUrl());
  return { scratch, db: createDb({ connectionString: scratch.url, poolMax: 4 }) };
}

async function dropAll(...all: (Scratch | undefined)[]): Promise<void> {
  for (const s of all) {
    if (!s) continue;
    await s.db.destroy();
    await s.scratch.drop();
  }
}

let a: Scratch;
let result: SeedResult;
let seedMs = 0;

beforeAll(async () => {
  a = await scratchDb('tm_seed');
  const started = performance.now();
  result = await seedCatalog(a.db, { events: 300, seed: 42, now: NOW });
  seedMs = performance.now() - started;
});
afterAll(async () => {
  await dropAll(a);
});

const rows = async <T = Record<string, unknown>>(db: Db, sql: string, bindings: readonly unknown[] = []): Promise<T[]> =>
  ((await db.raw(sql, bindings as never[])) as { rows: T[] }).rows;

async function one<T>(db: Db, sql: string, bindings: readonly unknown[] = []): Promise<T> {
  const [row] = await rows<T>(db, sql, bindings);
  if (row === undefined) throw new Error(`no row from ${sql}`);
  return row;
}

describe('a full-detail seed of 300 events', () => {
  it('writes what it reports, quickly', async () => {
    expect(result.events).toBe(300);
    expect(result.firstEventId).toBe(SEED_FIRST_EVENT_ID);
    expect(result.lastEventId).toBe(SEED_FIRST_EVENT_ID + 299);
    for (const [table, n] of Object.entries(result.rows)) {
      const { count } = await one<{ count: number }>(a.db, `SELECT count(*)::int AS count FROM ${table}`);
      expect(count, table).toBe(n);
    }
    // A few seconds here; the bound leaves room for a loaded machine and still catches a
    // regression to row-at-a-time writes (`npm run seed` reports rows/s).
    expect(seedMs).toBeLessThan(45_000);
  });

  it('gives every event one search row whose counters are its newest snapshot', async () => {
    const mismatches = await rows(
      a.db,
      `SELECT e.id FROM events e
       LEFT JOIN event_search s ON s.event_id = e.id
       LEFT JOIN LATERAL (SELECT * FROM ma_stats_snapshots m WHERE m.event_id = e.id ORDER BY captured_at DESC, id DESC LIMIT 1) m ON TRUE
       WHERE s.event_id IS NULL
          OR s.tickets_sold <> coalesce(m.tickets_sold, 0) OR s.tickets_sold_24h <> coalesce(m.tickets_sold_24h, 0)
          OR s.available_tickets <> coalesce(m.available_tickets, 0)
          OR s.average_ticket_price_sold IS DISTINCT FROM m.average_ticket_price_sold`,
    );
    expect(mismatches).toEqual([]);
  });

  it('makes each snapshot’s 24 h flows the stored sales of those 24 h, and its percentages by the formulas', async () => {
    const snaps = await rows<Record<string, string | number | null> & { event_id: number; captured_at: Date }>(
      a.db,
      `SELECT m.*, (SELECT coalesce(sum(quantity), 0)::int FROM ma_sales s WHERE s.event_id = m.event_id AND s.sold_at > m.captured_at - interval '24 hours' AND s.sold_at <= m.captured_at) AS sold_in_window,
              (SELECT count(*)::int FROM ma_sales s WHERE s.event_id = m.event_id AND s.sold_at > m.captured_at - interval '24 hours' AND s.sold_at <= m.captured_at) AS listings_in_window
       FROM ma_stats_snapshots m`,
    );
    expect(snaps.length).toBeGreaterThan(300);
    for (const s of snaps) {
      expect(s.tickets_sold_24h, `event ${s.event_id}`).toBe(s.sold_in_window);
      expect(s.listings_sold_24h).toBe(s.listings_in_window);
      expect(s.tickets_sold_24h_percentage).toBe(percentChange(s.tickets_sold, Number(s.tickets_sold) - Number(s.tickets_sold_24h)));
      expect(s.available_tickets_24h_percentage).toBe(percentChange(s.available_tickets, s.available_tickets_24h));
      expect(s.get_in_price_24h_percentage).toBe(percentChange(s.get_in_price, s.get_in_price_24h));
      expect(s.captured_at.getTime()).toBeLessThanOrEqual(NOW.getTime());
    }
  });

  it('builds every histogram from the event’s stored sales by the histogram rule', async () => {
    const histograms = await rows<{ event_id: number; bins: number; min: string; max: string; currency: string; data: unknown }>(a.db, 'SELECT * FROM ma_price_histograms');
    const sales = await rows<{ event_id: number; price: string; quantity: number }>(a.db, 'SELECT event_id, price, quantity FROM ma_sales');
    const byEvent = new Map<number, typeof sales>();
    for (const s of sales) byEvent.set(s.event_id, [...(byEvent.get(s.event_id) ?? []), s]);
    let empty = 0;
    for (const h of histograms) {
      const expected = priceHistogram(byEvent.get(h.event_id) ?? [], h.currency);
      // numeric(14,2) reads back with two decimals ("0.00"); the rule writes "0" when empty.
      expect({ bins: h.bins, min: Number(h.min), max: Number(h.max), data: h.data }).toEqual({
        bins: expected.bins,
        min: Number(expected.min),
        max: Number(expected.max),
        data: expected.data,
      });
      if (expected.data.length === 0) empty++;
    }
    expect(empty).toBeGreaterThan(0);
  });

  it('has events without sales: null averages, histogram min and max 0 with no data', async () => {
    const silent = await rows<{ event_id: number; min: string; max: string; data: unknown[]; average: string | null; sold: number }>(
      a.db,
      `SELECT h.event_id, h.min, h.max, h.data, s.average_ticket_price_sold AS average, s.tickets_sold AS sold
       FROM ma_price_histograms h JOIN event_search s USING (event_id)
       WHERE s.tickets_sold = 0`,
    );
    expect(silent.length).toBeGreaterThan(0);
    for (const e of silent) {
      expect([Number(e.min), Number(e.max), e.data, e.average]).toEqual([0, 0, [], null]);
    }
    // The converse: an event that has sold has stored sales, so a non-empty histogram.
    const { inconsistent } = await one<{ inconsistent: number }>(
      a.db,
      `SELECT count(*)::int AS inconsistent FROM ma_price_histograms h JOIN event_search s USING (event_id)
       WHERE s.tickets_sold > 0 AND jsonb_array_length(h.data) = 0`,
    );
    expect(inconsistent).toBe(0);
    // And events not on sale yet: no statistics at all, counters 0 in search.
    const { count } = await one<{ count: number }>(
      a.db,
      `SELECT count(*)::int AS count FROM event_search s WHERE NOT EXISTS (SELECT 1 FROM ma_stats_snapshots m WHERE m.event_id = s.event_id)
         AND s.tickets_sold = 0 AND s.average_ticket_price_sold IS NULL`,
    );
    expect(count).toBeGreaterThan(0);
  });

  it('writes one daily row per day of the window, each with that day’s sales', async () => {
    const days = await rows<{ event_id: number; stat_date: string; tickets_sold_24h: number; sold: number; next: string | null }>(
      a.db,
      `SELECT d.event_id, d.stat_date::text, d.tickets_sold_24h,
              (SELECT coalesce(sum(quantity), 0)::int FROM ma_sales s WHERE s.event_id = d.event_id AND s.sold_at >= d.stat_date AND s.sold_at < d.stat_date + 1) AS sold,
              lead(d.stat_date::text) OVER (PARTITION BY d.event_id ORDER BY d.stat_date) AS next
       FROM ma_daily_stats d`,
    );
    expect(days.length).toBeGreaterThan(100);
    for (const d of days) {
      expect(d.tickets_sold_24h, `${d.event_id} ${d.stat_date}`).toBe(d.sold);
      if (d.next) expect(Date.parse(d.next) - Date.parse(d.stat_date)).toBe(DAY_MS);
    }
    const { longest } = await one<{ longest: number }>(a.db, 'SELECT max(n)::int AS longest FROM (SELECT count(*) AS n FROM ma_daily_stats GROUP BY event_id) x');
    expect(longest).toBeLessThanOrEqual(31);
  });

  it('spreads events over countries, categories, past and future, sharing artists and venues', async () => {
    const spread = await one<Record<string, number>>(
      a.db,
      `SELECT count(DISTINCT venue_country_code)::int AS countries, count(DISTINCT category_name)::int AS categories,
              count(*) FILTER (WHERE event_date < ?)::int AS past, count(*) FILTER (WHERE event_date > ?)::int AS future,
              (SELECT max(n) FROM (SELECT count(*)::int AS n FROM events GROUP BY artist_id) x) AS top_artist_events,
              (SELECT max(n) FROM (SELECT count(*)::int AS n FROM events GROUP BY venue_id) x) AS top_venue_events
       FROM event_search`,
      [NOW.getTime() / 1000, NOW.getTime() / 1000],
    );
    expect(spread.countries).toBeGreaterThanOrEqual(5);
    expect(spread.categories).toBeGreaterThanOrEqual(10);
    expect(spread.past).toBeGreaterThan(60);
    expect(spread.future).toBeGreaterThan(60);
    expect(spread.top_artist_events).toBeGreaterThanOrEqual(3);
    expect(spread.top_venue_events).toBeGreaterThanOrEqual(3);
    const prices = (await rows<{ p: string }>(a.db, 'SELECT average_ticket_price_sold AS p FROM event_search WHERE average_ticket_price_sold IS NOT NULL')).map((r) => Number(r.p)).sort((x, y) => x - y);
    // Log-normal-ish: a long right tail.
    expect(prices[Math.floor(prices.length * 0.95)]! / prices[Math.floor(prices.length / 2)]!).toBeGreaterThan(2);
  });

  it('lists some events on marketplace B, with scrape runs only for those, and artist audiences', async () => {
    const mb = await one<Record<string, number>>(
      a.db,
      `SELECT count(*) FILTER (WHERE marketplace_b_event_id IS NOT NULL)::int AS listed,
              (SELECT count(DISTINCT event_id)::int FROM mb_scrape_runs) AS scraped,
              (SELECT count(*)::int FROM mb_scrape_runs r JOIN events e ON e.id = r.event_id WHERE e.marketplace_b_event_id IS NULL) AS stray,
              (SELECT count(*)::int FROM artists a WHERE NOT EXISTS (SELECT 1 FROM artist_social_metrics m WHERE m.artist_id = a.id)) AS silent_artists,
              (SELECT count(*)::int FROM artist_social_snapshots) AS social_snapshots
       FROM events`,
    );
    expect(mb.listed).toBeGreaterThan(10);
    expect(mb.scraped).toBeGreaterThan(0);
    expect(mb.stray).toBe(0);
    expect(mb.silent_artists).toBe(0);
    expect(mb.social_snapshots).toBeGreaterThan(0);

    // Each seeded statistics row is derived from its run's offers the way the tracker derives it
    // (rollup.ts mbStatistics): listings in stock, the dearest and cheapest offer in stock with
    // fees, get-in = cheapest; and the first run of an event has no earlier one to rise from.
    const mismatched = await one<{ runs: number; bad: number; first_rises: number }>(
      a.db,
      `WITH o AS (
         SELECT run_id, count(*) FILTER (WHERE offer_stock > 0)::int AS listings,
                max(average_price_fees) FILTER (WHERE offer_stock > 0) AS hi,
                min(average_price_fees) FILTER (WHERE offer_stock > 0) AS lo
         FROM mb_offer_stats GROUP BY run_id)
       SELECT count(*)::int AS runs,
              count(*) FILTER (WHERE h.listings_available <> o.listings OR h.highest_price IS DISTINCT FROM o.hi
                                  OR h.lowest_price IS DISTINCT FROM o.lo OR h.get_in_price IS DISTINCT FROM o.lo)::int AS bad,
              (SELECT count(*)::int FROM mb_statistics_history f
                WHERE f.tickets_sold_24h <> 0
                  AND f.created_at = (SELECT min(created_at) FROM mb_statistics_history g WHERE g.event_id = f.event_id)) AS first_rises
       FROM mb_statistics_history h JOIN o ON o.run_id = h.run_id`,
    );
    expect(mismatched.runs).toBeGreaterThan(0);
    expect(mismatched).toMatchObject({ bad: 0, first_rises: 0 });
  });
});

describe('determinism, refusal and append', () => {
  let b: Scratch | undefined;
  afterAll(async () => {
    await dropAll(b);
  });

  const digest = async (db: Db) =>
    rows(
      db,
      `SELECT (SELECT md5(string_agg(concat_ws(',', id, name, event_date, venue_id, artist_id, category_id, marketplace_b_event_id, capacity), '|' ORDER BY id)) FROM events) AS events,
              (SELECT md5(string_agg(concat_ws(',', event_id, sale_ref, sold_at, quantity, price, currency), '|' ORDER BY event_id, sale_ref)) FROM ma_sales) AS sales,
              (SELECT md5(string_agg(s::text, '|' ORDER BY event_id)) FROM event_search s) AS search`,
    );

  it('gives the same catalog for the same seed and moment, a different one for another seed', async () => {
    b = await scratchDb('tm_seed_b');
    await seedCatalog(b.db, { events: 300, seed: 42, now: NOW, detail: 'full' });
    expect(await digest(b.db)).toEqual(await digest(a.db));
    await b.db.raw('TRUNCATE events, venues, artists, categories, search_dictionary CASCADE');
    await seedCatalog(b.db, { events: 300, seed: 43, now: NOW, detail: 'full', append: true });
    expect((await digest(b.db))[0]).not.toEqual((await digest(a.db))[0]);
  });

  it('refuses a database that has a catalog, and appends with new ids when asked', async () => {
    await expect(seedCatalog(a.db, { events: 10, now: NOW })).rejects.toThrow(SeedRefusedError);
    await expect(seedCatalog(a.db, { events: 10, now: NOW })).rejects.toThrow(/already has 300 events.*--append/);
    const more = await seedCatalog(a.db, { events: 10, now: NOW, append: true, detail: 'light' });
    expect(more.firstEventId).toBe(result.lastEventId + 1);
    const { count, kept } = await one<{ count: number; kept: number }>(
      a.db,
      'SELECT count(*)::int AS count, (SELECT n::int FROM event_search_count) AS kept FROM event_search',
    );
    expect(count).toBe(310);
    expect(kept).toBe(310); // the trigger-kept count search answers {} with
  });
});

describe('npm run seed and the demo catalog', () => {
  let c: Scratch | undefined;
  afterAll(async () => {
    await dropAll(c);
  });

  it('the CLI seeds with progress on stderr and a summary on stdout, and refuses a second run without --append', async () => {
    c = await scratchDb('tm_seed_cli');
    const env = { ...process.env, DATABASE_URL: '' };
    const first = await runTs('src/market-data/seed/cli.ts', ['--events', '50', '--detail', 'light', '--database-url', c.scratch.url], env);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ events: 50, firstEventId: SEED_FIRST_EVENT_ID });
    expect(first.stderr).toMatch(/seed: events 50\/50 \(100%\)/);
    expect(first.stderr).toMatch(/rows\/s/);
    const second = await runTs('src/market-data/seed/cli.ts', ['--events', '5', '--database-url', c.scratch.url], env);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/already has 50 events/);
    const bad = await runTs('src/market-data/seed/cli.ts', ['--events', 'many'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--events must be a positive integer/);
  }, 60_000);

  it('seeds 200 demo events into an empty catalog in well under 2 s, once', async () => {
    const d = await scratchDb('tm_seed_demo');
    try {
      const first = await ensureDemoCatalog(d.db);
      expect(first).toMatchObject({ created: true, events: 200 });
      // Well under 2 s on a quiet machine; the bound leaves room for a loaded one.
      expect(first.ms).toBeLessThan(10_000);
      expect(await ensureDemoCatalog(d.db)).toMatchObject({ created: false });
      const { count } = await one<{ count: number }>(d.db, 'SELECT count(*)::int AS count FROM event_search');
      expect(count).toBe(200);
    } finally {
      await dropAll(d);
    }
  });
});
