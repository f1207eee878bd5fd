// The simulator's control API, for tests and demos (docs/simulator.md, "Control API"):
//   PUT    /_sim/{platform}/events/{event_id}  set an event exactly (body: simEventInputSchema)
//   GET    /_sim/{platform}/events/{event_id}  read it back, with the requests served so far
//   DELETE /_sim/{platform}/events/{event_id}  forget it (its pages then answer 404)
//   GET    /_sim/events                        every event
//   GET    /_sim/requests?since=&platform=&address=  the event requests that arrived since an epoch ms (request-log.ts)
//   POST   /_sim/reset                         back to the seeded demo events (and pf_01's protection, the
//                                               address limits and bans, the bot walls to their start)
//   GET    /_sim/walls                         every site's bot wall: settings, passed, refusals by reason (walls/)
//   POST   /_sim/walls                         change walls' settings (body: wallsInputSchema); answers as GET
//   GET    /_sim/pf_01/protection              pf_01's protection: settings and counts
//   PUT    /_sim/pf_01/protection              change its settings (body: protectionInputSchema)
//   POST   /_sim/pf_01/protection/revoke       revoke every session token issued
//   GET    /_sim/{platform}/limits             the platform's limit by source address: settings and stats (address-limits.ts)
//   PUT    /_sim/{platform}/limits             change its settings (body: limitsInputSchema); answers as GET
//   PUT    /_sim/limits                        the same body for every platform: {platforms: {pf_01: {...}, ...}}
//   POST   /_sim/{platform}/bans               ban an address now (body: banInputSchema); 201 with its stats
//   DELETE /_sim/{platform}/bans               lift every ban of the platform (and forget its counts)
//   DELETE /_sim/bans                          the same on every platform
// {event_id} is the platform's event key or the whole client event id, URL-encoded.
import Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { readJsonBody } from '../gateway/json-body.ts';
import { isPlatformKey, PLATFORM_KEYS, type PlatformKey } from '../platform/registry.ts';
import { BAN_ANSWERS, isAddress, normalizeAddress, type AddressLimits } from './address-limits.ts';
import { CHALLENGE_MODES, TOKEN_CARRIERS, type Pf01Protection } from './platforms/pf_01-protection.ts';
import type { RequestLog } from './request-log.ts';
import { wallSettingsInputSchema } from './walls/settings.ts';
import { WALLED_SITES, type Walls } from './walls/wall.ts';
import { eventKeyFromPath, simEventInputSchema, type SimStore } from './state.ts';

const MAX_BODY_BYTES = 1_048_576;

/** Body of `PUT /_sim/pf_01/protection`. */
export const protectionInputSchema = z.strictObject({
  challenge: z.enum(CHALLENGE_MODES).optional(),
  token_in: z.enum(TOKEN_CARRIERS).optional(),
  session_ttl_ms: z.number().int().min(100).max(86_400_000).optional(),
});

/** Body of `PUT /_sim/{platform}/limits` and `PUT /_sim/limits`. */
export const limitsInputSchema = z.strictObject({
  requests_per_minute: z.number().int().min(1).max(1_000_000).nullable().optional(),
  ban_ms: z.number().int().min(0).max(86_400_000).optional(),
  ban_answer: z.enum(BAN_ANSWERS).optional(),
});

/** Body of `POST /_sim/{platform}/bans`; `ms` defaults to the platform's `ban_ms`. */
export const banInputSchema = z.strictObject({
  address: z.string().max(64).refine(isAddress, 'must be an IPv4 or IPv6 address'),
  ms: z.number().int().min(1).max(86_400_000).optional(),
});

/**
 * Body of `POST /_sim/walls`: `all` applies to every site first, then `sites` per site
 * (`{all: {enabled: true}, sites: {pf_03: {cookieRotateMs: 2000}}}`).
 */
export const wallsInputSchema = z.strictObject({
  all: wallSettingsInputSchema.optional(),
  sites: z.partialRecord(z.enum(WALLED_SITES as [string, ...string[]]), wallSettingsInputSchema).optional(),
});

function fail(ctx: Context, status: number, error: string): void {
  ctx.status = status;
  ctx.body = { error };
}

export function controlRouter(store: SimStore, protection: Pf01Protection, requests: RequestLog, limits: AddressLimits, walls: Walls): Router {
  const router = new Router({ prefix: '/_sim' });

  const platformOf = (ctx: Context): PlatformKey | null => {
    const platform = String(ctx.params.platform);
    if (isPlatformKey(platform)) return platform;
    fail(ctx, 404, `unknown platform '${platform}'`);
    return null;
  };

  /** The JSON body parsed by `schema`, or null with the 400 (or 413) already answered. */
  const parseBody = async <T>(ctx: Context, schema: z.ZodType<T>): Promise<T | null> => {
    const body = await readJsonBody(ctx, MAX_BODY_BYTES);
    if (body.kind === 'too_large') {
      fail(ctx, 413, `body is larger than ${body.limit} bytes`);
      return null;
    }
    if (body.kind !== 'json') {
      fail(ctx, 400, `body must be JSON${body.kind === 'invalid' ? `: ${body.reason}` : ''}`);
      return null;
    }
    const parsed = schema.safeParse(body.value);
    if (!parsed.success) {
      fail(ctx, 400, z.prettifyError(parsed.error));
      return null;
    }
    return parsed.data;
  };

  const target = (ctx: Context): { platform: PlatformKey; key: string } | null => {
    const platform = String(ctx.params.platform);
    if (!isPlatformKey(platform)) {
      fail(ctx, 404, `unknown platform '${platform}'`);
      return null;
    }
    const key = eventKeyFromPath(platform, String(ctx.params.eventId));
    if (!key) {
      fail(ctx, 400, `'${ctx.params.eventId}' is not an event key or event id of ${platform}`);
      return null;
    }
    return { platform, key };
  };

  router.get('/health', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/events', (ctx) => {
    ctx.body = { events: store.all() };
  });
  router.get('/requests', (ctx) => {
    const since = Number(ctx.query.since ?? 0);
    if (!Number.isFinite(since)) return fail(ctx, 400, 'since must be epoch milliseconds');
    const platform = typeof ctx.query.platform === 'string' ? ctx.query.platform : undefined;
    const address = typeof ctx.query.address === 'string' ? normalizeAddress(ctx.query.address) : undefined;
    ctx.body = { total: requests.total, requests: requests.since(since, platform, address) };
  });
  router.post('/reset', (ctx) => {
    store.reset();
    protection.reset();
    limits.reset();
    walls.reset();
    ctx.status = 204;
  });
  router.get('/walls', (ctx) => {
    ctx.body = { sites: walls.stats() };
  });
  router.post('/walls', async (ctx) => {
    const input = await parseBody(ctx, wallsInputSchema);
    if (!input) return;
    if (input.all) walls.configureAll(input.all);
    for (const [site, settings] of Object.entries(input.sites ?? {})) if (settings) walls.site(site as (typeof WALLED_SITES)[number]).configure(settings);
    ctx.body = { sites: walls.stats() };
  });
  router.put('/limits', async (ctx) => {
    const input = await parseBody(ctx, limitsInputSchema);
    if (!input) return;
    limits.configureAll(input);
    const now = Date.now();
    ctx.body = { platforms: Object.fromEntries(PLATFORM_KEYS.map((p) => [p, limits.platform(p).stats(now)])) };
  });
  router.delete('/bans', (ctx) => {
    limits.liftAll();
    ctx.status = 204;
  });
  router.get('/:platform/limits', (ctx) => {
    const platform = platformOf(ctx);
    if (!platform) return;
    ctx.body = limits.platform(platform).stats(Date.now());
  });
  router.put('/:platform/limits', async (ctx) => {
    const platform = platformOf(ctx);
    if (!platform) return;
    const input = await parseBody(ctx, limitsInputSchema);
    if (!input) return;
    const limiter = limits.platform(platform);
    limiter.configure(input);
    ctx.body = limiter.stats(Date.now());
  });
  router.post('/:platform/bans', async (ctx) => {
    const platform = platformOf(ctx);
    if (!platform) return;
    const input = await parseBody(ctx, banInputSchema);
    if (!input) return;
    const limiter = limits.platform(platform);
    const address = normalizeAddress(input.address);
    ctx.status = 201;
    ctx.body = { address, ...limiter.ban(address, input.ms ?? limiter.current.ban_ms, Date.now()) };
  });
  router.delete('/:platform/bans', (ctx) => {
    const platform = platformOf(ctx);
    if (!platform) return;
    limits.platform(platform).liftAll();
    ctx.status = 204;
  });
  router.get('/pf_01/protection', (ctx) => {
    ctx.body = protection.stats();
  });
  router.put('/pf_01/protection', async (ctx) => {
    const body = await readJsonBody(ctx, MAX_BODY_BYTES);
    if (body.kind === 'too_large') return fail(ctx, 413, `body is larger than ${body.limit} bytes`);
    if (body.kind !== 'json') return fail(ctx, 400, `body must be JSON${body.kind === 'invalid' ? `: ${body.reason}` : ''}`);
    const parsed = protectionInputSchema.safeParse(body.value);
    if (!parsed.success) return fail(ctx, 400, z.prettifyError(parsed.error));
    protection.configure(parsed.data);
    ctx.body = protection.stats();
  });
  router.post('/pf_01/protection/revoke', (ctx) => {
    protection.revokeAll();
    ctx.status = 204;
  });
  router.put('/:platform/events/:eventId', async (ctx) => {
    const body = await readJsonBody(ctx, MAX_BODY_BYTES);
    if (body.kind === 'too_large') return fail(ctx, 413, `body is larger than ${body.limit} bytes`);
    if (body.kind !== 'json') return fail(ctx, 400, `body must be JSON${body.kind === 'invalid' ? `: ${body.reason}` : ''}`);
    const parsed = simEventInputSchema.safeParse(body.value);
    if (!parsed.success) return fail(ctx, 400, z.prettifyError(parsed.error));
    const t = target(ctx);
    if (!t) return;
    ctx.body = store.put(t.platform, t.key, parsed.data);
  });
  router.get('/:platform/events/:eventId', (ctx) => {
    const t = target(ctx);
    if (!t) return;
    const event = store.get(t.platform, t.key);
    if (!event) return fail(ctx, 404, 'unknown event');
    ctx.body = event;
  });
  router.delete('/:platform/events/:eventId', (ctx) => {
    const t = target(ctx);
    if (!t) return;
    ctx.status = store.delete(t.platform, t.key) ? 204 : 404;
  });
  return router;
}
