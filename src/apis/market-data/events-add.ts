// POST /svc/data/events/add (spec 4.1; payload, answers and statuses are ours, docs/market-data.md
// "Event tracking"): starts tracking a marketplace A or B event. Body `{marketplace,
// event_id}` or `{marketplace, url}`; 201 with the tracking record when this request started it,
// 200 with the record when it was already tracked (idempotent, also under concurrent identical
// requests). It answers at once with status `pending`; the first scrape follows within seconds
// and the record's last_scraped_at shows it. Errors are spec 7.2's envelope: INVALID_REQUEST
// for a bad body, marketplace, id or URL, and for an account that tracks
// TRACKING_MAX_EVENTS_PER_ACCOUNT events already (spec 7.2 has no code of its own for a limit;
// 400 INVALID_REQUEST, not retried, as the watchlist's cap); EDGE_UNAVAILABLE when Temporal
// cannot be reached.
import { z } from 'zod';
import { readJsonObject } from '../../gateway/json-body.ts';
import type { RouteContext, RouteSpec } from '../../gateway/route.ts';
import { marketplaceBaseUrls } from '../../config.ts';
import { parseTrackTarget, publicEventUrl, TRACKABLE_MARKETPLACES, type TrackableMarketplace } from '../../market-data/tracking-ref.ts';
import { END_REASONS } from '../../market-data/tracking-lifecycle.ts';
import { TrackingCapError, TrackingUnavailableError, type TrackedEventRow } from '../../market-data/tracking-service.ts';
import { MarketDataError } from './errors.ts';
import { errorResponse, isoTimestamp, timestamp } from './response-schemas.ts';

const MAX_ID_LENGTH = 2048;

export const addEventRequestSchema = z
  .strictObject({
    marketplace: z.enum(TRACKABLE_MARKETPLACES).meta({ description: 'Which marketplace the event is on.' }),
    event_id: z
      .string()
      .max(MAX_ID_LENGTH)
      .optional()
      .meta({ description: 'The event id: on marketplace_a `E-<digits>` (e.g. `E-104729`); on marketplace_b the id in its event URL (6 to 32 letters or digits).' }),
    url: z
      .string()
      .max(MAX_ID_LENGTH)
      .optional()
      .meta({
        description:
          "The event page's URL instead of event_id: on the marketplace's public site (`https://www.marketplace-a.example/event/E-104729`, `https://www.marketplace-b.example/event/0B005F2A9B1E4D2C`). Any other host is refused.",
      }),
  })
  .refine((b) => (b.event_id === undefined) !== (b.url === undefined), { message: 'send exactly one of event_id and url' })
  .meta({ id: 'AddEventRequest', description: 'Exactly one of event_id and url.' });

export const trackedEventSchema = z
  .object({
    id: z.number().int().meta({ description: 'The tracking record id.' }),
    marketplace: z.enum(TRACKABLE_MARKETPLACES),
    event_id: z.string().meta({ description: "The marketplace's event id (from event_id or the URL)." }),
    event_url: z.string().meta({ description: "The event page on the marketplace's public site." }),
    catalog_event_id: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'The event in the catalog (search hits’ event_id) once the first scrape wrote it; null before.' }),
    status: z.enum(['pending', 'active', 'failing', 'failed', 'ended']).meta({
      description:
        '`pending`: started, not scraped yet; `active`: the last scrape succeeded; `failing`: the last scrape failed and is being retried with back-off; `failed`: tracking ended because the marketplace has no such event; `ended`: tracking ended (see end_reason). Adding a failed or ended event again restarts it.',
    }),
    created_at: timestamp,
    updated_at: timestamp,
    last_scraped_at: timestamp.nullable(),
    scrape_count: z.number().int().meta({ description: 'Scrapes written so far.' }),
    last_error: z.string().nullable(),
    last_error_at: timestamp.nullable(),
    ended_at: timestamp.nullable().meta({ description: 'When the tracking ended (`failed` or `ended`); null while it runs.' }),
    end_reason: z
      .enum(END_REASONS)
      .nullable()
      .meta({
        description:
          "Why it ended: `event_passed` (a set time after the event's date), `undated` (no date known for the longest time an undated event is tracked), `untracked` (no account tracks it), `not_found` (the marketplace has no such event); null while it runs.",
      }),
  })
  .meta({ id: 'TrackedEvent' });

export function trackedEventBody(row: TrackedEventRow): z.infer<typeof trackedEventSchema> {
  return {
    id: Number(row.id),
    marketplace: row.marketplace,
    event_id: row.external_id,
    event_url: publicEventUrl(row.marketplace, row.external_id),
    catalog_event_id: row.event_id === null ? null : Number(row.event_id),
    status: row.status,
    created_at: isoTimestamp(row.created_at)!,
    updated_at: isoTimestamp(row.updated_at)!,
    last_scraped_at: isoTimestamp(row.last_scraped_at),
    scrape_count: Number(row.scrape_count),
    last_error: row.last_error,
    last_error_at: isoTimestamp(row.last_error_at),
    ended_at: isoTimestamp(row.ended_at),
    end_reason: row.end_reason,
  };
}

function invalid(message: string): MarketDataError {
  return new MarketDataError('INVALID_REQUEST', message);
}

/** The first problem of a body that does not fit the schema, said in the client's terms. */
function problem(issues: z.core.$ZodIssue[]): string {
  const issue = issues[0]!;
  const field = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') return `unknown field${issue.keys.length > 1 ? 's' : ''}: ${issue.keys.slice(0, 5).join(', ')}`;
  if (field === 'marketplace') return `marketplace is required and must be one of ${TRACKABLE_MARKETPLACES.join(', ')}`;
  if (issue.code === 'invalid_type') return `${field} must be a string`;
  return field ? `${field}: ${issue.message}` : issue.message;
}

async function target(ctx: RouteContext): Promise<{ marketplace: TrackableMarketplace; id: string }> {
  const body = await readJsonObject(ctx, ctx.state.services.config.MAX_BODY_BYTES, 'a JSON object with marketplace and either event_id or url');
  if (!body.ok) throw invalid(body.message);
  const parsed = addEventRequestSchema.safeParse(body.value);
  if (!parsed.success) throw invalid(problem(parsed.error.issues));
  const { marketplace, event_id, url } = parsed.data;
  const baseUrls = ctx.state.services.tracking?.baseUrls ?? marketplaceBaseUrls(ctx.state.services.config);
  const result = parseTrackTarget(marketplace, { event_id, url }, baseUrls[marketplace]);
  if (!result.ok) throw invalid(result.message);
  return { marketplace, id: result.id };
}

export const addEventRoute: RouteSpec = {
  operationId: 'addEvent',
  summary: 'Start tracking a marketplace A or B event (idempotent)',
  request: { body: addEventRequestSchema },
  responses: {
    201: { description: 'Tracking started by this request (status `pending` until the first scrape)', schema: trackedEventSchema },
    200: { description: 'The event was already tracked: its tracking record', schema: trackedEventSchema },
    400: errorResponse(
      'INVALID_REQUEST: a body that is not a JSON object, an unknown marketplace, a bad event id, or a URL of another host; or the account tracks as many events as it may (TRACKING_MAX_EVENTS_PER_ACCOUNT, default 100) and this one is not among them',
    ),
    500: errorResponse('INTERNAL_ERROR: an unhandled error (not billed)'),
    503: errorResponse('EDGE_UNAVAILABLE: the tracking backend (Temporal) or the database cannot be reached; nothing was stored, retry (not billed)'),
    504: errorResponse('EDGE_TIMEOUT: the database exceeded its timeout (not billed)'),
  },
  handler: async (ctx) => {
    const what = await target(ctx);
    const tracker = ctx.state.services.tracking;
    if (!tracker) throw new MarketDataError('EDGE_UNAVAILABLE', 'event tracking is not available');
    try {
      const accountId = ctx.state.principal!.accountId;
      const { created, record } = await tracker.add({ ...what, accountId }, { maxPerAccount: ctx.state.services.config.TRACKING_MAX_EVENTS_PER_ACCOUNT });
      ctx.status = created ? 201 : 200;
      ctx.body = trackedEventBody(record);
      ctx.state.log.info({ marketplace: what.marketplace, event_id: what.id, created, tracking_id: record.id }, created ? 'tracking started' : 'tracking already under way');
    } catch (err) {
      if (err instanceof TrackingCapError) throw invalid(err.message);
      if (!(err instanceof TrackingUnavailableError)) throw err;
      ctx.state.log.error({ err: err.cause }, 'tracking backend unavailable');
      throw new MarketDataError('EDGE_UNAVAILABLE', 'the tracking backend is unreachable; retry later');
    }
  },
};
