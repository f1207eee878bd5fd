// The marketplaces' part of the simulator's control API (docs/simulator.md,
// "Marketplaces A, B and C"), for tests and demos:
//   PUT    /_sim/{marketplace}/events/{event_id}  set an event exactly (body: the marketplace's schema in state.ts)
//   GET    /_sim/{marketplace}/events/{event_id}  read it back, with the requests served so far
//   DELETE /_sim/{marketplace}/events/{event_id}  forget it (its pages then answer 404)
//   GET    /_sim/{marketplace}/events             every event of that marketplace
//   POST   /_sim/reset                            also puts the marketplaces back to their demo events
// {event_id} is the marketplace's event id (E-104729 on A) or its public event URL, URL-encoded.
// Mounted before the platforms' control router, which answers the rest of /_sim/.
import Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { readJsonBody } from '../../gateway/json-body.ts';
import { MARKETPLACE_INFO, MARKETPLACES, type MarketplaceKey } from '../../market-data/tracking-ref.ts';
import { INPUT_SCHEMAS, type MarketplaceStore } from './state.ts';

const MAX_BODY_BYTES = 4 * 1_048_576;

function fail(ctx: Context, status: number, error: string): void {
  ctx.status = status;
  ctx.body = { error };
}

/** The marketplace's event id from a path segment: the id itself or the event's public URL. */
export function marketplaceKeyFromPath(marketplace: MarketplaceKey, raw: string): string | null {
  const info = MARKETPLACE_INFO[marketplace];
  if (!raw.includes('://')) return info.id.test(raw) ? raw : null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  if (url.port || !info.hosts.includes(url.hostname)) return null;
  return info.path.exec(url.pathname)?.[1] ?? null;
}

export function marketplaceControlRouter(store: MarketplaceStore): Router {
  const router = new Router({ prefix: '/_sim' });

  router.post('/reset', async (ctx, next) => {
    store.reset();
    // The platforms' control router answers the request (204) and resets the platforms.
    await next();
  });

  for (const marketplace of MARKETPLACES) {
    const key = (ctx: Context): string | null => {
      const k = marketplaceKeyFromPath(marketplace, String(ctx.params.eventId));
      if (!k) fail(ctx, 400, `'${ctx.params.eventId}' is not an event id or event URL of ${marketplace} (ids look like ${MARKETPLACE_INFO[marketplace].example})`);
      return k;
    };
    router.get(`/${marketplace}/events`, (ctx) => {
      ctx.body = { events: store.all(marketplace) };
    });
    router.put(`/${marketplace}/events/:eventId`, async (ctx) => {
      const body = await readJsonBody(ctx, MAX_BODY_BYTES);
      if (body.kind === 'too_large') return fail(ctx, 413, `body is larger than ${body.limit} bytes`);
      if (body.kind !== 'json') return fail(ctx, 400, `body must be JSON${body.kind === 'invalid' ? `: ${body.reason}` : ''}`);
      const parsed = INPUT_SCHEMAS[marketplace].safeParse(body.value);
      if (!parsed.success) return fail(ctx, 400, z.prettifyError(parsed.error));
      const k = key(ctx);
      if (!k) return;
      ctx.body = store.put(marketplace, k, parsed.data);
    });
    router.get(`/${marketplace}/events/:eventId`, (ctx) => {
      const k = key(ctx);
      if (!k) return;
      const event = store.get(marketplace, k);
      if (!event) return fail(ctx, 404, 'unknown event');
      ctx.body = event;
    });
    router.delete(`/${marketplace}/events/:eventId`, (ctx) => {
      const k = key(ctx);
      if (!k) return;
      ctx.status = store.delete(marketplace, k) ? 204 : 404;
    });
  }
  return router;
}
