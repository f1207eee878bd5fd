// The watchlist item (spec 2.1): one definition of every client-settable field, from which the
// create body (with server defaults), the PATCH body, the response type and the OpenAPI
// schemas all derive. Value types chosen where the spec leaves them open are documented in
// each field's description and in the README.
import { z } from 'zod';
import { PLATFORM_KEYS } from '../../platform/registry.ts';

const money = z.number().min(0).max(10_000_000);
const stock = z.number().int().min(0).max(1_000_000);
const externalId = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);
const isoDate = z.iso.date();

export const CHANGE_TYPES = ['stock_increase', 'price_decrease', 'price_increase'] as const;

/** Fields a client may send on create and PATCH, without defaults. */
export const settableFields = {
  min_price_filter: money.nullable().meta({ description: 'Ignore tickets priced below this (number, in the event currency)' }),
  max_price_filter: money.nullable().meta({ description: 'Ignore tickets priced above this' }),
  min_avg_price_threshold: money
    .nullable()
    .meta({ description: 'Notify only when the average price of the matching tickets is at or above this' }),
  max_avg_price_threshold: money
    .nullable()
    .meta({ description: 'Notify only when the average price of the matching tickets is at or below this' }),
  stock_threshold_filter: stock.nullable().meta({ description: 'Minimum available stock to notify on' }),
  stock_threshold_filter_max: stock.nullable().meta({ description: 'Maximum available stock to notify on' }),
  seat_quantity: z.number().int().min(1).max(100).meta({ description: 'Number of contiguous seats wanted (1..100)' }),
  priority: z.number().int().min(0).max(1000).meta({ description: 'Client-defined ordering, 0..1000; higher is more important' }),
  section: z.string().min(1).max(200).nullable().meta({ description: 'Restrict to this section name (exact, case-insensitive)' }),
  keywords: z
    .array(z.string().min(1).max(100))
    .max(50)
    .nullable()
    .meta({ description: 'Up to 50 words; an offer matches when its name or section contains any of them (case-insensitive)' }),
  date_filter: z
    .strictObject({ from: isoDate.nullable().optional(), to: isoDate.nullable().optional() })
    .nullable()
    .meta({ description: 'Inclusive event-date window `{from, to}` as YYYY-MM-DD dates, either may be null or absent' }),
  row_filter: z
    .array(z.string().min(1).max(20))
    .max(100)
    .nullable()
    .meta({ description: 'Row names to restrict to (exact, case-insensitive), up to 100' }),
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
  muted_until: z.iso.datetime({ offset: true }).nullable().meta({ description: 'Suppress notifications until this time (RFC 3339)' }),
  mb_did: z.string().min(1).max(200).nullable().meta({ description: 'Device id of marketplace B' }),
  roles_json: z
    .json()
    .refine((v) => JSON.stringify(v).length <= 16_384, 'must serialise to at most 16384 characters')
    .nullable()
    .meta({ description: 'Opaque JSON, stored and returned as sent (at most 16 KiB)' }),
  webhook_setting_id: externalId.nullable().meta({ description: 'Positive integer id of a webhook setting' }),
  role_id: externalId.nullable().meta({ description: 'Positive integer id of a role' }),
  website_id: externalId.nullable().meta({ description: 'Positive integer id of a website' }),
  notes: z.string().max(2000).nullable().meta({ description: 'Free text, at most 2000 characters' }),
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
  mb_did: null,
  roles_json: null,
  webhook_setting_id: null,
  role_id: null,
  website_id: null,
  notes: null,
};

const target = {
  website: z.enum(PLATFORM_KEYS).meta({ description: 'Platform to monitor: one of the keys of GET /events/platforms' }),
  event: z.string().trim().min(1).max(2048).meta({ description: 'Event identifier on that platform (bare id or URL, spec 2.6)' }),
  region: z.string().min(1).max(16).meta({ description: 'Region code; case-insensitive, stored lower-case' }),
};

export const TARGET_FIELDS = Object.keys(target) as (keyof typeof target)[];
export const SERVER_FIELDS = ['id', 'client_id', 'created_at', 'updated_at', 'deleted'] as const;

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
