// pf_02 in the simulator: a client-rendered seat map. The event page `/{locale}/event/{key}`
// ships an empty app root plus its whole state in `<script id="__STATE__">`: sections, rows
// and seats with price, category and tags. Sold-out sections show a row of sold seats only.
// Malformed: the state script is cut off half-way (not JSON).
import type { SimPlatform } from '../platform.ts';
import { esc, page, scriptJson } from '../html.ts';
import { flagWords, groupByName, queryRegion } from '../inventory.ts';
import { cents } from '../money.ts';
import type { SimEvent, SimSection } from '../state.ts';

const SEATS_PER_ROW = 20;
const CATEGORY: Record<SimSection['ticket_type'], string> = { standard: 'standard', resale: 'resale', platinum: 'platinum', general_admission: 'ga' };
const TAGS = { restricted_view: 'restricted_view', accessible: 'wheelchair', presale: 'presale' };

function rowLabel(index: number): string {
  // A..Z, then AA, AB, ... as venues label long blocks.
  let label = '';
  for (let n = index; n >= 0; n = Math.floor(n / 26) - 1) label = String.fromCharCode(65 + (n % 26)) + label;
  return label;
}

function seatMap(event: SimEvent) {
  return [...groupByName(event.sections)].map(([name, group], s) => {
    const seats = group.flatMap((section) =>
      Array.from({ length: section.stock }, () => ({
        price: cents(section.price) / 100,
        category: CATEGORY[section.ticket_type],
        tags: flagWords(section, TAGS),
        status: 'available',
      })),
    );
    const rows = [];
    for (let i = 0; i < seats.length; i += SEATS_PER_ROW) {
      rows.push({ label: rowLabel(i / SEATS_PER_ROW), seats: seats.slice(i, i + SEATS_PER_ROW).map((seat, n) => ({ n: String(n + 1), ...seat })) });
    }
    if (rows.length === 0) {
      const sold = { price: cents(group[0]!.price) / 100, category: CATEGORY[group[0]!.ticket_type], tags: [], status: 'sold' };
      rows.push({ label: 'A', seats: [{ n: '1', ...sold }, { n: '2', ...sold }] });
    }
    return { id: `sec-${s + 1}`, label: name, rows };
  });
}

function render(event: SimEvent, malformed: boolean): string {
  const state = {
    event: {
      id: event.key,
      title: event.name,
      venue: { name: event.venue, city: event.city },
      startsAt: event.starts_at,
      currency: event.currency,
      region: event.region,
    },
    seatMap: { sections: seatMap(event) },
  };
  let json = scriptJson(state);
  if (malformed) json = json.slice(0, Math.floor(json.length / 2));
  return page({
    lang: 'en',
    title: `${event.name} | pf02`,
    body: [
      `<div id="app"><h1 class="event-title">${esc(event.name)}</h1><div id="seatmap-root" data-loading="true"></div></div>`,
      `<script id="__STATE__" type="application/json">${json}</script>`,
      '<script src="/static/seatmap.js" defer></script>',
    ].join('\n'),
  });
}

export const pf02: SimPlatform = {
  platform: 'pf_02',
  mount(router, serve) {
    router.get('/:locale/event/:key', (ctx) =>
      serve(ctx, { platform: 'pf_02', key: ctx.params.key!, region: queryRegion(ctx), type: 'html' }, (event, { malformed }) => ({
        type: 'html',
        body: render(event, malformed),
      })),
    );
  },
};
