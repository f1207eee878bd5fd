// Watchlist API (spec 4.3): CRUD over the account's items plus /watchlist/health. Free. Every item
// returned carries its health (last_checked_at, check_status, last_changed_at: health.ts).
import type { z } from 'zod';
import type { Db } from '../../../db/connection.ts';
import type { ApiModule } from '../../gateway/app.ts';
import { CachedProbe, notReadySchema, probeFor } from '../../gateway/readiness.ts';
import type { RouteContext } from '../../gateway/route.ts';
import { parseEventRef } from '../../platform/event-ref.ts';
import { readWatchlistBody } from './body.ts';
import { notFound, WatchlistError, watchlistFailures } from './errors.ts';
import {
  createItemSchema,
  itemIdParams,
  rangeProblem,
  rowFilterProblem,
  SERVER_FIELDS,
  TARGET_FIELDS,
  updateItemSchema,
  watchlistItemWithHealthSchema,
  type WatchlistItem,
} from './schema.ts';
import { TooManyItemsError, UnknownWebhookError, WatchlistStore } from './store.ts';

const errorBody = { description: '`{error: string}`' };

/** Readiness of the watchlist database (GET /watchlist/health). */
const databaseProbe = probeFor<Db>(
  (db) => new CachedProbe(async () => void (await db.raw('SELECT 1')), { unavailableMessage: 'the watchlist database cannot be reached' }),
);

function parseBody<S extends z.ZodType>(ctx: RouteContext, schema: S, fixed: readonly string[]): Promise<z.output<S>> {
  return readWatchlistBody(ctx, schema, (value) => {
    for (const f of SERVER_FIELDS) {
      if (Object.hasOwn(value, f)) return `${f} is assigned by the server and cannot be sent`;
    }
    for (const f of fixed) {
      if (Object.hasOwn(value, f)) return `${f} identifies the monitored target and cannot be changed; create a new item instead`;
    }
    return null;
  });
}

/** One store per database: it groups each account's concurrent creates (store.ts). */
const stores = new WeakMap<Db, WatchlistStore>();

function store(ctx: RouteContext): WatchlistStore {
  const db = ctx.state.services.db;
  let s = stores.get(db);
  if (!s) stores.set(db, (s = new WatchlistStore(db)));
  return s;
}

function itemId(ctx: RouteContext): number {
  return Number((ctx as unknown as { params: { id: string } }).params.id);
}

export const watchlistApi: ApiModule = {
  api: 'watchlist',
  failures: watchlistFailures,
  routes: [
    {
      operationId: 'listWatchlist',
      summary: 'Items owned by the account, oldest first; empty array if none',
      responses: { 200: { description: 'Items', schema: watchlistItemWithHealthSchema.array() } },
      handler: async (ctx) => {
        ctx.body = await store(ctx).list(ctx.state.principal!.accountId);
      },
    },
    {
      operationId: 'createWatchlistItem',
      summary: 'Create an item; omitted fields take the server default, explicit null stores null',
      request: { body: createItemSchema },
      responses: {
        201: { description: 'The full item', schema: watchlistItemWithHealthSchema },
        400: { description: '`{error}` for invalid input; `{detail}` when the body is not JSON' },
      },
      handler: async (ctx) => {
        const fields = await parseBody(ctx, createItemSchema, []);
        // The monitors scrape what is stored, so the event and region must pass the same parser
        // (format, hosts, regions) as POST /events/scrape: nothing unmonitorable is kept. The
        // region stored is the parser's: lower-case, and for pf_08 the event URL's domain's.
        const ref = parseEventRef(fields.website, fields.event, fields.region);
        if (!ref.ok) throw new WatchlistError(400, ref.field === 'region' ? ref.message : `event: ${ref.message}`);
        const region = ref.ref.region;
        const problem = rangeProblem(fields) ?? rowFilterProblem(fields.website, fields.row_filter);
        if (problem) throw new WatchlistError(400, problem);
        try {
          ctx.body = await store(ctx).create(ctx.state.principal!.accountId, { ...fields, region }, ctx.state.services.config.WATCHLIST_MAX_ITEMS);
        } catch (err) {
          if (err instanceof TooManyItemsError || err instanceof UnknownWebhookError) throw new WatchlistError(400, err.message);
          throw err;
        }
        ctx.status = 201;
      },
    },
    {
      operationId: 'watchlistHealth',
      summary: 'Health of the watchlist backend (its database); authentication required',
      responses: {
        200: {
          description:
            '`{status: "ok"}`: the watchlist database answered `SELECT 1` (bounded to 2 s; the answer is reused for 1 s). ' +
            'The item monitors (Temporal workers that feed the stream) are not checked: the Watchlist API answers without them.',
        },
        503: {
          description: 'Gateway envelope `service_unavailable` (spec 7.1): the watchlist database cannot be reached within 2 s.',
          schema: notReadySchema,
        },
      },
      handler: async (ctx) => {
        await databaseProbe(ctx.state.services.db).assertReady((err) => ctx.state.log.warn({ err }, 'watchlist database not ready'));
        ctx.body = { status: 'ok' };
      },
    },
    {
      operationId: 'getWatchlistItem',
      summary: 'One item of the account',
      request: { params: itemIdParams },
      responses: { 200: { description: 'The item', schema: watchlistItemWithHealthSchema }, 404: errorBody },
      handler: async (ctx) => {
        const item = await store(ctx).get(ctx.state.principal!.accountId, itemId(ctx));
        if (!item) throw notFound();
        ctx.body = item;
      },
    },
    {
      operationId: 'updateWatchlistItem',
      summary: 'Change only the named fields; explicit null clears a nullable field',
      request: { params: itemIdParams, body: updateItemSchema },
      responses: {
        200: { description: 'The full updated item', schema: watchlistItemWithHealthSchema },
        400: { description: '`{error}` for invalid input; `{detail}` when the body is not JSON' },
        404: errorBody,
      },
      handler: async (ctx) => {
        const patch = await parseBody(ctx, updateItemSchema, TARGET_FIELDS);
        // row_filter is checked against the platform only when sent: an item stored before the
        // rule keeps taking other changes (pausing, muting) without first clearing it.
        const check = (merged: WatchlistItem) =>
          rangeProblem(merged) ?? (patch.row_filter !== undefined ? rowFilterProblem(merged.website, merged.row_filter) : null);
        const result = await store(ctx).update(ctx.state.principal!.accountId, itemId(ctx), patch, check);
        if (result === null) throw notFound();
        if (typeof result === 'string') throw new WatchlistError(400, result);
        ctx.body = result;
      },
    },
    {
      operationId: 'deleteWatchlistItem',
      summary: 'Soft-delete an item; it vanishes from the list and its monitor stops',
      request: { params: itemIdParams },
      responses: { 204: { description: 'Deleted, no body' }, 404: errorBody },
      handler: async (ctx) => {
        if (!(await store(ctx).softDelete(ctx.state.principal!.accountId, itemId(ctx)))) throw notFound();
        ctx.status = 204;
      },
    },
  ],
};
