// Marketplace A scraper: one JSON API call, `GET {base}/api/events/{E-id}`, read into the event's
// details, listings and newest sales. A 404 is an unknown event (tracking ends); a 5xx or a
// network failure is transient; a body that is not the API's shape is `malformed`.
import { MARKETPLACE_INFO, publicEventUrl } from '../../market-data/tracking-ref.ts';
import { label, type JsonObject } from '../page-reader.ts';
import type { ScrapeFetcher, TicketType } from '../types.ts';
import { marketplaceReader, optionalCountryCode, optionalHttpUrl, type MarketplaceAEventPage, type MaListing, type MaSale } from './types.ts';
import { cloudflareChallenge } from '../block-pages.ts';

const read = marketplaceReader('marketplace_a');
const TICKET_CLASS: Record<string, TicketType> = { STANDARD: 'standard', RESALE: 'resale', PLATINUM: 'platinum', GA: 'general_admission' };
const ARTIST_PATH = /^\/artist\/[a-z0-9-]{1,100}$/;

function optionalObject(value: unknown): JsonObject | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonObject) : null;
}

/** A sale's time (required), in UTC. */
function soldAt(value: unknown, what: string): string {
  const text = read.text(value, what);
  const time = read.optionalTime(text);
  if (time === null) throw read.malformed(`${what} is not a time (${text.slice(0, 40)})`);
  return new Date(time).toISOString();
}

/** A link to the same event on B or C, kept only when its id has that marketplace's form. */
function link(value: unknown, marketplace: 'marketplace_b' | 'marketplace_c'): { id: string | null; url: string | null } {
  const id = read.optionalText(optionalObject(value)?.id);
  if (id === null || !MARKETPLACE_INFO[marketplace].id.test(id)) return { id: null, url: null };
  return { id, url: publicEventUrl(marketplace, id) };
}

export function parseMarketplaceA(id: string, data: unknown): MarketplaceAEventPage {
  if (data === undefined) throw read.malformed('the event API did not answer JSON');
  const body = read.object(data, 'the event API answer');
  const event = read.object(body.event, 'event');
  if (read.optionalText(event.id) !== id) throw read.malformed(`the answer is about event ${label(event.id)}, not ${id}`);
  const currency = read.optionalCurrency(event.currency);
  if (!currency) throw read.malformed('event.currency is missing or not an ISO 4217 code');
  const venue = optionalObject(event.venue);
  const performer = optionalObject(event.performer);
  const href = read.optionalText(performer?.href);
  const performerName = read.optionalText(performer?.name);
  const images = Array.isArray(event.images) ? event.images.map(optionalObject) : [];
  const hero = images.find((i) => i?.kind === 'hero') ?? images[0] ?? null;
  const links = optionalObject(event.links) ?? {};
  const b = link(links.marketplaceB, 'marketplace_b');
  const c = link(links.marketplaceC, 'marketplace_c');

  const listings: MaListing[] = read.array(body.listings, 'listings').map((raw, i) => {
    const l = read.object(raw, `listing ${i + 1}`);
    const where = `listing ${label(l.listingId ?? i + 1)}`;
    const price = read.object(l.pricePerTicket, `pricePerTicket of ${where}`);
    return {
      id: read.text(l.listingId, `listingId of listing ${i + 1}`),
      section: read.text(l.section, `section of ${where}`),
      row: read.optionalText(l.row),
      quantity: read.quantity(l.quantityAvailable, `quantityAvailable of ${where}`),
      price: read.price(price.amount, `pricePerTicket.amount of ${where}`),
      ticket_type: read.oneOf(l.ticketClass, TICKET_CLASS, `ticketClass of ${where}`),
    };
  });
  const sales: MaSale[] = read.array(body.recentSales, 'recentSales').map((raw, i) => {
    const s = read.object(raw, `sale ${i + 1}`);
    const saleId = read.text(s.saleId, `saleId of sale ${i + 1}`);
    if (saleId.length > 100) throw read.malformed(`saleId of sale ${i + 1} is longer than 100 characters`);
    const where = `sale ${saleId}`;
    const price = read.object(s.pricePerTicket, `pricePerTicket of ${where}`);
    const quantity = read.quantity(s.quantity, `quantity of ${where}`);
    if (quantity === 0) throw read.malformed(`${where} sold no tickets`);
    return {
      id: saleId,
      sold_at: soldAt(s.soldAt, `soldAt of ${where}`),
      section: read.optionalText(s.section),
      row: read.optionalText(s.row),
      quantity,
      price: read.price(price.amount, `pricePerTicket.amount of ${where}`),
      currency: read.optionalCurrency(price.currency) ?? currency,
      ticket_type: read.oneOf(s.ticketClass, TICKET_CLASS, `ticketClass of ${where}`),
    };
  });

  return {
    id,
    url: publicEventUrl('marketplace_a', id),
    name: read.text(event.title, 'event.title'),
    starts_at: read.optionalTime(event.startsAt),
    image_url: optionalHttpUrl(hero?.url),
    category: read.optionalText(optionalObject(event.category)?.name),
    venue:
      venue && read.optionalText(venue.name)
        ? {
            name: read.optionalText(venue.name)!,
            city: read.optionalText(venue.city),
            country: read.optionalText(venue.country),
            country_code: optionalCountryCode(venue.countryCode),
            svg_map_url: optionalHttpUrl(venue.seatMapUrl),
          }
        : null,
    // The artist's URL is its page on A's public site, built from the page's path, never a host the page names.
    artist:
      performerName && href && ARTIST_PATH.test(href)
        ? { name: performerName, url: `https://${MARKETPLACE_INFO.marketplace_a.hosts[0]}${href}`, image_url: optionalHttpUrl(performer?.imageUrl) }
        : null,
    currency,
    external: { marketplace_b_event_id: b.id, marketplace_b_event_url: b.url, marketplace_c_event_id: c.id, marketplace_c_event_url: c.url },
    listings,
    sales,
  };
}

/** Behind Cloudflare's managed challenge (block-pages.ts). */
export const blockPage = cloudflareChallenge;

/** `http`: bound to this scrape (its session, signal and challenge page; ../scrape-via.ts). */
export async function scrapeMarketplaceA(http: ScrapeFetcher, baseUrl: string, id: string): Promise<MarketplaceAEventPage> {
  const answer = await http.json(`${baseUrl}/api/events/${encodeURIComponent(id)}`);
  read.expectFound(answer, 'the event API');
  return parseMarketplaceA(id, answer.data);
}
