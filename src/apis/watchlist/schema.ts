// The watchlist item (spec 2.1): one definition of every client-settable field, from which the
// create body (with server defaults), the PATCH body, the response type and the OpenAPI
// schemas all derive. Value types chosen where the spec leaves them open are documented in
// each field's description and in docs/watchlist.md ("Fields").
import { z } from 'zod';
import { offersHaveRows, PLATFORM_KEYS, ROW_PLATFORMS, type PlatformKey } from '../../platform/registry.ts';
import { ROLE_ID_TEXT, rolesJsonProblem } from '../../webhooks/role-ids.ts';

/**
 * Text PostgreSQL can store exactly: no NUL (text and jsonb reject it) and no unpaired UTF-16
 * surrogate (text would silently store U+FFFD, jsonb rejects the escape).
 */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
export function isStorableText(s: string): boolean {
  return !s.includes('\u0000') && !LONE_SURROGATE.test(s);
}
const STORABLE_TEXT = 'must not contain NUL characters or unpaired surrogates';
const text = () => z.string().refine(isStorableText, STORABLE_TEXT);

// The price columns are numeric(12,2) (db/migrations/002): two decimals, like the currencies
// prices come in. More decimals would come back rounded, so they are refused here.
const MONEY_MAX = 10_000_000;
/** The accepted range, as the descriptions of the money fields state it. */
const MONEY_RANGE = 'a number from 0 to 10000000 inclusive, in the event currency, with at most two decimals, or null';
const money = z
  .number()
  .min(0)
  .max(MONEY_MAX)
  .multipleOf(0.01)
  .refine((v) => Number(v.toFixed(2)) === v, 'must have at most two decimal places');
const stock = z.number().int().min(0).max(1_000_000);
const externalId = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);
const isoDate = z.iso.date();

/**
 * A Discord role id (a snowflake, 17-20 digits): a string of 17-20 digits, or an integer up to
 * 2^53 - 1 (what a JSON number holds exactly). The two forms never overlap (2^53 - 1 has 16
 * digits), which is how the text column gives each back in the form it was sent (store.ts).
 * One message for every refusal: the branch messages would only say which form was tried.
 */
const ROLE_ID_RULE =
  `must be a Discord role id: a string of 17 to 20 digits (no leading zero), or an integer from 1 to ${Number.MAX_SAFE_INTEGER} ` +
  '(larger ids lose digits as JSON numbers: send them as strings)';
const roleId = z.union(
  [
    z.number({ error: ROLE_ID_RULE }).int({ error: ROLE_ID_RULE }).min(1, { error: ROLE_ID_RULE }).max(Number.MAX_SAFE_INTEGER, { error: ROLE_ID_RULE }),
    z.string({ error: ROLE_ID_RULE }).regex(ROLE_ID_TEXT, { error: ROLE_ID_RULE }),
    z.null(),
  ],
  { error: ROLE_ID_RULE },
);

/** The longest a cooldown may be: one day. */
export const COOLDOWN_MAX_SECONDS = 86_400;

// timestamptz accepts offsets up to ±15:59, and instants must render back as four-digit-year
// RFC 3339 (toISOString switches to six-digit years past 9999 and PostgreSQL has no year 0).
const EARLIEST_INSTANT = Date.parse('0001-01-01T00:00:00Z');
const LATEST_INSTANT = Date.parse('9999-12-31T23:59:59Z');
const timestampInput = z.iso.datetime({ offset: true }).refine((v) => {
  const offset = /([+-])(\d{2}):(\d{2})$/.exec(v);
  if (offset && Number(offset[2]) > 15) return false;
  const t = Date.parse(v);
  return t >= EARLIEST_INSTANT && t < LATEST_INSTANT;
}, 'must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z, with an offset of at most ±15:59');

/** Any JSON value (what JSON.parse returns). */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

export const ROLES_JSON_MAX_CHARS = 16_384;
export const ROLES_JSON_MAX_DEPTH = 100;

/**
 * Why `value` cannot be stored as opaque JSON, or null. Iterative, so no nesting can exhaust the
 * stack (z.json() recurses and overflowed on deep input), and it keeps the value itself, so a
 * member named `__proto__` survives (z.json() rebuilds objects by assignment and lost it).
 */
export function opaqueJsonProblem(value: unknown): string | null {
  const pending: [unknown, number][] = [[value, 0]];
  while (pending.length) {
    const [v, depth] = pending.pop()!;
    if (v === null || typeof v === 'boolean') continue;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return 'numbers must be finite';
      continue;
    }
    if (typeof v === 'string') {
      if (!isStorableText(v)) return `strings ${STORABLE_TEXT}`;
      continue;
    }
    if (typeof v !== 'object') return 'must be a JSON value';
    if (depth >= ROLES_JSON_MAX_DEPTH) return `must not nest more than ${ROLES_JSON_MAX_DEPTH} levels of arrays and objects`;
    if (Array.isArray(v)) {
      for (const x of v) pending.push([x, depth + 1]);
      continue;
    }
    const proto: unknown = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) return 'must be a JSON value';
    for (const [k, x] of Object.entries(v)) {
      if (!isStorableText(k)) return `member names ${STORABLE_TEXT}`;
      pending.push([x, depth + 1]);
    }
  }
  if (JSON.stringify(value).length > ROLES_JSON_MAX_CHARS) return `must serialise to at most ${ROLES_JSON_MAX_CHARS} characters`;
  return null;
}

/**
 * Any JSON value, null included (spec 2.1: "JSON or null"), so it takes no `.nullable()`: that
 * would document it as `anyOf: [{}, {type: null}]`, whose empty member already admits null.
 * z.custom has no JSON Schema of its own (it would be the empty schema); the type list says
 * "any JSON value" to readers and code generators as well. Opaque but for the role ids a
 * Discord delivery reads from it, which must arrive exact (src/webhooks/role-ids.ts).
 */
const rolesJson = z
  .custom<Json>()
  .superRefine((v, ctx) => {
    const problem = opaqueJsonProblem(v) ?? rolesJsonProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .meta({ type: ['object', 'array', 'string', 'number', 'boolean', 'null'] });

export const CHANGE_TYPES = ['stock_increase', 'price_decrease', 'price_increase'] as const;

/** Fields a client may send on create and PATCH, without defaults. */
export const settableFields = {
  min_price_filter: money.nullable().meta({ description: `Ignore tickets priced below this: ${MONEY_RANGE}; at most max_price_filter` }),
  max_price_filter: money.nullable().meta({ description: `Ignore tickets priced above this: ${MONEY_RANGE}; at least min_price_filter` }),
  min_avg_price_threshold: money
    .nullable()
    .meta({ description: `Notify only when the average price of the matching tickets is at or above this: ${MONEY_RANGE}` }),
  max_avg_price_threshold: money
    .nullable()
    .meta({ description: `Notify only when the average price of the matching tickets is at or below this: ${MONEY_RANGE}` }),
  stock_threshold_filter: stock.nullable().meta({ description: 'Minimum available stock to notify on' }),
  stock_threshold_filter_max: stock.nullable().meta({ description: 'Maximum available stock to notify on' }),
  seat_quantity: z.number().int().min(1).max(100).meta({ description: 'Number of contiguous seats wanted (1..100)' }),
  priority: z
    .number()
    .int()
    .min(0)
    .max(1000)
    .meta({
      description:
        "0..1000, higher is more important: when a platform's request budget cannot poll every target at its interval, this account's higher-priority targets are polled first and its others wait. It never takes another account's share",
    }),
  section: text().min(1).max(200).nullable().meta({ description: 'Restrict to this section name (exact, case-insensitive)' }),
  keywords: z
    .array(text().min(1).max(100))
    .max(50)
    .nullable()
    .meta({
      description:
        'Up to 50 strings of 1..100 characters; only sections whose name contains at least one of them (case-insensitive substring) ' +
        'count. Offer names are not searched. Null or empty: every section',
    }),
  date_filter: z
    .strictObject({ from: isoDate.nullable().optional(), to: isoDate.nullable().optional() })
    .nullable()
    .meta({ description: 'Inclusive event-date window `{from, to}` as YYYY-MM-DD dates, either may be null or absent' }),
  row_filter: z
    .array(text().min(1).max(20))
    .max(100)
    .nullable()
    .meta({
      description:
        `Row names to restrict to (exact, case-insensitive), up to 100; offers without a row then do not count. Only ${ROW_PLATFORMS.join(' and ')} ` +
        'offers carry rows: on any other platform a non-empty row_filter is refused (400); null or [] is accepted everywhere',
    }),
  change_type: z.enum(CHANGE_TYPES).nullable().meta({ description: 'Which change notifies; null: any of them' }),
  standard_tickets: z.boolean(),
  resale_tickets: z.boolean(),
  general_admission_tickets: z.boolean(),
  platinum_tickets: z.boolean(),
  no_restricted_view: z.boolean(),
  no_accessibility: z.boolean(),
  no_presale: z.boolean(),
  auto_add_to_watchlist: z.boolean(),
  task_active: z.boolean().meta({ description: 'Whether monitoring is active' }),
  muted_until: timestampInput
    .nullable()
    .meta({ description: 'Suppress notifications until this time (RFC 3339 with Z or an offset up to ±15:59; returned in UTC)' }),
  cooldown_seconds: z
    .number()
    .int()
    .min(0)
    .max(COOLDOWN_MAX_SECONDS)
    .meta({
      description:
        'After a notification for a section of this item, later changes of that section are held until this many seconds have ' +
        'passed; then a held change that still holds is sent once, compared by this item\'s rules with the state it was detected ' +
        'from (`before`; ticket kinds unknown on either side left out), and one that has reverted is not. 0 (the default): every ' +
        'change notifies. ' +
        `Integer 0..${COOLDOWN_MAX_SECONDS}`,
    }),
  mb_did: text().min(1).max(200).nullable().meta({ description: 'Device id of marketplace B' }),
  roles_json: rolesJson.meta({
    description:
      `Any JSON value or null, opaque: stored and returned as sent (at most ${ROLES_JSON_MAX_CHARS} characters serialised, ${ROLES_JSON_MAX_DEPTH} levels deep). ` +
      'Discord deliveries also mention the role ids found in it: the elements of an array, or of the array under `roles` or ' +
      '`role_ids` of an object (an element that is an object stands for its `id`). A role id there given as a number above ' +
      `${Number.MAX_SAFE_INTEGER} is refused (400): JSON numbers lose its digits; send it as a string`,
  }),
  webhook_setting_id: externalId.nullable().meta({
    description:
      'Id of an active webhook of the account (POST /webhooks) that receives this item\'s notifications besides the stream; ' +
      'any other id is refused (400). Deleting the webhook sets it back to null.',
  }),
  role_id: roleId.meta({
    description:
      'Discord role id mentioned (`<@&id>`) by Discord deliveries of this item: a string of 17 to 20 digits (a snowflake), or ' +
      `an integer from 1 to ${Number.MAX_SAFE_INTEGER}; returned as sent (a string stays a string, an integer an integer)`,
  }),
  website_id: externalId.nullable().meta({ description: 'Positive integer id of a website' }),
  notes: text().max(2000).nullable().meta({ description: 'Free text, at most 2000 characters' }),
} as const;

type Settable = { [K in keyof typeof settableFields]: z.output<(typeof settableFields)[K]> };

/** Server defaults for a freshly created item (spec 2.1 where it gives them). */
export const ITEM_DEFAULTS: Settable = {
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

const target = {
  website: z.enum(PLATFORM_KEYS).meta({ description: 'Platform to monitor: one of the keys of GET /events/platforms' }),
  event: text().trim().min(1).max(2048).meta({ description: 'Event identifier on that platform (bare id or URL, spec 2.6)' }),
  region: text()
    .min(1)
    .max(16)
    .meta({
      description:
        "Region code; case-insensitive, stored lower-case. pf_08 takes its region from the event URL's domain (spec 2.6): " +
        'a region sent that differs is not an error, and the item carries the domain\'s',
    }),
};

export const TARGET_FIELDS = Object.keys(target) as (keyof typeof target)[];
export const SERVER_FIELDS = ['id', 'client_id', 'created_at', 'updated_at', 'deleted', 'last_checked_at', 'check_status', 'last_changed_at'] as const;

const withDefaults = Object.fromEntries(
  Object.entries(settableFields).map(([k, s]) => [k, (s as z.ZodType).default(ITEM_DEFAULTS[k as keyof Settable] as never)]),
) as { [K in keyof typeof settableFields]: z.ZodDefault<(typeof settableFields)[K]> };

export const createItemSchema = z.strictObject({ ...target, ...withDefaults }).meta({ id: 'WatchlistItemCreate' });
export const updateItemSchema = z.strictObject(settableFields).partial().meta({ id: 'WatchlistItemUpdate' });

export type CreateItem = z.output<typeof createItemSchema>;
export type UpdateItem = z.output<typeof updateItemSchema>;

const timestamp = z.iso.datetime();

export const watchlistItemSchema = z
  .object({
    id: z.number().int(),
    client_id: z.number().int(),
    ...target,
    ...settableFields,
    muted_until: timestamp.nullable(),
    created_at: timestamp,
    updated_at: timestamp,
    deleted: z.boolean(),
  })
  .meta({ id: 'WatchlistItem' });

export type WatchlistItem = z.output<typeof watchlistItemSchema>;

/**
 * What an item says of its monitoring (issue 38), in the order the issue names them
 * (src/apis/watchlist/health.ts derives it, and says which wins when several could apply;
 * docs/watchlist.md "Item health" explains each).
 */
export const CHECK_STATUSES = ['pending', 'ok', 'blocked', 'not_found', 'platform_failing', 'paused', 'retired', 'failing'] as const;
export type CheckStatus = (typeof CHECK_STATUSES)[number];

/**
 * The item's health: read from the monitors' tables each time the item is returned, never stored
 * with it, so the stream's `watchlist` messages and the change log carry the spec's fields only.
 */
export const healthFields = {
  last_checked_at: timestamp.nullable().meta({
    description:
      'When the item\'s event was last checked (RFC 3339, UTC): the end of the newest poll of its target (platform, event, region) that got ' +
      'an answer or a failure. Items on the same event share their polls. Written once a second, so it may trail check_status by that much. ' +
      'Null while check_status is `pending`, and when the event was never checked',
  }),
  check_status: z.enum(CHECK_STATUSES).meta({
    description:
      'The outcome of the item\'s monitoring now. `pending`: not checked since it was created or resumed; `ok`: the last check read the event; ' +
      '`blocked`: the platform refused the last check (429/403 or its challenge) and the event is asked again after a back-off; ' +
      '`not_found`: the platform answered that the event does not exist (404/410), and it is retired if that lasts; ' +
      '`platform_failing`: the last check failed during an incident of the whole platform; ' +
      '`paused`: not checked for this item, because task_active is false or the account is not served (no active subscription); ' +
      '`retired`: the event answered not-found for too long and is no longer checked (PATCH the item to check it again); ' +
      '`failing`: the last check failed for another reason (the platform\'s 5xx, a time-out, a page that could not be read)',
  }),
  last_changed_at: timestamp.nullable().meta({
    description:
      'When the event\'s content last changed as the service saw it (RFC 3339, UTC): when the newest stored version of the target\'s content was read, ' +
      'if an older version was stored before it. A version is stored only when the content (sections, prices, stock, ticket kinds and flags, ' +
      'start time) differs from the one before, whether or not the change passes this item\'s filters. Null while check_status is `pending`, ' +
      'and when only one version is known (no change seen since the event began to be watched)',
  }),
};
export const HEALTH_FIELDS = Object.keys(healthFields) as (keyof typeof healthFields)[];
export type ItemHealth = { [K in keyof typeof healthFields]: z.output<(typeof healthFields)[K]> };

/**
 * The item as GET, POST and PATCH return it: the spec's fields, then the three health fields
 * added beside them (spec 1: additive change). Named `WatchlistItem` in the OpenAPI document.
 */
export const watchlistItemWithHealthSchema = watchlistItemSchema.extend(healthFields).meta({
  id: 'WatchlistItem',
  description:
    'A watchlist item: the fields of spec 2.1, then its health (last_checked_at, check_status, last_changed_at), read from the monitors ' +
    'each time the item is returned',
});
export type WatchlistItemWithHealth = z.output<typeof watchlistItemWithHealthSchema>;

export const itemIdParams = z.object({ id: z.string().regex(/^[1-9][0-9]{0,15}$/).meta({ description: 'Item id' }) });

/** Rules across fields, checked on the item as it would be stored. */
export function rangeProblem(item: Settable): string | null {
  const pairs: [keyof Settable, keyof Settable][] = [
    ['min_price_filter', 'max_price_filter'],
    ['min_avg_price_threshold', 'max_avg_price_threshold'],
    ['stock_threshold_filter', 'stock_threshold_filter_max'],
  ];
  for (const [lo, hi] of pairs) {
    const a = item[lo] as number | null;
    const b = item[hi] as number | null;
    if (a !== null && b !== null && a > b) return `${lo} must not be greater than ${hi}`;
  }
  const d = item.date_filter;
  if (d?.from && d.to && d.from > d.to) return 'date_filter.from must not be after date_filter.to';
  return null;
}

/** Why `rowFilter` cannot apply on `platform`, or null: only seat maps carry rows (registry.ts). */
export function rowFilterProblem(platform: PlatformKey, rowFilter: readonly string[] | null): string | null {
  if (!rowFilter?.length || offersHaveRows(platform)) return null;
  return `row_filter: ${platform} offers carry no rows, so a row_filter would match nothing there (only ${ROW_PLATFORMS.join(', ')} have rows); send null or []`;
}
