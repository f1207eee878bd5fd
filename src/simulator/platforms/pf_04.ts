// pf_04 in the simulator: one event, two ways in. A JSON offers API `/api/events/{key}/offers`
// (prices in cents, kinds in capitals), used for the German-speaking regions, and a page
// `/{region}/tickets/{key}` with schema.org Event and Offer microdata for the rest. Malformed:
// the API's offers lose their price, the page loses its offer list.
import { esc, page } from '../html.ts';
import { queryRegion } from '../inventory.ts';
import { amountText, cents, currencySymbol, decimalString } from '../money.ts';
import type { SimPlatform } from '../platform.ts';
import type { SimEvent, SimSection } from '../state.ts';

const KIND: Record<SimSection['ticket_type'], string> = { standard: 'STANDARD', resale: 'RESALE', platinum: 'PLATINUM', general_admission: 'GA' };

function offersJson(event: SimEvent, malformed: boolean) {
  return {
    event: { id: event.key, name: event.name, venue: event.venue, city: event.city, start: event.starts_at, currency: event.currency },
    offers: event.sections.map((section, i) => ({
      offerId: `${event.key}-${i + 1}`,
      block: section.name,
      ...(malformed ? {} : { priceCents: cents(section.price) }),
      available: section.stock,
      type: KIND[section.ticket_type],
      restrictedView: section.restricted_view,
      accessible: section.accessible,
      presale: section.presale,
    })),
  };
}

function offerHtml(event: SimEvent, section: SimSection, i: number): string {
  const attributes = [
    section.restricted_view ? '<li data-attr="restricted-view">Restricted view</li>' : '',
    section.accessible ? '<li data-attr="accessible">Wheelchair accessible</li>' : '',
    section.presale ? '<li data-attr="presale">Presale</li>' : '',
  ].join('');
  return [
    `<div class="offer" itemprop="offers" itemscope itemtype="https://schema.org/Offer" data-offer-id="${esc(`${event.key}-${i + 1}`)}">`,
    `<span class="block" itemprop="name">${esc(section.name)}</span>`,
    `<meta itemprop="price" content="${decimalString(section.price)}"><meta itemprop="priceCurrency" content="${esc(event.currency)}">`,
    `<span class="price-display">${esc(`${amountText(section.price, { decimal: ',', group: '.' })} ${currencySymbol(event.currency)}`)}</span>`,
    `<span class="stock" data-available="${section.stock}">${section.stock > 0 ? `${section.stock} available` : 'sold out'}</span>`,
    `<span class="kind" data-kind="${KIND[section.ticket_type].toLowerCase()}"></span>`,
    `<ul class="attributes">${attributes}</ul>`,
    '</div>',
  ].join('');
}

function renderPage(event: SimEvent, malformed: boolean): string {
  const offers = malformed ? '<p class="notice">Offers could not be loaded.</p>' : `<div id="offers">${event.sections.map((s, i) => offerHtml(event, s, i)).join('\n')}</div>`;
  return page({
    lang: event.region,
    title: event.name,
    body: [
      '<article itemscope itemtype="https://schema.org/Event">',
      `<h1 itemprop="name">${esc(event.name)}</h1>`,
      `<meta itemprop="startDate" content="${esc(event.starts_at)}">`,
      `<div itemprop="location" itemscope itemtype="https://schema.org/Place"><span itemprop="name">${esc(event.venue)}</span>, <span itemprop="address">${esc(event.city)}</span></div>`,
      offers,
      '</article>',
    ].join('\n'),
  });
}

export const pf04: SimPlatform = {
  platform: 'pf_04',
  mount(router, serve) {
    router.get('/api/events/:key/offers', (ctx) =>
      serve(ctx, { platform: 'pf_04', key: ctx.params.key!, region: queryRegion(ctx), type: 'json' }, (event, { malformed }) => ({
        type: 'json',
        body: offersJson(event, malformed),
      })),
    );
    router.get('/:region/tickets/:key', (ctx) =>
      serve(ctx, { platform: 'pf_04', key: ctx.params.key!, region: ctx.params.region!, type: 'html' }, (event, { malformed }) => ({
        type: 'html',
        body: renderPage(event, malformed),
      })),
    );
  },
};
