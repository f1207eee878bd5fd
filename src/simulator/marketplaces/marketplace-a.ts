// Marketplace A in the simulator: a JSON API, `GET /api/events/{E-id}`, with the event's details
// (title, start, category, images, venue with country code and seat map, performer with the path
// of its artist page, links to the same event on B and C), its current listings (price per
// ticket as a decimal string, quantity, section, row, ticket class) and its newest sales (sale
// id, time, quantity, price), newest first and at most RECENT_SALES of them, as such APIs page.
// Malformed: listing prices come as words.
import { decimalString } from '../money.ts';
import { MARKETPLACE_INFO, publicEventUrl } from '../../market-data/tracking-ref.ts';
import type { MaEvent } from './state.ts';
import type { ServeMarketplaceEvent } from './serve.ts';
import type Router from '@koa/router';

/** The API lists this many of the newest sales; a tracker polling often enough sees every one. */
export const RECENT_SALES = 200;

const TICKET_CLASS = { standard: 'STANDARD', resale: 'RESALE', platinum: 'PLATINUM', general_admission: 'GA' } as const;

function body(event: MaEvent, malformed: boolean) {
  const money = (amount: number, currency = event.currency) => ({ amount: malformed ? 'call for price' : decimalString(amount), currency });
  const sales = [...event.sales].sort((a, b) => Date.parse(b.sold_at) - Date.parse(a.sold_at)).slice(0, RECENT_SALES);
  return {
    event: {
      id: event.key,
      url: publicEventUrl('marketplace_a', event.key),
      title: event.name,
      startsAt: event.starts_at,
      category: event.category === null ? null : { name: event.category },
      images: event.image_url === null ? [] : [{ kind: 'hero', url: event.image_url }],
      venue:
        event.venue === null
          ? null
          : { name: event.venue.name, city: event.venue.city, country: event.venue.country, countryCode: event.venue.country_code, seatMapUrl: event.venue.svg_map_url },
      performer: event.artist === null ? null : { name: event.artist.name, href: `/artist/${event.artist.slug}`, imageUrl: event.artist.image_url },
      links: {
        marketplaceB: event.marketplace_b_event_id === null ? null : { id: event.marketplace_b_event_id, url: MARKETPLACE_INFO.marketplace_b.page(event.marketplace_b_event_id) },
        marketplaceC: event.marketplace_c_event_id === null ? null : { id: event.marketplace_c_event_id, url: MARKETPLACE_INFO.marketplace_c.page(event.marketplace_c_event_id) },
      },
      currency: event.currency,
    },
    listings: event.listings.map((l, i) => ({
      listingId: l.id ?? `L${i + 1}`,
      section: l.section,
      row: l.row,
      quantityAvailable: l.quantity,
      pricePerTicket: money(l.price),
      ticketClass: TICKET_CLASS[l.ticket_type],
    })),
    recentSales: sales.map((s) => ({
      saleId: s.id,
      soldAt: new Date(s.sold_at).toISOString(),
      section: s.section,
      row: s.row,
      quantity: s.quantity,
      pricePerTicket: { amount: decimalString(s.price), currency: s.currency ?? event.currency },
      ticketClass: TICKET_CLASS[s.ticket_type],
    })),
  };
}

export function mountMarketplaceA(router: Router, serve: ServeMarketplaceEvent): void {
  router.get('/api/events/:id', (ctx) =>
    serve(ctx, { marketplace: 'marketplace_a', key: ctx.params.id!, type: 'json' }, (event, { malformed }) => ({ type: 'json', body: body(event, malformed) })),
  );
}
