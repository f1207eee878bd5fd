// What a watchlist item notifies on: its view of a target snapshot and the changes between two
// views. Pure functions (no I/O, no clock), used by the monitor's evaluation activity and
// tested rule by rule; docs/monitoring.md "Change rules (exact)" states the same rules for clients.
//
// 1. Matching tickets. An offer counts for an item when all of these hold: its section is the
//    item's `section` (case-insensitive; any section when null); the section name contains one
//    of `keywords` (case-insensitive; any when null or empty); the event's date is inside
//    `date_filter` (an unknown date passes); its row is in `row_filter` (case-insensitive; when
//    set, offers without a row do not count); its ticket type is enabled (`standard_tickets`,
//    `resale_tickets`, `general_admission_tickets`, `platinum_tickets`); it is not excluded by
//    `no_restricted_view`, `no_accessibility` or `no_presale`; its price is within
//    [`min_price_filter`, `max_price_filter`] (inclusive, each bound optional); and its `block`
//    (tickets sitting together) is at least `seat_quantity`.
// 2. Section view. Per section: `stock` is the sum of matching tickets, `min_price` the lowest
//    matching price, `avg_price` the quantity-weighted mean price (both null when stock is 0).
// 3. Changes, per section, between the previous and the new snapshot:
//    - `stock_increase`: stock went up (a section appearing counts from 0);
//    - `price_decrease` / `price_increase`: `min_price` went down / up, with stock on both sides.
//    `change_type` picks one of them; null notifies all three. Ticket kinds either snapshot does
//    not know (a failed pf_01 arm: `unknown`) are left out of both sides.
// 4. A change notifies only when, after it, the section's stock is within
//    [`stock_threshold_filter`, `stock_threshold_filter_max`] and its `avg_price` within
//    [`min_avg_price_threshold`, `max_avg_price_threshold`] (bounds inclusive, null = open).
//    Mute and pause are the monitor's business (monitor-rules in the workflow and activity).
import type { WatchlistItem } from '../apis/watchlist/schema.ts';
import type { SnapshotOffer, TargetSnapshot, TicketType } from './snapshot.ts';

const NONE: ReadonlySet<TicketType> = new Set();

export type ChangeType = 'stock_increase' | 'price_decrease' | 'price_increase';

/** The item fields a monitor needs (everything else about the item is the API's). */
export type MonitorConfig = Pick<
  WatchlistItem,
  | 'section'
  | 'keywords'
  | 'date_filter'
  | 'row_filter'
  | 'min_price_filter'
  | 'max_price_filter'
  | 'seat_quantity'
  | 'standard_tickets'
  | 'resale_tickets'
  | 'general_admission_tickets'
  | 'platinum_tickets'
  | 'no_restricted_view'
  | 'no_accessibility'
  | 'no_presale'
  | 'change_type'
  | 'stock_threshold_filter'
  | 'stock_threshold_filter_max'
  | 'min_avg_price_threshold'
  | 'max_avg_price_threshold'
  | 'task_active'
  | 'muted_until'
  | 'cooldown_seconds'
  | 'priority'
>;

export const MONITOR_CONFIG_FIELDS = [
  'section',
  'keywords',
  'date_filter',
  'row_filter',
  'min_price_filter',
  'max_price_filter',
  'seat_quantity',
  'standard_tickets',
  'resale_tickets',
  'general_admission_tickets',
  'platinum_tickets',
  'no_restricted_view',
  'no_accessibility',
  'no_presale',
  'change_type',
  'stock_threshold_filter',
  'stock_threshold_filter_max',
  'min_avg_price_threshold',
  'max_avg_price_threshold',
  'task_active',
  'muted_until',
  'cooldown_seconds',
  // Read by the shard's poll order (fair-share.ts), not by the diff.
  'priority',
] as const satisfies readonly (keyof MonitorConfig)[];

export function monitorConfig(item: MonitorConfig): MonitorConfig {
  return Object.fromEntries(MONITOR_CONFIG_FIELDS.map((f) => [f, item[f]])) as MonitorConfig;
}

export interface SectionView {
  stock: number;
  min_price: number | null;
  avg_price: number | null;
  currency: string | null;
}

export interface Change {
  section: string;
  change_type: ChangeType;
  currency: string | null;
  before: Omit<SectionView, 'currency'>;
  after: Omit<SectionView, 'currency'>;
}

const EMPTY: SectionView = { stock: 0, min_price: null, avg_price: null, currency: null };

function ticketTypeEnabled(cfg: MonitorConfig, o: SnapshotOffer): boolean {
  switch (o.ticket_type) {
    case 'standard':
      return cfg.standard_tickets;
    case 'resale':
      return cfg.resale_tickets;
    case 'general_admission':
      return cfg.general_admission_tickets;
    case 'platinum':
      return cfg.platinum_tickets;
  }
}

function offerMatches(cfg: MonitorConfig, o: SnapshotOffer, rows: Set<string> | null): boolean {
  if (!ticketTypeEnabled(cfg, o)) return false;
  if (cfg.no_restricted_view && o.restricted_view) return false;
  if (cfg.no_accessibility && o.accessible) return false;
  if (cfg.no_presale && o.presale) return false;
  if (cfg.min_price_filter !== null && o.price < cfg.min_price_filter) return false;
  if (cfg.max_price_filter !== null && o.price > cfg.max_price_filter) return false;
  if (o.block < cfg.seat_quantity) return false;
  if (rows && (o.row === null || !rows.has(o.row.toLowerCase()))) return false;
  return true;
}

function dateMatches(cfg: MonitorConfig, startsAt: string | null): boolean {
  const window = cfg.date_filter;
  if (!window || !startsAt) return true;
  const day = startsAt.slice(0, 10);
  if (window.from && day < window.from) return false;
  if (window.to && day > window.to) return false;
  return true;
}

function cents(v: number): number {
  return Math.round(v * 100) / 100;
}

/**
 * Rule 1 and 2: the item's per-section view of a snapshot (sections with no match are absent),
 * leaving out the ticket kinds in `hidden` (unknown on one side of a comparison).
 */
export function viewOf(snapshot: TargetSnapshot, cfg: MonitorConfig, hidden: ReadonlySet<TicketType> = NONE): Map<string, SectionView> {
  const view = new Map<string, SectionView>();
  if (!dateMatches(cfg, snapshot.starts_at)) return view;
  const wanted = cfg.section?.toLowerCase() ?? null;
  const keywords = cfg.keywords?.length ? cfg.keywords.map((k) => k.toLowerCase()) : null;
  const rows = cfg.row_filter?.length ? new Set(cfg.row_filter.map((r) => r.toLowerCase())) : null;
  for (const section of snapshot.sections) {
    const name = section.name.toLowerCase();
    if (wanted !== null && name !== wanted) continue;
    if (keywords && !keywords.some((k) => name.includes(k))) continue;
    let stock = 0;
    let min = Infinity;
    let total = 0;
    for (const o of section.offers) {
      if (hidden.has(o.ticket_type) || !offerMatches(cfg, o, rows)) continue;
      stock += o.quantity;
      total += o.price * o.quantity;
      if (o.price < min) min = o.price;
    }
    if (stock > 0) view.set(section.name, { stock, min_price: min, avg_price: cents(total / stock), currency: section.currency });
  }
  return view;
}

function within(v: number | null, lo: number | null, hi: number | null): boolean {
  if (v === null) return lo === null && hi === null;
  return (lo === null || v >= lo) && (hi === null || v <= hi);
}

/** Rules 3 and 4 for one section: the changes from `prev` to `next` this item notifies on. */
export function sectionChanges(name: string, prev: SectionView | undefined, next: SectionView | undefined, cfg: MonitorConfig): Change[] {
  const a = prev ?? EMPTY;
  const b = next ?? EMPTY;
  const kinds: ChangeType[] = [];
  if (b.stock > a.stock) kinds.push('stock_increase');
  if (a.min_price !== null && b.min_price !== null) {
    if (b.min_price < a.min_price) kinds.push('price_decrease');
    if (b.min_price > a.min_price) kinds.push('price_increase');
  }
  const out: Change[] = [];
  for (const kind of kinds) {
    if (cfg.change_type !== null && cfg.change_type !== kind) continue;
    if (!within(b.stock, cfg.stock_threshold_filter, cfg.stock_threshold_filter_max)) continue;
    if (!within(b.avg_price, cfg.min_avg_price_threshold, cfg.max_avg_price_threshold)) continue;
    const { currency: _pc, ...prevValues } = a;
    const { currency, ...nextValues } = b;
    out.push({ section: name, change_type: kind, currency: currency ?? a.currency, before: prevValues, after: nextValues });
  }
  return out;
}

/** The kinds to leave out when comparing two snapshots: what either side did not read. */
export function unknownOnEitherSide(before: TargetSnapshot, after: TargetSnapshot): ReadonlySet<TicketType> {
  return new Set([...(before.unknown ?? []), ...(after.unknown ?? [])]);
}

/** Rules 3 and 4: the changes from `before` to `after` this item notifies on, by section name. */
export function detectChanges(before: TargetSnapshot, after: TargetSnapshot, cfg: MonitorConfig): Change[] {
  // Only what both sides know is compared: a kind one side did not read is neither gone nor new.
  const hidden = unknownOnEitherSide(before, after);
  const a = viewOf(before, cfg, hidden);
  const b = viewOf(after, cfg, hidden);
  const names = [...new Set([...a.keys(), ...b.keys()])].sort();
  return names.flatMap((name) => sectionChanges(name, a.get(name), b.get(name), cfg));
}
