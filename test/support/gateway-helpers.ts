// Helpers shared by the gateway test files: a client that sends its own client address (so
// unauthenticated traffic of one file never uses up another file's per-address budget), reads
// of the billing tables, a wait that keeps a burst inside one calendar minute, and the
// fixture API that exercises the gateway contract for behaviour no real API has yet.
import { randomInt } from 'node:crypto';
import { createPool, type Pool } from '../../db/pool.ts';
import { createDb, type Db } from '../../db/connection.ts';
import { MarketDataError, marketDataFailures } from '../../src/apis/market-data/errors.ts';
import type { ApiModule } from '../../src/gateway/app.ts';
import { readJsonBody } from '../../src/gateway/json-body.ts';
import type { RouteContext } from '../../src/gateway/route.ts';
import { afterAll, beforeAll } from 'vitest';
import { APIS } from '../../src/apis/index.ts';
import { call, startTestGateway, type Reply, type TestGateway } from './harness.ts';

/**
 * Environment for gateways in these tests. Every gateway of the run shares one PostgreSQL, so
 * per-address windows are shared too: trust X-Forwarded-For and give each client its own
 * address, and keep the unauthenticated limit and the per-platform scrape limit (a property may
 * send dozens of scrapes to one platform in a minute) out of the way unless a test is about it.
 */
export const GATEWAY_ENV: Record<string, string> = {
  TRUST_PROXY: 'true',
  UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: '1000000',
  SCRAPE_REQUESTS_PER_PLATFORM_PER_MINUTE: '1000000',
};

/** A random private address, unique enough per test that windows never collide. */
export function randomAddress(): string {
  return `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;
}

export type Client = (
  method: string,
  path: string,
  opts?: { key?: string; body?: unknown; raw?: string; headers?: Record<string, string> },
) => Promise<Reply>;

/** `call` bound to a gateway and a client address (sent as X-Forwarded-For). */
export function clientFor(base: string, address = randomAddress()): Client {
  return (method, path, opts = {}) => call(base, method, path, { ...opts, headers: { 'x-forwarded-for': address, ...opts.headers } });
}

/**
 * Waits until no reservation of the account is pending. The gateway settles a paid request
 * (capture or release) just after its response, in batches, so a test reading the ledger or
 * the counter right after a response waits for that (a few milliseconds; at most 15 s).
 */
export async function settled(db: Db, accountId: number): Promise<void> {
  // Generous: on a loaded machine the settling batch can wait on the event loop and PostgreSQL.
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const pending = await db('credit_ledger').where({ account_id: accountId, state: 'reserved' }).first('request_id');
    if (!pending) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * `settle: false` reads at once, for a test that holds reservations open on purpose (the billing
 * provider driven directly, with no gateway to settle them).
 */
export interface ReadOptions {
  settle?: boolean;
}

/** Credits used in the account's current billing period (0 when no counter row exists). */
export async function usedCredits(db: Db, accountId: number, opts: ReadOptions = {}): Promise<number> {
  if (opts.settle !== false) await settled(db, accountId);
  const row = await db('usage_counters as u')
    .join('subscriptions as s', function () {
      this.on('s.account_id', '=', 'u.account_id').andOn('s.current_period_start', '=', 'u.period_start');
    })
    .where('u.account_id', accountId)
    .first('u.used');
  return row ? Number(row.used) : 0;
}

/** Credits used over every period of the account. */
export async function totalUsed(db: Db, accountId: number): Promise<number> {
  await settled(db, accountId);
  const row = await db('usage_counters').where({ account_id: accountId }).sum({ s: 'used' }).first();
  return Number(row?.s ?? 0);
}

export interface LedgerRow {
  request_id: string;
  account_id: number;
  key_id: string;
  period_start: Date;
  operation: string;
  credits: number;
  state: 'reserved' | 'charged' | 'released';
  status_code: number | null;
  created_at: Date;
  settled_at: Date | null;
}

export async function ledgerRows(db: Db, accountId: number, opts: ReadOptions = {}): Promise<LedgerRow[]> {
  if (opts.settle !== false) await settled(db, accountId);
  return db('credit_ledger').where({ account_id: accountId }).orderBy('created_at');
}

/** Sleeps past the next minute boundary when fewer than `marginMs` remain in this calendar minute. */
export async function awayFromMinuteEdge(marginMs = 5_000): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < marginMs) await new Promise((r) => setTimeout(r, left + 50));
}

/** Asserts the gateway envelope of spec 7.1 and returns its code. */
export function gatewayCode(r: Reply): string | undefined {
  const e = r.body?.error;
  if (e && typeof e === 'object' && typeof e.code === 'string' && typeof e.message === 'string' && Object.keys(r.body).length === 1) {
    return e.code;
  }
  return undefined;
}

/** What the fixture search route does, chosen by `?outcome=`. */
export const FIXTURE_OUTCOMES = ['ok', 'throw', 'status503', 'edge_unavailable', 'edge_timeout', 'not_found', 'status400'] as const;

/**
 * A fixture API exercising the gateway contract, not a Market Data implementation: it mounts
 * catalog operations in place of the real handlers (listMarketplaceASales for the sales_limit
 * cost rule; searchEvents for API 5xx and API 4xx answers on demand; addEvent to read a JSON
 * body), so the gateway's metering, denials and refunds are tested independently of what the
 * Market Data endpoints answer. Mount it with {@link withFixture}.
 */
export interface FixtureApi {
  module: ApiModule;
  /** Request ids of every request that reached a fixture handler. */
  seen: Set<string>;
}

/**
 * The real APIs with the fixture in place of the real handlers of the operations it serves
 * (each operation is mounted once, so routing and the OpenAPI document stay unambiguous).
 */
export function withFixture(fixture: FixtureApi, apis: readonly ApiModule[] = APIS): ApiModule[] {
  const replaced = new Set(fixture.module.routes.map((r) => r.operationId));
  return [...apis.map((m) => ({ ...m, routes: m.routes.filter((r) => !replaced.has(r.operationId)) })), fixture.module];
}

/** A fresh fixture API (see {@link FixtureApi}) with an empty `seen` set. */
export function createFixtureApi(): FixtureApi {
  const seen = new Set<string>();
  const module: ApiModule = {
    api: 'market_data',
    failures: marketDataFailures,
    routes: [
      {
        operationId: 'listMarketplaceASales',
        summary: 'fixture: sales list stand-in (cost ceil(sales_limit / 20))',
        responses: { 200: { description: 'fixture' } },
        handler: async (ctx: RouteContext) => {
          seen.add(ctx.state.requestId);
          ctx.body = { fixture: true, sales_limit: ctx.query.sales_limit ?? null, sales: [] };
        },
      },
      {
        operationId: 'searchEvents',
        summary: 'fixture: answers as ?outcome= says',
        responses: { 200: { description: 'fixture' } },
        handler: async (ctx: RouteContext) => {
          seen.add(ctx.state.requestId);
          switch (ctx.query.outcome) {
            case 'throw':
              throw new Error('fixture handler failed');
            case 'status503':
              ctx.status = 503;
              ctx.body = { status: 'error', code: 'EDGE_UNAVAILABLE', message: 'fixture' };
              return;
            case 'edge_unavailable':
              throw new MarketDataError('EDGE_UNAVAILABLE', 'fixture: data backend unreachable');
            case 'edge_timeout':
              throw new MarketDataError('EDGE_TIMEOUT', 'fixture: data backend timed out');
            case 'not_found':
              throw new MarketDataError('EVENT_NOT_FOUND', 'fixture: no such event');
            case 'status400':
              ctx.status = 400;
              ctx.body = { status: 'error', code: 'INVALID_REQUEST', message: 'fixture' };
              return;
            default:
              ctx.body = { fixture: true, hits: [] };
          }
        },
      },
      {
        operationId: 'addEvent',
        summary: 'fixture: reads the JSON body and says what it found',
        responses: { 200: { description: 'fixture' } },
        handler: async (ctx: RouteContext) => {
          seen.add(ctx.state.requestId);
          const body = await readJsonBody(ctx, ctx.state.services.config.MAX_BODY_BYTES);
          ctx.status = body.kind === 'too_large' ? 413 : 200;
          ctx.body = body;
        },
      },
    ],
  };
  return { module, seen };
}

/** A plain pg pool on a server that is not there (the gateway's per-request pool, dead). */
export function unreachablePool(): Pool {
  return createPool({ connectionString: 'postgres://postgres@127.0.0.1:1/x', max: 2 });
}

/**
 * A database handle on a server that refuses connections. Knex reports each failed connect
 * through its own console logger; silence it so the run's output stays readable.
 */
export function unreachableDb(): Db {
  const db = createDb({ connectionString: 'postgres://postgres@127.0.0.1:1/x', poolMax: 2 });
  (db.client as { logger: { _warn?: (m: unknown) => void } }).logger._warn = () => {};
  return db;
}

export interface FixtureGateway {
  readonly gw: TestGateway;
  readonly api: Client;
  readonly fixture: FixtureApi;
}

/**
 * A gateway with every real API plus the fixture API, started before the calling file's tests
 * and closed after them. Read its fields inside tests (they are set in beforeAll).
 */
export function useFixtureGateway(): FixtureGateway {
  const t = {} as { gw: TestGateway; api: Client; fixture: FixtureApi };
  beforeAll(async () => {
    t.fixture = createFixtureApi();
    t.gw = await startTestGateway({ env: GATEWAY_ENV, apis: withFixture(t.fixture) });
    t.api = clientFor(t.gw.url);
  });
  afterAll(async () => {
    await t.gw.close();
  });
  return t;
}
