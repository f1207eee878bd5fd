// The stream's wire protocol: every message the server sends, as zod schemas. They are the one
// definition behind the TypeScript types, the AsyncAPI document (asyncapi.ts) and the tests that
// check what real clients receive. All messages are JSON text frames; clients send nothing.
import { z } from 'zod';
import { CHANGE_TYPES, watchlistItemSchema } from '../apis/watchlist/schema.ts';

/** The stream's one path (spec 4.5), on the stream port and on the gateway's. */
export const STREAM_PATH = '/svc/notifications/subscribe';

const logId = z.number().int().min(0).meta({ description: 'Position in the notifications log (monotonic; resume with it as last_id)' });
const timestamp = z.string().meta({ description: 'RFC 3339 timestamp, UTC' });

export const limitsSchema = z
  .object({
    max_buffered_bytes: z.number().int().meta({
      description: 'Unsent bytes the server holds for this connection; past it the connection is closed with 1013 slow_consumer',
    }),
    heartbeat_interval_ms: z.number().int().meta({ description: 'A heartbeat is sent this often once the connection is live' }),
    max_replay_rows: z.number().int().meta({
      description: 'Most rows replayed on one connection; past it the server closes with 1013 replay_limit and the client reconnects with its last id',
    }),
    retention_seconds: z.number().int().meta({ description: 'How long rows stay in the log; a client away longer may have missed rows (resume_gap)' }),
  })
  .meta({ id: 'StreamLimits' });

export const helloSchema = z
  .object({
    type: z.literal('hello'),
    connection_id: z.string().meta({ description: 'Identifies this connection in support requests and server logs' }),
    account_id: z.number().int().meta({ description: "The key's account; every message on this connection is this account's" }),
    head: logId.meta({ description: "The node's log position now: without last_id, every row after it is delivered" }),
    last_id: logId.nullable().meta({ description: "Where the replay starts: the last_id sent, or the log's last id when the one sent is ahead of the log (a restored database); null without last_id" }),
    resume_gap: z.boolean().meta({
      description: 'true when rows after last_id may have been pruned (older than the retention), or last_id was ahead of the log (take hello.last_id as your position): reload state, e.g. GET /watchlist',
    }),
    limits: limitsSchema,
    server_time: timestamp,
  })
  .meta({ id: 'Hello', description: 'First message of every connection' });

export const liveSchema = z
  .object({
    type: z.literal('live'),
    head: logId.meta({ description: 'Every row of the account up to this id has been sent; live messages follow' }),
    replayed: z.number().int().min(0).meta({ description: 'Rows replayed after last_id before this message' }),
  })
  .meta({ id: 'Live', description: 'Sent once, after the replay (if any): from here on messages arrive as they are written' });

export const heartbeatSchema = z
  .object({
    type: z.literal('heartbeat'),
    head: logId.meta({
      description: 'Every row of the account up to this id has been sent before this heartbeat; a client may resume from it',
    }),
    server_time: timestamp,
  })
  .meta({ id: 'Heartbeat', description: 'Sent every heartbeat_interval_ms on a live connection' });

const priceState = z
  .object({
    stock: z.number().int().nullable().optional(),
    min_price: z.number().nullable().optional(),
    avg_price: z.number().nullable().optional(),
  })
  .loose()
  .meta({ id: 'NotificationValues', description: 'Stock and prices of what the item watches, before or after the change' });

export const notificationSchema = z
  .object({
    type: z.literal('notification'),
    id: logId,
    item_id: z.number().int().meta({ description: 'Watchlist item that matched' }),
    change_type: z.enum(CHANGE_TYPES).meta({ description: 'What changed (the item’s change_type decides which changes notify)' }),
    platform: z.string().meta({ description: 'Platform key, pf_01..pf_11' }),
    event: z.string().meta({ description: 'Event id on that platform, as in the item' }),
    region: z.string(),
    section: z.string().nullable().optional().meta({ description: 'Section the change is in, or null for the whole event' }),
    before: priceState.meta({
      description: "The section's values before the change; with the item's cooldown_seconds, at a cooldown's end: the values its held change was detected from",
    }),
    after: priceState.meta({ description: "The section's values after the change" }),
    currency: z.string().nullable().optional(),
    detected_at: timestamp.meta({ description: 'When the change was scraped' }),
  })
  .loose()
  .meta({ id: 'Notification', description: 'A watched item changed the way its change_type and filters ask for. New fields may appear.' });

export const targetRetiredSchema = z
  .object({
    type: z.literal('target_retired'),
    id: logId,
    item_id: z.number().int().meta({ description: 'Watchlist item whose event is no longer checked' }),
    platform: z.string().meta({ description: 'Platform key, pf_01..pf_11' }),
    event: z.string().meta({ description: 'Event id on that platform, as in the item' }),
    region: z.string(),
    reason: z.literal('not_found').meta({ description: 'Why: the platform answered not-found (404 or 410) for the event' }),
    not_found_since: timestamp.meta({ description: 'Since when every answer about the event was not-found' }),
    retired_at: timestamp.meta({ description: 'When the service stopped checking it' }),
    message: z.string().meta({ description: 'The same, in a sentence, with what to do' }),
  })
  .loose()
  .meta({
    id: 'TargetRetired',
    description:
      "The item's event has answered not-found for MONITOR_RETIRE_AFTER_MS (an hour by default) and is no longer checked: " +
      'the item stays in the watchlist but gets no notifications. Sent once per retirement to every item on the event. Delete the item, or ' +
      'update it (PATCH, or pause and resume it) to check the event again; a new item on the same event checks it again too.',
  });

export const platformIncidentSchema = z
  .object({
    type: z.literal('platform_incident'),
    id: logId,
    item_id: z.number().int().meta({ description: 'Watchlist item on the platform' }),
    platform: z.string().meta({ description: 'Platform key, pf_01..pf_11' }),
    event: z.string().meta({ description: "The item's event on that platform" }),
    region: z.string(),
    state: z.enum(['failing', 'recovered']).meta({ description: '`failing`: the incident began; `recovered`: it is over' }),
    incident_id: z.number().int().meta({ description: 'The incident: one `failing` and one `recovered` message per item carry the same id' }),
    started_at: timestamp.meta({ description: 'When the incident began' }),
    ended_at: timestamp.nullable().meta({ description: 'When it ended; null while failing' }),
    message: z.string().meta({ description: 'The same, in a sentence' }),
  })
  .loose()
  .meta({
    id: 'PlatformIncident',
    description:
      "Most of the events watched on the item's platform answer not-found or are blocked at once: the platform's failure, not the event's. " +
      'While it lasts the item\'s event goes on being checked and is never retired; its notifications resume when the platform answers again. ' +
      'Sent once to every item on the platform when the incident begins (`failing`) and once when it ends (`recovered`).',
  });

export const watchlistChangeSchema = z
  .object({
    type: z.literal('watchlist'),
    id: logId,
    op: z.enum(['create', 'update', 'delete']),
    item_id: z.number().int(),
    item: watchlistItemSchema.meta({ description: 'The item as it stands after the change (deleted: true on delete)' }),
  })
  .loose()
  .meta({ id: 'WatchlistChange', description: 'A watchlist item of the account was created, updated or deleted (spec 3.1)' });

/** Every message a client can receive, by `type`. */
export const serverMessageSchema = z.discriminatedUnion('type', [
  helloSchema,
  liveSchema,
  heartbeatSchema,
  notificationSchema,
  targetRetiredSchema,
  platformIncidentSchema,
  watchlistChangeSchema,
]);

export type Hello = z.infer<typeof helloSchema>;
export type Limits = z.infer<typeof limitsSchema>;
export type ServerMessage = z.infer<typeof serverMessageSchema>;

export function helloMessage(h: Omit<Hello, 'type' | 'server_time'>, now = new Date()): string {
  return JSON.stringify({ type: 'hello', ...h, server_time: now.toISOString() } satisfies Hello);
}

export function liveMessage(head: number, replayed: number): string {
  return JSON.stringify({ type: 'live', head, replayed } satisfies z.infer<typeof liveSchema>);
}

export function heartbeatMessage(head: number, now = new Date()): string {
  return JSON.stringify({ type: 'heartbeat', head, server_time: now.toISOString() } satisfies z.infer<typeof heartbeatSchema>);
}
