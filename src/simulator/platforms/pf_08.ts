// pf_08 in the simulator: one site per country domain (the region comes from the domain; here
// from `?region=`). The event page `/event/{key}` shows a hero with the event and a list of
// ticket cards: zone, price as text ("A$120.50"), "12 left" or "Sold out", kind and tags.
// Malformed: the ticket list is missing (the page shows a queue notice instead).
import { esc, page } from '../html.ts';
import { queryRegion } from '../inventory.ts';
import { priceText } from '../money.ts';
import type { SimPlatform } from '../platform.ts';
import type { SimEvent, SimSection } from '../state.ts';

const KIND_LABEL: Record<SimSection['ticket_type'], string> = { standard: 'Standard', resale: 'Resale', platinum: 'Platinum', general_admission: 'General Admission' };

function card(event: SimEvent, section: SimSection, i: number): string {
  const tags = [
    section.restricted_view ? '<li class="tag" data-tag="restricted">Restricted view</li>' : '',
    section.accessible ? '<li class="tag" data-tag="accessible">Accessible seating</li>' : '',
    section.presale ? '<li class="tag" data-tag="presale">Presale</li>' : '',
  ].join('');
  return [
    `<article class="ticket-card" data-ticket-id="${esc(`${event.key}-${i + 1}`)}">`,
    `<h3 class="zone">${esc(section.name)}</h3>`,
    `<p class="price">${esc(priceText(section.price, event.currency, { decimal: '.', group: ',' }))}</p>`,
    section.stock > 0 ? `<p class="remaining">${section.stock} left</p>` : '<p class="remaining sold-out">Sold out</p>',
    `<span class="ticket-kind" data-kind="${section.ticket_type}">${KIND_LABEL[section.ticket_type]}</span>`,
    `<ul class="tags">${tags}</ul>`,
    '</article>',
  ].join('');
}

function render(event: SimEvent, malformed: boolean): string {
  const list = malformed
    ? '<div class="queue-notice">You are in the queue. Please wait…</div>'
    : `<section id="ticket-list">${event.sections.map((s, i) => card(event, s, i)).join('\n')}</section>`;
  return page({
    lang: 'en',
    title: event.name,
    head: `<meta property="og:title" content="${esc(event.name)}">`,
    body: [
      `<div class="event-hero" data-currency="${esc(event.currency)}">`,
      `<h1>${esc(event.name)}</h1>`,
      `<div class="venue-line"><span class="venue">${esc(event.venue)}</span><span class="city">${esc(event.city)}</span></div>`,
      `<span class="date" data-iso="${esc(event.starts_at)}">${esc(event.starts_at.slice(0, 10))}</span>`,
      '</div>',
      list,
    ].join('\n'),
  });
}

export const pf08: SimPlatform = {
  platform: 'pf_08',
  mount(router, serve) {
    router.get('/event/:key', (ctx) =>
      serve(ctx, { platform: 'pf_08', key: ctx.params.key!, region: queryRegion(ctx), type: 'html' }, (event, { malformed }) => ({
        type: 'html',
        body: render(event, malformed),
      })),
    );
  },
};
