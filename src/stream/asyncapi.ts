// The stream's AsyncAPI 3.0 document, generated from the protocol's zod schemas (protocol.ts)
// and the close-reason table (reasons.ts), so the document cannot drift from what is sent.
// Served as GET /asyncapi.json by the gateway and by the stream node.
import { z } from 'zod';
import { STREAM_CONNECTION_DEFAULTS } from '../config.ts';
import { CLOSE_REASONS } from './reasons.ts';
import { STREAM_PATH, heartbeatSchema, helloSchema, liveSchema, notificationSchema, targetRetiredSchema, platformIncidentSchema, watchlistChangeSchema } from './protocol.ts';

/** One example per message kind (the tests check each against its schema). */
export const EXAMPLES = {
  hello: {
    type: 'hello',
    connection_id: '0b7e4c1e-3f4a-4d55-9d6a-2f1c7f1f8e21',
    account_id: 42,
    head: 1288,
    last_id: 1270,
    resume_gap: false,
    limits: { max_buffered_bytes: 1_048_576, heartbeat_interval_ms: 25_000, max_replay_rows: 10_000, retention_seconds: 604_800 },
    server_time: '2026-11-22T10:15:00.000Z',
  },
  live: { type: 'live', head: 1288, replayed: 3 },
  heartbeat: { type: 'heartbeat', head: 1290, server_time: '2026-11-22T10:15:25.000Z' },
  notification: {
    type: 'notification',
    id: 1289,
    item_id: 17,
    change_type: 'price_decrease',
    platform: 'pf_03',
    event: 'https://pf03.example/e/summer-open-air-4411',
    region: 'us',
    section: 'Floor',
    before: { stock: 4, min_price: 120.5, avg_price: 131.25 },
    after: { stock: 4, min_price: 99, avg_price: 118.75 },
    currency: 'EUR',
    detected_at: '2026-11-22T10:15:03.512Z',
  },
  target_retired: {
    type: 'target_retired',
    id: 1302,
    item_id: 17,
    platform: 'pf_03',
    event: 'https://pf03.example/e/summer-open-air-4411',
    region: 'us',
    reason: 'not_found',
    not_found_since: '2026-11-22T09:14:50.120Z',
    retired_at: '2026-11-22T10:15:41.907Z',
    message:
      'The platform has answered "not found" for this event since 2026-11-22T09:14:50.120Z, so it is no longer checked. Delete the item, or update it (PATCH) to check the event again.',
  },
  platform_incident: {
    type: 'platform_incident',
    id: 1310,
    item_id: 17,
    platform: 'pf_03',
    event: 'https://pf03.example/e/summer-open-air-4411',
    region: 'us',
    state: 'failing',
    incident_id: 3,
    started_at: '2026-11-22T10:20:02.481Z',
    ended_at: null,
    message:
      'pf_03 is failing for most of the events watched on it (not found or blocked) since 2026-11-22T10:20:02.481Z. Its events go on being checked and none is retired while this lasts; you will be told when it recovers.',
  },
  watchlist: {
    type: 'watchlist',
    id: 1290,
    op: 'update',
    item_id: 17,
    item: {
      id: 17, client_id: 42, website: 'pf_03', event: 'https://pf03.example/e/summer-open-air-4411', region: 'us',
      min_price_filter: null, max_price_filter: 150, min_avg_price_threshold: null, max_avg_price_threshold: null,
      stock_threshold_filter: 1, stock_threshold_filter_max: null, seat_quantity: 2, priority: 0, section: null,
      keywords: null, date_filter: null, row_filter: null, change_type: 'price_decrease', standard_tickets: true,
      resale_tickets: false, general_admission_tickets: false, platinum_tickets: false, no_restricted_view: false,
      no_accessibility: false, no_presale: false, auto_add_to_watchlist: false, task_active: true, muted_until: null,
      cooldown_seconds: 0, mb_did: null, roles_json: null, webhook_setting_id: null, role_id: null, website_id: null, notes: null,
      created_at: '2026-11-22T09:00:00.000Z', updated_at: '2026-11-22T10:15:20.000Z', deleted: false,
    },
  },
} as const;

const MESSAGES = {
  hello: { schema: helloSchema, title: 'Hello', summary: 'First message: the connection id, the log head, the resume outcome and the limits' },
  live: { schema: liveSchema, title: 'Live', summary: 'The replay is over; messages now arrive as they are written' },
  heartbeat: { schema: heartbeatSchema, title: 'Heartbeat', summary: 'Every heartbeat_interval_ms while live; carries the log id the client may resume from' },
  notification: { schema: notificationSchema, title: 'Notification', summary: 'A watched item changed (spec 6)' },
  target_retired: { schema: targetRetiredSchema, title: 'Target retired', summary: "The item's event answered not-found for too long and is no longer checked (sent once)" },
  platform_incident: { schema: platformIncidentSchema, title: 'Platform incident', summary: "The item's platform is failing for most events watched on it (sent once), or has recovered (once)" },
  watchlist: { schema: watchlistChangeSchema, title: 'Watchlist change', summary: 'An item of the account was created, updated or deleted' },
} as const;

function hoist(schema: z.ZodType, into: Record<string, object>): object {
  const generated = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any', target: 'draft-2020-12' }) as Record<string, unknown>;
  const { $schema: _s, $defs, ...root } = generated as { $schema?: unknown; $defs?: Record<string, object> };
  const rewrite = <T>(node: T): T => {
    if (Array.isArray(node)) return node.map(rewrite) as T;
    if (node === null || typeof node !== 'object') return node;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) {
      out[k] = k === '$ref' && typeof v === 'string' ? v.replace(/^#\/\$defs\//, '#/components/schemas/') : rewrite(v);
    }
    return out as T;
  };
  for (const [name, def] of Object.entries($defs ?? {})) into[name] = rewrite(def);
  return rewrite(root);
}

const DESCRIPTION = `Change notifications for the account's watchlist items, changes to the items themselves, and
\`target_retired\` when an item's event has answered not-found too long (an hour by default) and is no longer checked,
and \`platform_incident\` when most events watched on an item's platform fail at once and when that is over,
pushed over one WebSocket. JSON text frames, server to client only (the server ignores what
clients send). Costs 0 credits.

**Connect** with the \`apikey\` header, or \`?apikey=\` for browsers, which cannot set headers on a
WebSocket. Refusals are HTTP answers before the upgrade, in the gateway envelope
\`{"error": {"code", "message"}}\`: 401 \`unauthenticated\` / \`invalid_credentials\`, 403 \`forbidden\`
(key without the \`stream\` API), 402 \`no_subscription\` / \`no_billing_account\` (the account is not served: no
active or trialing subscription; open connections close with 1008 \`not_served\`), 429 \`rate_limited\` (an upgrade counts as one request; RateLimit
headers and Retry-After as for HTTP), 429 \`too_many_connections\` (the key already holds its cap of open
connections, by default ${STREAM_CONNECTION_DEFAULTS.perKey}, or its account, over all its keys, ${STREAM_CONNECTION_DEFAULTS.perAccount}; counted over every node),
400 \`invalid_parameter\` (malformed last_id), 502
\`service_unavailable\`, 404 \`not_found\` (other paths), 426 \`upgrade_required\` (not an upgrade).

**Resume**: every message from the log has an \`id\`. Reconnect with \`?last_id=<id>\` (or the
\`Last-Event-ID\` header) to receive every message of the account after it, in order, before live
messages, with none missed and none repeated. \`hello.resume_gap\` is true when rows after last_id
may have been pruned (older than \`limits.retention_seconds\`), or when last_id is ahead of the log (a
restored database): the replay then starts from the log's last id, given as \`hello.last_id\`; take it
as your position and reload your state.

**Close codes** (standard codes only): ${Object.values(CLOSE_REASONS)
  .map((r) => `${r.code} \`${r.reason}\`: ${r.description}`)
  .join('; ')}. On any close, reconnect with the last id received (with backoff).`;

export function buildAsyncApi(): object {
  const schemas: Record<string, object> = {};
  const messages: Record<string, object> = {};
  for (const [name, m] of Object.entries(MESSAGES)) {
    messages[name] = {
      name,
      title: m.title,
      summary: m.summary,
      contentType: 'application/json',
      payload: hoist(m.schema, schemas),
      examples: [{ name: `${name} example`, payload: EXAMPLES[name as keyof typeof EXAMPLES] }],
    };
  }
  const channelMessages = Object.fromEntries(Object.keys(MESSAGES).map((n) => [n, { $ref: `#/components/messages/${n}` }]));
  return {
    asyncapi: '3.0.0',
    info: { title: 'Ticket market service: real-time stream', version: '1.0', description: DESCRIPTION },
    defaultContentType: 'application/json',
    servers: {
      public: {
        host: '{base_host}',
        protocol: 'wss',
        description: 'The service host ({base_url} of the spec); TLS only',
        variables: { base_host: { default: 'localhost:8080', description: 'host[:port] of the service' } },
        security: [{ $ref: '#/components/securitySchemes/apikeyHeader' }, { $ref: '#/components/securitySchemes/apikeyQuery' }],
      },
    },
    channels: {
      notifications: {
        address: STREAM_PATH,
        title: 'Account stream',
        description: 'Everything of one account: hello, replayed messages, live, then notifications, retired targets, watchlist changes and heartbeats as they happen.',
        messages: channelMessages,
        bindings: {
          ws: {
            method: 'GET',
            query: {
              type: 'object',
              properties: {
                apikey: { type: 'string', description: 'The API key, for clients that cannot set the apikey header' },
                last_id: { type: 'string', pattern: '^(0|[1-9][0-9]{0,15})$', description: 'Resume after this log id (the id of the last message received)' },
              },
            },
            headers: {
              type: 'object',
              properties: {
                apikey: { type: 'string', description: 'The API key' },
                'Last-Event-ID': { type: 'string', description: 'Same as ?last_id= (the query parameter wins when both are sent)' },
              },
            },
            bindingVersion: '0.1.0',
          },
        },
      },
    },
    operations: {
      receiveAccountStream: {
        action: 'send',
        channel: { $ref: '#/channels/notifications' },
        title: 'The server sends the account its messages',
        messages: Object.keys(MESSAGES).map((n) => ({ $ref: `#/channels/notifications/messages/${n}` })),
      },
    },
    components: {
      schemas,
      messages,
      securitySchemes: {
        apikeyHeader: { type: 'httpApiKey', name: 'apikey', in: 'header', description: 'API key in the apikey header' },
        apikeyQuery: { type: 'httpApiKey', name: 'apikey', in: 'query', description: 'API key as ?apikey= (browsers)' },
      },
    },
    'x-close-reasons': Object.values(CLOSE_REASONS),
  };
}
