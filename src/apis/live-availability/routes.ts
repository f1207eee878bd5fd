// Live Availability API (spec 4.2): the platform registry, on-demand scrapes run as Temporal
// workflows (scrape-runs.ts), and the liveness probe. Every error of the API itself is `{detail}`
// (spec 7.3); the gateway's refusals (a backend down, the per-platform scrape limit of
// scrape-limit.ts) are in the gateway envelope (spec 7.1).
import { z } from 'zod';
import type { ApiModule } from '../../gateway/app.ts';
import { GatewayError } from '../../gateway/errors.ts';
import { readJsonObject } from '../../gateway/json-body.ts';
import { NotReadyError, notReadySchema } from '../../gateway/readiness.ts';
import { RATE_LIMIT_RESPONSE_HEADERS } from '../../gateway/rate-limit.ts';
import type { RouteContext } from '../../gateway/route.ts';
import { parseEventRef, type EventRef } from '../../platform/event-ref.ts';
import { isPlatformKey, PLATFORM_KEYS, PLATFORMS, type PlatformKey } from '../../platform/registry.ts';
import { LiveAvailabilityError, liveAvailabilityFailures } from './errors.ts';
import { detailSchema, platformsResponseSchema, scrapeRequestSchema, scrapeResponseSchema, type PlatformDegraded } from './schema.ts';
import { ScrapeRunError, scrapeWorkflowId } from './scrape-runs.ts';
import { enforceScrapeLimit, scrapeLimitedSchema } from './scrape-limit.ts';

/**
 * The registry as spec 2.6 lists it (our internal fields stay inside), plus `degraded`: why the
 * platform cannot be scraped in full right now, or null. An added field, not a changed one: spec
 * 1 and 9 let new fields appear and clients ignore unknown keys, while the four fields of 2.6 keep
 * their meaning (a degraded platform is still listed, as it may come back at any moment).
 * Always present, null when fine, like the scrape response's own `degraded` (spec 2.5).
 */
function platformsBody(degraded: Partial<Record<PlatformKey, PlatformDegraded>>): string {
  return JSON.stringify({
    platforms: Object.fromEntries(
      PLATFORM_KEYS.map((k) => {
        const p = PLATFORMS[k];
        return [k, { description: p.description, sections_type: p.sections_type, regions: p.regions, event_id_example: p.event_id_example, degraded: degraded[k] ?? null }];
      }),
    ),
  });
}

async function scrapeTarget(ctx: RouteContext): Promise<EventRef> {
  const body = await readJsonObject(ctx, ctx.state.services.config.MAX_BODY_BYTES, 'a JSON object with platform, event_id and region');
  if (!body.ok) throw new LiveAvailabilityError(body.problem === 'too_large' ? 413 : 400, body.message);
  const parsed = scrapeRequestSchema.safeParse(body.value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.map(String).join('.');
    throw new LiveAvailabilityError(400, issue.code === 'invalid_type' ? `${field} is required and must be a string` : `${field}: ${issue.message}`);
  }
  const { platform, event_id, region } = parsed.data;
  if (!isPlatformKey(platform)) {
    throw new LiveAvailabilityError(400, `unknown or unsupported platform '${platform.slice(0, 40)}': expected one of ${PLATFORM_KEYS.join(', ')}`);
  }
  const ref = parseEventRef(platform, event_id, region);
  if (!ref.ok) throw new LiveAvailabilityError(400, ref.message);
  return ref.ref;
}

// Spec 7.3 has no status of its own for a platform that refuses us: it is the platform's
// failure, answered like one that kept failing (500, not billed), with a detail that says so.
const STATUS_BY_KIND = { not_found: 404, timeout: 408, blocked: 500, failed: 500 } as const;

export const liveAvailabilityApi: ApiModule = {
  api: 'live_availability',
  failures: liveAvailabilityFailures,
  routes: [
    {
      operationId: 'listPlatforms',
      summary: 'The eleven supported platforms (spec 2.6), each with whether it can be scraped in full right now',
      responses: { 200: { description: 'Registry', schema: platformsResponseSchema } },
      handler: async (ctx) => {
        const runner = ctx.state.services.scrapes;
        const degraded = runner ? await runner.degradedPlatforms((err) => ctx.state.log.warn({ err }, 'browser reports unread; no platform marked degraded')) : {};
        ctx.type = 'application/json';
        ctx.body = platformsBody(degraded);
      },
    },
    {
      operationId: 'scrapeEvent',
      summary: 'Scrape current availability of one event on one platform; synchronous, up to 60 s',
      request: { body: scrapeRequestSchema },
      responses: {
        200: { description: 'Scrape response (spec 2.5)', schema: scrapeResponseSchema },
        400: { description: 'Unknown platform, bad event id or region, or a body that is not a JSON object', schema: detailSchema },
        404: { description: 'Event not found on the platform', schema: detailSchema },
        408: { description: 'The platform took longer than 60 seconds', schema: detailSchema },
        429: {
          description:
            'Gateway envelope `rate_limited` (spec 7.1): the key\'s own limit (30 requests a minute by default), or more scrape ' +
            'requests to this platform in the current calendar minute than the account\'s plan allows over all its keys (10 by ' +
            'default); the message names the limit and the platform. Retry after `Retry-After` seconds, when the window ends. Not billed.',
          schema: scrapeLimitedSchema,
          headers: RATE_LIMIT_RESPONSE_HEADERS,
        },
        500: {
          description: 'Unexpected error during the scrape, the platform refusing requests (429/403), or its browser missing on the server (see `degraded` in GET /events/platforms); not billed',
          schema: detailSchema,
        },
      },
      handler: async (ctx) => {
        const ref = await scrapeTarget(ctx);
        await enforceScrapeLimit(ctx, ref.platform);
        const runner = ctx.state.services.scrapes;
        if (!runner) throw new GatewayError('service_unavailable', 'scrape backend not configured');
        try {
          ctx.body = await runner.run(ref);
          ctx.state.log.info({ workflow_id: scrapeWorkflowId(ref), platform: ref.platform, region: ref.region }, 'scraped');
        } catch (err) {
          if (!(err instanceof ScrapeRunError)) throw err;
          if (err.kind === 'unavailable') {
            ctx.state.log.error({ err: err.cause }, 'scrape backend unavailable');
            throw new GatewayError('service_unavailable', 'scrape backend unavailable');
          }
          ctx.state.log.warn(
            { workflow_id: scrapeWorkflowId(ref), platform: ref.platform, region: ref.region, kind: err.kind, reason: err.message },
            'scrape did not succeed',
          );
          throw new LiveAvailabilityError(STATUS_BY_KIND[err.kind], err.message);
        }
      },
    },
    {
      operationId: 'pingLiveAvailability',
      summary: 'Readiness of the scrape path: Temporal reachable and a scrape worker polling the scrape task queue',
      responses: {
        200: {
          description:
            '`{status: "ok"}`: Temporal answered and a scrape worker polled the scrape task queue within the last 90 s, ' +
            'so a scrape can run now. Checked with one DescribeTaskQueue call bounded to 2 s; the answer is reused for 1 s. 5 credits.',
          schema: z.object({ status: z.string() }),
        },
        503: {
          description:
            'Gateway envelope `service_unavailable` (spec 7.1): Temporal cannot be reached within 2 s, no scrape worker polls ' +
            'the scrape task queue, or no scrape backend is configured. Not billed.',
          schema: notReadySchema,
        },
      },
      handler: async (ctx) => {
        const runner = ctx.state.services.scrapes;
        if (!runner) throw new NotReadyError('scrape backend not configured');
        await runner.assertReady((err) => ctx.state.log.warn({ err }, 'scrape path not ready'));
        ctx.body = { status: 'ok' };
      },
    },
  ],
};
