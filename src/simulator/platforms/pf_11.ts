// pf_11 in the simulator: the event page `/event/{key}` lists its offers as `<li class="offer">`
// items whose data attributes carry everything (data-section, data-price, data-qty, data-type,
// data-flags); the visible text is only a summary. Malformed: the items lose data-price.
import { esc, page } from '../html.ts';
import { flagWords, queryRegion } from '../inventory.ts';
import { decimalString, priceText } from '../money.ts';
import type { SimPlatform } from '../platform.ts';
import type { SimEvent, SimSection } from '../state.ts';

function item(event: SimEvent, section: SimSection, i: number, malformed: boolean): string {
  const attributes = [
    `data-offer-id="${esc(`${event.key}-${i + 1}`)}"`,
    `data-section="${esc(section.name)}"`,
    malformed ? '' : `data-price="${decimalString(section.price)}"`,
    `data-qty="${section.stock}"`,
    `data-type="${section.ticket_type}"`,
    `data-flags="${flagWords(section, { restricted_view: 'restricted_view', accessible: 'accessible', presale: 'presale' }).join(' ')}"`,
  ].filter(Boolean);
  const summary = `${section.name} — ${priceText(section.price, event.currency, { decimal: '.', group: ',' })} × ${section.stock}`;
  return `<li class="offer" ${attributes.join(' ')}>${esc(summary)}</li>`;
}

function render(event: SimEvent, malformed: boolean): string {
  return page({
    lang: 'en',
    title: event.name,
    body: [
      `<div class="event" data-event-id="${esc(event.key)}">`,
      `<h1 class="event__name">${esc(event.name)}</h1>`,
      `<p class="event__venue">${esc(event.venue)}</p><p class="event__city">${esc(event.city)}</p>`,
      `<time class="event__date" datetime="${esc(event.starts_at)}">${esc(event.starts_at)}</time>`,
      '</div>',
      `<ul class="offers" data-currency="${esc(event.currency)}">`,
      ...event.sections.map((s, i) => item(event, s, i, malformed)),
      '</ul>',
    ].join('\n'),
  });
}

export const pf11: SimPlatform = {
  platform: 'pf_11',
  mount(router, serve) {
    router.get('/event/:key', (ctx) =>
      serve(ctx, { platform: 'pf_11', key: ctx.params.key!, region: queryRegion(ctx), type: 'html' }, (event, { malformed }) => ({
        type: 'html',
        body: render(event, malformed),
      })),
    );
  },
};
