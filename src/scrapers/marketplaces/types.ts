// What the marketplace scrapers read off an event page: marketplace A's event details, listings
// and sales (spec 2.2's inputs), marketplace B's sections, offers and region (spec 2.3's
// inputs). Prices are numbers rounded to cents, per ticket; URLs are the marketplaces' public
// ones, rebuilt from ids and paths (a page never decides which host a stored link names).
import type { PlatformKey } from '../../platform/registry.ts';
import { PageReader } from '../page-reader.ts';
import type { TicketType } from '../types.ts';

export interface MarketplaceVenue {
  name: string;
  city: string | null;
  country: string | null;
  /** ISO 3166 alpha-2, upper case, or null when the page gives none that fits. */
  country_code: string | null;
  svg_map_url: string | null;
}

export interface MaListing {
  id: string;
  section: string;
  row: string | null;
  quantity: number;
  price: number;
  ticket_type: TicketType;
}

export interface MaSale {
  /** The marketplace's id of the sale (the dedupe key, ma_sales.sale_ref). */
  id: string;
  sold_at: string;
  section: string | null;
  row: string | null;
  quantity: number;
  price: number;
  currency: string;
  ticket_type: TicketType;
}

export interface MarketplaceAEventPage {
  id: string;
  url: string;
  name: string;
  starts_at: string | null;
  image_url: string | null;
  category: string | null;
  venue: MarketplaceVenue | null;
  /** `url` is the artist's page on marketplace A (what GET /svc/data/artist?url= takes). */
  artist: { name: string; url: string; image_url: string | null } | null;
  /** The currency the event's listings are priced in. */
  currency: string;
  external: {
    marketplace_b_event_id: string | null;
    marketplace_b_event_url: string | null;
    marketplace_c_event_id: string | null;
    marketplace_c_event_url: string | null;
  };
  listings: MaListing[];
  /** The newest sales the page lists (newest first). */
  sales: MaSale[];
}

export type MbOfferType = 'standard' | 'resale' | 'platinum';

export interface MarketplaceBEventPage {
  id: string;
  url: string;
  name: string;
  starts_at: string | null;
  category: string | null;
  venue: Omit<MarketplaceVenue, 'svg_map_url'> | null;
  /** The market the page is priced for (each scrape run's region). */
  region: string;
  currency: string;
  sections: { name: string; capacity: number; available: number; sold: number }[];
  offers: { name: string; stock: number; price: number; face_price: number; type: MbOfferType; currency: string }[];
  average_sale_price: number | null;
}

/**
 * A page reader for a marketplace. PageReader names its source in failure messages only, and is
 * typed for the platforms; a marketplace is a source of the same kind.
 */
export function marketplaceReader(marketplace: 'marketplace_a' | 'marketplace_b'): PageReader {
  return new PageReader(marketplace as unknown as PlatformKey);
}

/** An http(s) URL as the page states it, or null. */
export function optionalHttpUrl(value: unknown): string | null {
  if (typeof value !== 'string' || value.length > 1000) return null;
  try {
    const url = new URL(value.trim());
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.toString() : null;
  } catch {
    return null;
  }
}

/** An ISO 3166 alpha-2 code, or null (the venues table refuses anything else). */
export function optionalCountryCode(value: unknown): string | null {
  const text = typeof value === 'string' ? value.trim().toUpperCase() : '';
  return /^[A-Z]{2}$/.test(text) ? text : null;
}
