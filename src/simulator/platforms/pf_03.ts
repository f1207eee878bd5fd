// pf_03 in the simulator: a server-rendered event page `/e/{key}` with the event in a header and
// the offers in a <table class="offers">: section, price as text ("€120.50"), quantity (or
// "Sold out"), and badges for the ticket kind and flags. Malformed: the table is replaced by a
// loading placeholder that never fills.
import { esc, page } from '../html.ts';
import { queryRegion } from '../inventory.ts';
import { priceText } from '../money.ts';
import type { SimPlatform } from '../platform.ts';
import type { SimEvent, SimSection } from '../state.ts';

const KIND_BADGE: Record<SimSection['ticket_type'], string> = {
  standard: '',
  resale: '<span class="badge badge-resale">Resale</span>',
  platinum: '<span class="badge badge-platinum">Platinum</span>',
  general_admission: '<span class="badge badge-ga">General admission</span>',
};

function badges(section: SimSection): string {
  return [
    KIND_BADGE[section.ticket_type],
    section.restricted_view ? '<span class="badge badge-restricted">Restricted view</span>' : '',
    section.accessible ? '<span class="badge badge-accessible">Accessible</span>' : '',
    section.presale ? '<span class="badge badge-presale">Presale</span>' : '',
  ].join('');
}

/** pf_03's event page for `event` (also what synthetic pages answer: scrapers/synthetic-pages.ts). */
export function renderPf03Page(event: Pick<SimEvent, 'key' | 'name' | 'venue' | 'city' | 'starts_at' | 'currency' | 'sections'>, malformed = false): string {
  return render(event, malformed);
}

function render(event: Pick<SimEvent, 'key' | 'name' | 'venue' | 'city' | 'starts_at' | 'currency' | 'sections'>, malformed: boolean): string {
  const rows = event.sections.map(
    (section, i) =>
      `<tr class="offer" data-offer-id="${esc(`${event.key}-${i + 1}`)}">` +
      `<td class="section">${esc(section.name)}</td>` +
      `<td class="price">${esc(priceText(section.price, event.currency, { decimal: '.', group: ',' }))}</td>` +
      `<td class="qty">${section.stock > 0 ? section.stock : 'Sold out'}</td>` +
      `<td class="badges">${badges(section)}</td></tr>`,
  );
  const offers = malformed
    ? '<div class="offers-loading">Loading offers…</div>'
    : `<table class="offers" data-currency="${esc(event.currency)}"><thead><tr><th>Section</th><th>Price</th><th>Available</th><th></th></tr></thead>` +
      `<tbody>${rows.join('\n')}</tbody></table>`;
  return page({
    lang: 'en',
    title: `${event.name} tickets`,
    body: [
      '<header class="event-header">',
      `<h1 itemprop="name">${esc(event.name)}</h1>`,
      `<div class="where"><span class="venue">${esc(event.venue)}</span> · <span class="city">${esc(event.city)}</span></div>`,
      `<time class="starts" datetime="${esc(event.starts_at)}">${esc(new Date(event.starts_at).toUTCString())}</time>`,
      '</header>',
      `<main>${offers}</main>`,
    ].join('\n'),
  });
}

export const pf03: SimPlatform = {
  platform: 'pf_03',
  mount(router, serve) {
    router.get('/e/:key', (ctx) =>
      serve(ctx, { platform: 'pf_03', key: ctx.params.key!, region: queryRegion(ctx), type: 'html' }, (event, { malformed }) => ({
        type: 'html',
        body: render(event, malformed),
      })),
    );
  },
};
