// Fixtures for the Market Data read endpoints' tests (marketplace A, sales, marketplace B,
// artist): rows written straight into the catalog and statistics tables of migrations 005 and
// 006, a gateway with a paying account per test file, gateways whose data backend is down or
// slow, and the exact-shape check every response goes through.
//
// Every test file of the run shares one database (other files seed and track events too), so
// fixtures never assume an empty table: ids are random in a band of marketplace A's range no
// seed reaches, names and URLs carry a random tag, and reads are always by those ids.
import { SearchVocabulary } from '../../src/market-data/search-vocabulary.ts';
import { randomBytes, randomInt } from 'node:crypto';
import { afterAll, beforeAll, expect } from 'vitest';
import type { z } from 'zod';
import type { Db } from '../../db/connection.ts';
import { createPool, type Pool } from '../../db/pool.ts';
import type { PriceHistogram } from '../../src/market-data/price-histogram.ts';
import { createRequestPool } from '../../src/runtime/services.ts';
import { clientFor, GATEWAY_ENV, ledgerRows, unreachablePool, usedCredits, type Client } from './gateway-helpers.ts';
import { databaseUrl, newAccount, startTestGateway, testConfig, type Reply, type TestAccount, type TestGateway } from './harness.ts';

type Row = Record<string, unknown>;

const DAY_MS = 86_400_000;

/** A short random tag that keeps this run's names and URLs apart from every other file's. */
export function tag(): string {
  return randomBytes(5).toString('hex');
}

/** A marketplace A event id (`E-<digits>`) no other test (in this run's shared Temporal namespace) uses. */
export function randomAId(): string {
  return `E-${1 + Math.floor(Math.random() * 9e11)}`;
}

/** A marketplace B event id no other test uses. */
export function randomBId(): string {
  return `T${Math.random().toString(36).slice(2, 12).toUpperCase()}${Date.now().toString(36).toUpperCase()}`.slice(0, 20);
}

/** A catalog id in [500e9, 900e9): marketplace A's range (below 1e12), far above any seed. */
export function randomEventId(): number {
  return 500_000_000_000 + randomInt(400_000_000) * 1_000 + randomInt(1_000);
}

/**
 * "Now" for the fixtures, fixed (to the whole second) when this module loads: the same call gives
 * the same instant in a file's set-up and in its assertions.
 */
const FIXTURE_NOW = Math.floor(Date.now() / 1000) * 1000;

/** The UTC calendar date `days` from today ("2026-11-24"); negative is the past. */
export function utcDate(days = 0): string {
  return new Date(FIXTURE_NOW + days * DAY_MS).toISOString().slice(0, 10);
}

/** The moment `hours` from now (negative is the past). */
export function hoursFromNow(hours: number): Date {
  return new Date(FIXTURE_NOW + hours * 3_600_000);
}

export async function insertCategory(db: Db, name = `Fixture category ${tag()}`): Promise<{ id: number; name: string }> {
  const [row] = await db('categories').insert({ name }).onConflict('name').merge().returning('id');
  return { id: Number(row.id), name };
}

export async function insertVenue(db: Db, fields: Row = {}): Promise<number> {
  const [row] = await db('venues')
    .insert({ name: `Fixture Arena ${tag()}`, city: 'Lyon', country: 'France', country_code: 'FR', svg_map_url: null, capacity: 20_000, ...fields })
    .returning('id');
  return Number(row.id);
}

export interface ArtistFixture {
  id: number;
  name: string;
  url: string;
}

export async function insertArtist(db: Db, fields: Row = {}): Promise<ArtistFixture> {
  const t = tag();
  const values = { name: `Fixture Artist ${t}`, url: `https://www.marketplace-a.example/artist/fixture-${t}`, image_url: null, genre: null, country_code: null, ...fields };
  const [row] = await db('artists').insert(values).returning('id');
  return { id: Number(row.id), name: String(values.name), url: String(values.url) };
}

/** An event with nothing but a name unless `fields` says more (catalog columns of `events`). */
export async function insertEvent(db: Db, fields: Row = {}): Promise<number> {
  const id = (fields.id as number | undefined) ?? randomEventId();
  await db('events').insert({ name: `Fixture Event ${tag()}`, ...fields, id });
  return id;
}

/** A statistics snapshot; columns of ma_stats_snapshots, `captured_at` one hour ago unless given. */
export async function insertSnapshot(db: Db, eventId: number, fields: Row = {}): Promise<void> {
  await db('ma_stats_snapshots').insert({ event_id: eventId, captured_at: hoursFromNow(-1), currency: 'USD', ...fields });
}

export async function insertDailyStats(db: Db, eventId: number, rows: Row[]): Promise<void> {
  if (rows.length) await db('ma_daily_stats').insert(rows.map((r) => ({ event_id: eventId, ...r })));
}

export interface SaleFixture {
  sale_ref?: string;
  sold_at: Date;
  quantity: number;
  price: string;
  currency?: string;
  section?: string | null;
  row?: string | null;
  ticket_type?: string | null;
}

export async function insertSales(db: Db, eventId: number, sales: SaleFixture[]): Promise<void> {
  if (!sales.length) return;
  await db('ma_sales').insert(
    sales.map((s) => ({ section: null, row: null, ticket_type: null, currency: 'USD', ...s, event_id: eventId, sale_ref: s.sale_ref ?? `S-${tag()}` })),
  );
}

export async function insertHistogram(db: Db, eventId: number, h: PriceHistogram): Promise<void> {
  await db('ma_price_histograms').insert({ event_id: eventId, bins: h.bins, min: h.min, max: h.max, currency: h.currency, data: JSON.stringify(h.data), computed_at: new Date() });
}

export interface MarketplaceBRunFixture {
  created_at: Date;
  region?: string;
  sections?: Row[];
  offers?: Row[];
  /** The run's statistics row (columns of mb_statistics_history); none when absent. */
  history?: Row;
}

/** One scrape run with its section, offer and statistics rows, all stamped with the run's time. */
export async function insertMarketplaceBRun(db: Db, eventId: number, run: MarketplaceBRunFixture): Promise<number> {
  const [row] = await db('mb_scrape_runs').insert({ event_id: eventId, region: run.region ?? 'us', created_at: run.created_at }).returning('id');
  const runId = Number(row.id);
  const created_at = run.created_at;
  if (run.sections?.length) await db('mb_section_stats').insert(run.sections.map((s) => ({ run_id: runId, created_at, ...s })));
  if (run.offers?.length) await db('mb_offer_stats').insert(run.offers.map((o) => ({ run_id: runId, created_at, currency: 'USD', ...o })));
  if (run.history) await insertHistory(db, eventId, { run_id: runId, created_at, ...run.history });
  return runId;
}

/** A statistics history row; zero counts and USD unless given. */
export async function insertHistory(db: Db, eventId: number, fields: Row): Promise<void> {
  await db('mb_statistics_history').insert({
    event_id: eventId,
    tickets_sold: 0,
    tickets_sold_24h: 0,
    available_tickets: 0,
    listings_available: 0,
    currency: 'USD',
    ...fields,
  });
}

export async function insertSocialMetric(db: Db, artistId: number, fields: Row & { network: string }): Promise<void> {
  await db('artist_social_metrics').insert({ artist_id: artistId, updated_at: hoursFromNow(-2), ...fields });
}

export async function insertSocialSnapshots(db: Db, artistId: number, rows: (Row & { network: string; captured_at: Date })[]): Promise<void> {
  if (rows.length) await db('artist_social_snapshots').insert(rows.map((r) => ({ artist_id: artistId, ...r })));
}

/**
 * A fingerprint of every row the fixtures wrote for these events and artists, to show that a
 * burst of requests changed nothing.
 */
export async function storedDigest(db: Db, eventIds: number[], artistIds: number[]): Promise<string> {
  const r = await db.raw(
    `SELECT md5(string_agg(t, '|' ORDER BY t)) AS digest FROM (
       SELECT e::text AS t FROM events e WHERE id = ANY(?)
       UNION ALL SELECT s::text FROM ma_stats_snapshots s WHERE event_id = ANY(?)
       UNION ALL SELECT d::text FROM ma_daily_stats d WHERE event_id = ANY(?)
       UNION ALL SELECT s::text FROM ma_sales s WHERE event_id = ANY(?)
       UNION ALL SELECT h::text FROM ma_price_histograms h WHERE event_id = ANY(?)
       UNION ALL SELECT r::text FROM mb_scrape_runs r WHERE event_id = ANY(?)
       UNION ALL SELECT s::text FROM mb_section_stats s JOIN mb_scrape_runs r ON r.id = s.run_id WHERE r.event_id = ANY(?)
       UNION ALL SELECT o::text FROM mb_offer_stats o JOIN mb_scrape_runs r ON r.id = o.run_id WHERE r.event_id = ANY(?)
       UNION ALL SELECT h::text FROM mb_statistics_history h WHERE event_id = ANY(?)
       UNION ALL SELECT a::text FROM artists a WHERE id = ANY(?)
       UNION ALL SELECT m::text FROM artist_social_metrics m WHERE artist_id = ANY(?)
       UNION ALL SELECT s::text FROM artist_social_snapshots s WHERE artist_id = ANY(?)) rows`,
    [...Array<number[]>(9).fill(eventIds), ...Array<number[]>(3).fill(artistIds)],
  );
  return String(r.rows[0].digest);
}

/**
 * The response is exactly the schema's shape: it parses, and parsing (which drops keys the
 * schema does not name) gives back the same value, so no undocumented key slipped in.
 */
export function expectExactShape<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new Error(`response does not match its schema: ${JSON.stringify(parsed.error.issues.slice(0, 5))}\n${JSON.stringify(body).slice(0, 2000)}`);
  expect(parsed.data).toStrictEqual(body);
  return parsed.data;
}

/** Asserts a Market Data error (spec 7.2): status, envelope with exactly three keys, code. */
export function expectMarketDataError(r: Reply, status: number, code: string): string {
  expect(r.status, r.text).toBe(status);
  expect(Object.keys(r.body ?? {}).sort()).toEqual(['code', 'message', 'status']);
  expect(r.body).toMatchObject({ status: 'error', code });
  expect(typeof r.body.message).toBe('string');
  return r.body.message;
}

export interface ReadGateway {
  readonly gw: TestGateway;
  readonly api: Client;
  readonly account: TestAccount;
  /** GET with the file's key. */
  get(path: string): Promise<Reply>;
}

/** A real gateway with every API and a paying account, started for the calling file. */
export function useReadGateway(): ReadGateway {
  const t = {} as { gw: TestGateway; api: Client; account: TestAccount };
  beforeAll(async () => {
    t.gw = await startTestGateway({ env: GATEWAY_ENV });
    t.api = clientFor(t.gw.url);
    t.account = await newAccount(t.gw.db, { plan: 'pro', rateLimit: 1_000_000 });
  });
  afterAll(async () => {
    await t.gw?.close();
  });
  return {
    get gw() {
      return t.gw;
    },
    get api() {
      return t.api;
    },
    get account() {
      return t.account;
    },
    get: (path) => t.api('GET', path, { key: t.account.key }),
  };
}

/**
 * A gateway whose admission (keys, rate limit, billing) works on the live database while the
 * APIs' per-request pool is `dataPool`: a dead server (EDGE_UNAVAILABLE) or one with a short
 * statement timeout (EDGE_TIMEOUT).
 */
export async function startGatewayWithDataPool(dataPool: Pool): Promise<{ gw: TestGateway; close(): Promise<void> }> {
  const admissionPool = createRequestPool(testConfig(GATEWAY_ENV), databaseUrl());
  const gw = await startTestGateway({
    env: GATEWAY_ENV,
    pool: admissionPool,
    // The vocabulary reads the catalog too: it follows the data pool.
    services: { pool: dataPool, searchVocabulary: new SearchVocabulary(dataPool) },
  });
  return {
    gw,
    close: async () => {
      await gw.close(); // ends dataPool, the services' pool
      await admissionPool.end();
    },
  };
}

export function deadDataPool(): Pool {
  return unreachablePool();
}

export function slowDataPool(statementTimeoutMs: number): Pool {
  return createPool({ connectionString: databaseUrl(), max: 4, statementTimeoutMs });
}

/**
 * Runs `fn` while another connection holds an ACCESS EXCLUSIVE lock on `table`, so every read of
 * it waits (until its statement timeout).
 */
export async function whileLocked<T>(db: Db, table: string, fn: () => Promise<T>): Promise<T> {
  const trx = await db.transaction();
  try {
    await trx.raw('SET LOCAL lock_timeout = 5000');
    await trx.raw(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
    return await fn();
  } finally {
    await trx.rollback();
  }
}

/** Asserts the account paid `credits` in total and that the last request's ledger row is in `state`. */
export async function expectBilled(db: Db, accountId: number, requestId: string | null, credits: number, state: 'charged' | 'released'): Promise<void> {
  const rows = await ledgerRows(db, accountId);
  const row = rows.find((r) => r.request_id === requestId);
  expect(row, `ledger row of ${requestId}`).toBeDefined();
  expect(row!.state).toBe(state);
  expect(await usedCredits(db, accountId)).toBe(credits);
}
