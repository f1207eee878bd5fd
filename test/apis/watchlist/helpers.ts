// Shared helpers for the Watchlist API tests: the field lists of spec 2.1, envelope checks,
// direct reads of the database the gateway writes to, and a LISTEN client for the change log.
// Expected values come from the spec, never from the service's own constants.
import pg from 'pg';
import { expect } from 'vitest';
import { watchlistItemSchema, watchlistItemWithHealthSchema, type WatchlistItem, type WatchlistItemWithHealth } from '../../../src/apis/watchlist/schema.ts';
import type { Db } from '../../../db/connection.ts';
import { call, databaseUrl, type Reply } from '../../support/harness.ts';

/** Every field of spec 2.1, in the spec's order, plus `cooldown_seconds` (issue 24; added fields are allowed by spec 9). */
export const ITEM_FIELDS = [
  'id',
  'client_id',
  'website',
  'event',
  'region',
  'min_price_filter',
  'max_price_filter',
  'min_avg_price_threshold',
  'max_avg_price_threshold',
  'stock_threshold_filter',
  'stock_threshold_filter_max',
  'seat_quantity',
  'priority',
  'section',
  'keywords',
  'date_filter',
  'row_filter',
  'change_type',
  'standard_tickets',
  'resale_tickets',
  'general_admission_tickets',
  'platinum_tickets',
  'no_restricted_view',
  'no_accessibility',
  'no_presale',
  'auto_add_to_watchlist',
  'task_active',
  'muted_until',
  'cooldown_seconds',
  'mb_did',
  'roles_json',
  'webhook_setting_id',
  'role_id',
  'website_id',
  'notes',
  'created_at',
  'updated_at',
  'deleted',
] as const;

export type ItemField = (typeof ITEM_FIELDS)[number];

/** The item's health (issue 38), returned after the spec's fields by every answer that carries an item. */
export const HEALTH_FIELDS = ['last_checked_at', 'check_status', 'last_changed_at'] as const;
/** check_status's values, as issue 38 names them. */
export const CHECK_STATUS_VALUES = ['pending', 'ok', 'blocked', 'not_found', 'platform_failing', 'paused', 'retired', 'failing'];

/** Assigned by the service; never accepted in a body (spec 2.1 "(server)" plus the timestamps and flag, and the health fields). */
export const SERVER_ONLY = ['id', 'client_id', 'created_at', 'updated_at', 'deleted', ...HEALTH_FIELDS] as const;
/** Required on create; they name the monitored target. */
export const TARGET_ONLY = ['website', 'event', 'region'] as const;
/** Fields a client may set on create and PATCH. */
export const SETTABLE = ITEM_FIELDS.filter(
  (f) => !(SERVER_ONLY as readonly string[]).includes(f) && !(TARGET_ONLY as readonly string[]).includes(f),
) as ItemField[];

/** Spec 2.1 types that allow null. */
export const NULLABLE = [
  'min_price_filter',
  'max_price_filter',
  'min_avg_price_threshold',
  'max_avg_price_threshold',
  'stock_threshold_filter',
  'stock_threshold_filter_max',
  'section',
  'keywords',
  'date_filter',
  'row_filter',
  'change_type',
  'muted_until',
  'mb_did',
  'roles_json',
  'webhook_setting_id',
  'role_id',
  'website_id',
  'notes',
] as const;

export const BOOLEANS = [
  'standard_tickets',
  'resale_tickets',
  'general_admission_tickets',
  'platinum_tickets',
  'no_restricted_view',
  'no_accessibility',
  'no_presale',
  'auto_add_to_watchlist',
  'task_active',
] as const;

export const NON_NULLABLE_SETTABLE = SETTABLE.filter((f) => !(NULLABLE as readonly string[]).includes(f));

/** Defaults of a freshly created item, as spec 2.1 states them (nulls where it gives none; issue 24's cooldown 0). */
export const SPEC_DEFAULTS: Record<string, unknown> = {
  min_price_filter: null,
  max_price_filter: null,
  min_avg_price_threshold: null,
  max_avg_price_threshold: null,
  stock_threshold_filter: 1,
  stock_threshold_filter_max: null,
  seat_quantity: 1,
  priority: 0,
  section: null,
  keywords: null,
  date_filter: null,
  row_filter: null,
  change_type: 'stock_increase',
  standard_tickets: true,
  resale_tickets: false,
  general_admission_tickets: false,
  platinum_tickets: false,
  no_restricted_view: false,
  no_accessibility: false,
  no_presale: false,
  auto_add_to_watchlist: false,
  task_active: true,
  muted_until: null,
  cooldown_seconds: 0,
  mb_did: null,
  roles_json: null,
  webhook_setting_id: null,
  role_id: null,
  website_id: null,
  notes: null,
};

/** A valid, non-default value for every settable field (each passes the range rules alone and together). */
export const SAMPLE_VALUES: Record<string, unknown> = {
  min_price_filter: 12.5,
  max_price_filter: 99.99,
  min_avg_price_threshold: 10,
  max_avg_price_threshold: 500.25,
  stock_threshold_filter: 4,
  stock_threshold_filter_max: 40,
  seat_quantity: 2,
  priority: 7,
  section: 'Floor A',
  keywords: ['vip', 'front row'],
  date_filter: { from: '2030-01-01', to: '2030-12-31' },
  // Not null, and valid on every platform: a non-empty row_filter needs a platform whose offers
  // have rows (rowTarget()), while these samples go with target()'s pf_03.
  row_filter: [],
  change_type: 'price_decrease',
  standard_tickets: false,
  resale_tickets: true,
  general_admission_tickets: true,
  platinum_tickets: true,
  no_restricted_view: true,
  no_accessibility: true,
  no_presale: true,
  auto_add_to_watchlist: true,
  task_active: false,
  muted_until: '2031-01-02T03:04:05.678Z',
  cooldown_seconds: 300,
  mb_did: 'device-1234',
  roles_json: { roles: [1, 'two', { three: null, four: [true, 4.5] }], name: 'x' },
  // Must name an active webhook of the account (issue 15); test/apis/webhooks/items.test.ts covers real ids.
  webhook_setting_id: null,
  // A Discord snowflake past 2^53 - 1, sent (and returned) as a string.
  role_id: '112233445566778899',
  website_id: 13,
  notes: 'hello, watchlist',
};

/**
 * A valid pf_03 event (spec 2.6: a full event URL, here on pf_03's own host with its `/e/{slug}`
 * path); `slug` is letters, digits and hyphens, 1..100 of them.
 */
export function pf03Event(slug: string): string {
  return `https://pf03.example/e/${slug}`;
}

/** A minimal valid create body (an unrestricted platform, so any 2-8 letter region works). */
export function target(over: Record<string, unknown> = {}): Record<string, unknown> {
  return { website: 'pf_03', event: pf03Event('42'), region: 'us', ...over };
}

/**
 * A minimal valid create body on a platform whose offers carry rows (spec 2.6: pf_02 has a seat
 * map, SeatMapSections), so a non-empty row_filter is accepted.
 */
export function rowTarget(over: Record<string, unknown> = {}): Record<string, unknown> {
  return { website: 'pf_02', event: 'https://www.pf02.example/uk/event/ev-2024-0917', region: 'uk', ...over };
}

/** RFC 3339 in UTC with a literal Z. */
export const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

export function expectUtcTimestamp(v: unknown): void {
  expect(typeof v).toBe('string');
  expect(v).toMatch(RFC3339_UTC);
  expect(Number.isFinite(Date.parse(v as string))).toBe(true);
}

/**
 * An item as the change log and the stream's `watchlist` messages carry it: schema-valid, exactly
 * the spec's fields, UTC timestamps.
 */
export function expectSpecItem(body: unknown): WatchlistItem {
  const parsed = watchlistItemSchema.safeParse(body);
  if (!parsed.success) throw new Error(`not a watchlist item: ${parsed.error.message}\n${JSON.stringify(body)}`);
  expect(Object.keys(body as object).sort()).toEqual([...ITEM_FIELDS].sort());
  const item = body as WatchlistItem;
  expectUtcTimestamp(item.created_at);
  expectUtcTimestamp(item.updated_at);
  if (item.muted_until !== null) expectUtcTimestamp(item.muted_until);
  return item;
}

/**
 * A response body that is a full item: the spec's fields (as expectSpecItem), then the health
 * fields, last, with their types.
 */
export function expectItem(body: unknown): WatchlistItemWithHealth {
  const parsed = watchlistItemWithHealthSchema.safeParse(body);
  if (!parsed.success) throw new Error(`not a watchlist item: ${parsed.error.message}\n${JSON.stringify(body)}`);
  expectSpecItem(specPart(body as WatchlistItemWithHealth));
  expect(Object.keys(body as object).slice(-HEALTH_FIELDS.length)).toEqual(HEALTH_FIELDS);
  const item = body as WatchlistItemWithHealth;
  expect(CHECK_STATUS_VALUES).toContain(item.check_status);
  if (item.last_checked_at !== null) expectUtcTimestamp(item.last_checked_at);
  if (item.last_changed_at !== null) expectUtcTimestamp(item.last_changed_at);
  return item;
}

/** An answered item without its health fields: what the change log and the stream carry of it. */
export function specPart(item: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(item).filter(([k]) => !(HEALTH_FIELDS as readonly string[]).includes(k)));
}

/** Watchlist validation envelope (spec 7.4): exactly `{error: string}`. */
export function expectWatchlistError(r: Reply, status: number): string {
  expect(r.status, r.text).toBe(status);
  expect(r.headers.get('content-type') ?? '').toMatch(/application\/json/);
  expect(Object.keys(r.body ?? {})).toEqual(['error']);
  expect(typeof r.body.error).toBe('string');
  expect(r.body.error.length).toBeGreaterThan(0);
  return r.body.error as string;
}

/** Body-not-JSON envelope (spec 7.4): exactly `{detail: string}`. */
export function expectDetail(r: Reply, status = 400): string {
  expect(r.status, r.text).toBe(status);
  expect(Object.keys(r.body ?? {})).toEqual(['detail']);
  expect(typeof r.body.detail).toBe('string');
  return r.body.detail as string;
}

/** Gateway envelope (spec 7.1): `{error: {code, message}}`. */
export function expectGatewayError(r: Reply, status: number, code: string): void {
  expect(r.status, r.text).toBe(status);
  expect(Object.keys(r.body ?? {})).toEqual(['error']);
  expect(r.body.error).toEqual({ code, message: expect.any(String) });
}

export async function createItem(url: string, key: string, extra: Record<string, unknown> = {}): Promise<WatchlistItemWithHealth> {
  const r = await call(url, 'POST', '/watchlist', { key, body: { ...target(), ...extra } });
  expect(r.status, r.text).toBe(201);
  return expectItem(r.body);
}

export async function getItem(url: string, key: string, id: number): Promise<WatchlistItemWithHealth> {
  const r = await call(url, 'GET', `/watchlist/${id}`, { key });
  expect(r.status, r.text).toBe(200);
  return expectItem(r.body);
}

/** The stored row, every column, as PostgreSQL returns it. */
export async function dbRow(db: Db, id: number): Promise<Record<string, unknown> | undefined> {
  return db('watchlist_items').where({ id }).first();
}

/** Rows of an account, deleted ones included. */
export async function rowCount(db: Db, accountId: number): Promise<number> {
  const r = await db('watchlist_items').where({ client_id: accountId }).count('* as n').first();
  return Number(r?.n);
}

export interface ChangeRow {
  id: number;
  account_id: number;
  item_id: number;
  op: string;
  item: Record<string, unknown>;
  created_at: Date;
}

export async function changesOf(db: Db, where: { account_id?: number; item_id?: number }): Promise<ChangeRow[]> {
  return db('watchlist_changes').where(where).orderBy('id');
}

export async function changeCount(db: Db, accountId: number): Promise<number> {
  const r = await db('watchlist_changes').where({ account_id: accountId }).count('* as n').first();
  return Number(r?.n);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A real PostgreSQL client LISTENing on a channel, keeping every payload in arrival order. */
export class Listener {
  readonly payloads: string[] = [];
  private waiters: (() => void)[] = [];

  private constructor(private readonly client: pg.Client) {}

  static async start(channel: string): Promise<Listener> {
    const client = new pg.Client({ connectionString: databaseUrl() });
    await client.connect();
    const l = new Listener(client);
    client.on('notification', (n) => {
      if (n.channel !== channel) return;
      l.payloads.push(n.payload ?? '');
      for (const w of l.waiters.splice(0)) w();
    });
    await client.query(`LISTEN ${channel}`);
    return l;
  }

  /** Resolves once every payload in `wanted` has arrived; rejects after `timeoutMs` (generous: over at once when they are in). */
  async waitFor(wanted: string[], timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!wanted.every((p) => this.payloads.includes(p))) {
      const left = deadline - Date.now();
      if (left <= 0) {
        const missing = wanted.filter((p) => !this.payloads.includes(p));
        throw new Error(`notifications not received: ${missing.join(', ')}`);
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  async close(): Promise<void> {
    await this.client.end();
  }
}

/** Item fields other than `except`, for before/after comparisons. */
export function without(item: Record<string, unknown>, ...except: string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(item).filter(([k]) => !except.includes(k)));
}
