// Column maps for the seed's bulk writes (writer.ts): for each table, its columns in migration
// 005 and 006, the PostgreSQL type each is sent as, and where its value comes from.
import { publicEventUrl } from '../tracking-ref.ts';
import { MARKETPLACE_A_IMAGES, MARKETPLACE_A_SITE, type SeedArtist, type SeedEvent, type SeedVenue } from './catalog.ts';
import type { MarketplaceBRun } from './marketplace-b.ts';
import type { SocialMetricRow, SocialSnapshotRow } from './social.ts';
import type { DailyRow, HistogramRow, SaleRow, SnapshotRow } from './statistics.ts';
import type { Column } from './writer.ts';

export type VenueRow = SeedVenue & { id: number };
export type ArtistRow = SeedArtist & { id: number };
export type EventRow = SeedEvent & { id: number; venueId: number; artistId: number; categoryId: number };

export const VENUE_COLUMNS: Column<VenueRow>[] = [
  ['id', 'bigint', (v) => v.id],
  ['name', 'text', (v) => v.name],
  ['city', 'text', (v) => v.city],
  ['country', 'text', (v) => v.country.name],
  ['country_code', 'text', (v) => v.country.code],
  ['svg_map_url', 'text', (v) => `${MARKETPLACE_A_IMAGES}/maps/venue-${v.id}.svg`],
  ['capacity', 'integer', (v) => v.capacity],
];

export const ARTIST_COLUMNS: Column<ArtistRow>[] = [
  ['id', 'bigint', (a) => a.id],
  ['name', 'text', (a) => a.name],
  // The id keeps the URL unique when two invented artists share a name.
  ['url', 'text', (a) => `${MARKETPLACE_A_SITE}/artist/${a.slug}-${a.id}`],
  ['image_url', 'text', (a) => `${MARKETPLACE_A_IMAGES}/artists/${a.id}.jpg`],
  ['genre', 'text', (a) => a.category.name],
  ['country_code', 'text', (a) => a.country.code],
];

export const SOCIAL_METRIC_COLUMNS: Column<SocialMetricRow>[] = [
  ['artist_id', 'bigint', (m) => m.artist_id],
  ['network', 'text', (m) => m.network],
  ['handle', 'text', (m) => m.handle],
  ['profile_url', 'text', (m) => m.profile_url],
  ['followers', 'bigint', (m) => m.followers],
  ['monthly_listeners', 'bigint', (m) => m.monthly_listeners],
  ['updated_at', 'timestamptz', (m) => m.updated_at],
];

export const SOCIAL_SNAPSHOT_COLUMNS: Column<SocialSnapshotRow>[] = [
  ['artist_id', 'bigint', (m) => m.artist_id],
  ['network', 'text', (m) => m.network],
  ['followers', 'bigint', (m) => m.followers],
  ['monthly_listeners', 'bigint', (m) => m.monthly_listeners],
  ['captured_at', 'timestamptz', (m) => m.captured_at],
];

export const EVENT_COLUMNS: Column<EventRow>[] = [
  ['id', 'bigint', (e) => e.id],
  ['name', 'text', (e) => e.name],
  ['event_date', 'timestamptz', (e) => e.eventDate],
  ['image_url', 'text', (e) => `${MARKETPLACE_A_IMAGES}/events/E-${e.id}.jpg`],
  ['category_id', 'integer', (e) => e.categoryId],
  ['venue_id', 'bigint', (e) => e.venueId],
  ['artist_id', 'bigint', (e) => e.artistId],
  ['marketplace_a_url', 'text', (e) => publicEventUrl('marketplace_a', `E-${e.id}`)],
  ['marketplace_b_event_id', 'text', (e) => (e.hasMarketplaceB ? marketplaceBId(e.id) : null)],
  ['marketplace_b_event_url', 'text', (e) => (e.hasMarketplaceB ? publicEventUrl('marketplace_b', marketplaceBId(e.id)) : null)],
  ['marketplace_c_event_id', 'text', (e) => (e.hasMarketplaceC ? String(e.id) : null)],
  ['marketplace_c_event_url', 'text', (e) => (e.hasMarketplaceC ? publicEventUrl('marketplace_c', String(e.id)) : null)],
  ['capacity', 'integer', (e) => e.capacity],
];

/** Marketplace B ids look like its own (tracking-ref.ts): opaque, 16 upper-case hex digits. */
export function marketplaceBId(eventId: number): string {
  return `G5${eventId.toString(16).toUpperCase().padStart(14, '0')}`;
}

const SNAPSHOT_NUMERIC = [
  'average_ticket_price_sold',
  'average_ticket_price_sold_24h',
  'average_ticket_price_available',
  'average_ticket_price_available_24h',
  'highest_sale_price',
  'highest_sale_price_24h',
  'get_in_price',
  'get_in_price_24h',
  'total_volume',
  'tickets_sold_24h_percentage',
  'listings_sold_24h_percentage',
  'listings_available_24h_percentage',
  'available_tickets_24h_percentage',
  'average_ticket_price_sold_24h_percentage',
  'average_ticket_price_available_24h_percentage',
  'highest_sale_price_24h_percentage',
  'get_in_price_24h_percentage',
] as const;
const SNAPSHOT_INTEGER = [
  'tickets_sold',
  'tickets_sold_24h',
  'listings_sold',
  'listings_sold_24h',
  'listings_available',
  'listings_available_24h',
  'available_tickets',
  'available_tickets_24h',
] as const;

export const SNAPSHOT_COLUMNS: Column<SnapshotRow>[] = [
  ['event_id', 'bigint', (s) => s.event_id],
  ['captured_at', 'timestamptz', (s) => s.captured_at],
  ['currency', 'text', (s) => s.currency],
  ['is_general_admission_only', 'boolean', (s) => s.is_general_admission_only],
  ...SNAPSHOT_INTEGER.map((c): Column<SnapshotRow> => [c, 'integer', (s) => s[c]]),
  ...SNAPSHOT_NUMERIC.map((c): Column<SnapshotRow> => [c, 'numeric', (s) => s[c]]),
];

export const DAILY_COLUMNS: Column<DailyRow>[] = [
  ['event_id', 'bigint', (d) => d.event_id],
  ['stat_date', 'date', (d) => d.stat_date],
  ['tickets_sold', 'integer', (d) => d.tickets_sold],
  ['tickets_sold_24h', 'integer', (d) => d.tickets_sold_24h],
  ['available_tickets', 'integer', (d) => d.available_tickets],
  ['listings_available', 'integer', (d) => d.listings_available],
  ['average_ticket_price_sold', 'numeric', (d) => d.average_ticket_price_sold],
  ['average_ticket_price_available', 'numeric', (d) => d.average_ticket_price_available],
  ['highest_sale_price', 'numeric', (d) => d.highest_sale_price],
];

export const SALE_COLUMNS: Column<SaleRow>[] = [
  ['event_id', 'bigint', (s) => s.event_id],
  ['sale_ref', 'text', (s) => s.sale_ref],
  ['sold_at', 'timestamptz', (s) => s.sold_at],
  ['section', 'text', (s) => s.section],
  ['row', 'text', (s) => s.row || null],
  ['quantity', 'integer', (s) => s.quantity],
  ['price', 'numeric', (s) => s.price],
  ['currency', 'text', (s) => s.currency],
  ['ticket_type', 'text', (s) => s.ticket_type],
];

export const HISTOGRAM_COLUMNS: Column<HistogramRow>[] = [
  ['event_id', 'bigint', (h) => h.event_id],
  ['bins', 'integer', (h) => h.histogram.bins],
  ['min', 'numeric', (h) => h.histogram.min],
  ['max', 'numeric', (h) => h.histogram.max],
  ['currency', 'text', (h) => h.histogram.currency],
  ['data', 'jsonb', (h) => h.histogram.data],
  ['computed_at', 'timestamptz', (h) => h.computed_at],
];

type Run = MarketplaceBRun & { id: number };
export const RUN_COLUMNS: Column<Run>[] = [
  ['id', 'bigint', (r) => r.id],
  ['event_id', 'bigint', (r) => r.event_id],
  ['region', 'text', (r) => r.region],
  ['created_at', 'timestamptz', (r) => r.created_at],
];

type Section = MarketplaceBRun['sections'][number] & { run_id: number; created_at: Date };
export const SECTION_COLUMNS: Column<Section>[] = [
  ['run_id', 'bigint', (s) => s.run_id],
  ['section_name', 'text', (s) => s.section_name],
  ['capacity', 'integer', (s) => s.capacity],
  ['available_stock', 'integer', (s) => s.available_stock],
  ['sold_amount', 'integer', (s) => s.sold_amount],
  ['created_at', 'timestamptz', (s) => s.created_at],
];

type Offer = MarketplaceBRun['offers'][number] & { run_id: number; created_at: Date };
export const OFFER_COLUMNS: Column<Offer>[] = [
  ['run_id', 'bigint', (o) => o.run_id],
  ['offer_name', 'text', (o) => o.offer_name],
  ['offer_stock', 'integer', (o) => o.offer_stock],
  ['average_price_fees', 'numeric', (o) => o.average_price_fees],
  ['average_price_no_fees', 'numeric', (o) => o.average_price_no_fees],
  ['offer_type', 'integer', (o) => o.offer_type],
  ['currency', 'text', (o) => o.currency],
  ['created_at', 'timestamptz', (o) => o.created_at],
];

type History = MarketplaceBRun['history'] & { event_id: number; run_id: number; created_at: Date };
const HISTORY_INTEGER = ['tickets_sold', 'tickets_sold_24h', 'available_tickets', 'listings_available', 'capacity'] as const;
const HISTORY_NUMERIC = [
  'highest_price',
  'lowest_price',
  'average_ticket_price_available',
  'average_ticket_price_standard',
  'average_ticket_price_resell',
  'average_ticket_price_platinum',
  'average_sales_price',
  'get_in_price',
] as const;
export const HISTORY_COLUMNS: Column<History>[] = [
  ['event_id', 'bigint', (h) => h.event_id],
  ['run_id', 'bigint', (h) => h.run_id],
  ['created_at', 'timestamptz', (h) => h.created_at],
  ['currency', 'text', (h) => h.currency],
  ...HISTORY_INTEGER.map((c): Column<History> => [c, 'integer', (h) => h[c]]),
  ...HISTORY_NUMERIC.map((c): Column<History> => [c, 'numeric', (h) => h[c]]),
];
