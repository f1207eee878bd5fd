// Marketplace B in the simulator: an HTML event page, `/event/{id}`, for people. The event's
// name, start, category and venue (country code in a data attribute); a region block naming the
// market and currency the page is priced in; a table of sections with capacity, available and
// sold (counts in data attributes, grouped digits in the text); the offers, each with its type,
// stock, price with fees and face value as written for people ("£89.50"); and, when known, the
// average resale price. Malformed: the sections table is missing.
import type Router from '@koa/router';
import { esc, page } from '../html.ts';
import { priceText } from '../money.ts';
import type { MbEvent } from './state.ts';
import type { ServeMarketplaceEvent } from './serve.ts';

const grouped = (n: number) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

function render(event: MbEvent, malformed: boolean): string {
  const price = (amount: number, currency: string) => priceText(amount, currency, { decimal: '.', group: ',' });
  const venue = event.venue;
  const sections = [
    '<table class="section-stats">',
    '<thead><tr><th>Section</th><th>Capacity</th><th>Available</th><th>Sold</th></tr></thead>',
    '<tbody>',
    ...event.sections.map(
      (s) =>
        `<tr class="section-row" data-capacity="${s.capacity}" data-available="${s.available}" data-sold="${s.sold}">` +
        `<td class="section-name">${esc(s.name)}</td><td>${grouped(s.capacity)}</td><td>${grouped(s.available)}</td><td>${grouped(s.sold)}</td></tr>`,
    ),
    '</tbody></table>',
  ];
  const offers = event.offers.map((o) => {
    const currency = o.currency ?? event.currency;
    return (
      `<li class="offer" data-offer-type="${o.type}" data-stock="${o.stock}" data-currency="${esc(currency)}">` +
      `<span class="offer-name">${esc(o.name)}</span> <span class="offer-stock">${grouped(o.stock)} available</span> ` +
      `<span class="price-incl-fees">${esc(price(o.price, currency))}</span> <span class="price-excl-fees">${esc(price(o.face_price, currency))}</span></li>`
    );
  });
  return page({
    lang: 'en',
    title: `${event.name} | marketplace B`,
    body: [
      `<main class="event-page" data-event-id="${esc(event.key)}">`,
      `<h1 class="event-name">${esc(event.name)}</h1>`,
      event.starts_at ? `<time class="event-date" datetime="${esc(event.starts_at)}">${esc(event.starts_at)}</time>` : '',
      event.category ? `<p class="event-category">${esc(event.category)}</p>` : '',
      venue
        ? `<div class="venue" data-country-code="${esc(venue.country_code ?? '')}"><span class="venue-name">${esc(venue.name)}</span>, ` +
          `<span class="venue-city">${esc(venue.city ?? '')}</span>, <span class="venue-country">${esc(venue.country ?? '')}</span></div>`
        : '',
      `<section class="region-info" data-region="${esc(event.region)}" data-currency="${esc(event.currency)}">` +
        `<p>Prices for the ${esc(event.region.toUpperCase())} market in ${esc(event.currency)}, fees included unless stated.</p></section>`,
      ...(malformed ? [] : sections),
      '<ul class="offers">',
      ...offers,
      '</ul>',
      event.average_sale_price === null
        ? ''
        : `<p class="average-sale">Average resale price: <span class="amount">${esc(price(event.average_sale_price, event.currency))}</span></p>`,
      '</main>',
    ]
      .filter(Boolean)
      .join('\n'),
  });
}

export function mountMarketplaceB(router: Router, serve: ServeMarketplaceEvent): void {
  router.get('/event/:id', (ctx) =>
    serve(ctx, { marketplace: 'marketplace_b', key: ctx.params.id!, type: 'html' }, (event, { malformed }) => ({ type: 'html', body: render(event, malformed) })),
  );
}
