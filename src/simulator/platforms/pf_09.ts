// pf_09 in the simulator: a Czech ticketing site (cz, sk), `/akce/{key}?region=xx`. The tickets
// are a table with Czech column headings (Sektor, Cena "1 250 Kč", Volných míst or "Vyprodáno",
// Typ, Poznámka). Malformed: the table comes without its heading row.
import { esc, page } from '../html.ts';
import { queryRegion } from '../inventory.ts';
import { amountText } from '../money.ts';
import type { SimPlatform } from '../platform.ts';
import type { SimEvent, SimSection } from '../state.ts';

const TYP: Record<SimSection['ticket_type'], string> = { standard: 'Standard', resale: 'Přeprodej', platinum: 'Platinum', general_admission: 'Stání' };
const SUFFIX: Record<string, string> = { CZK: 'Kč', EUR: '€' };

function cena(price: number, currency: string): string {
  // Czech style: non-breaking space between thousands, decimal comma, no ",00".
  return `${amountText(price, { decimal: ',', group: '\u00a0', dropZeroCents: true })}\u00a0${SUFFIX[currency] ?? currency}`;
}

function poznamka(section: SimSection): string {
  return [section.restricted_view ? 'Omezený výhled' : '', section.accessible ? 'Bezbariérový přístup' : '', section.presale ? 'Předprodej' : ''].filter(Boolean).join('; ');
}

function render(event: SimEvent, malformed: boolean): string {
  const head = malformed ? '' : '<thead><tr><th>Sektor</th><th>Cena</th><th>Volných míst</th><th>Typ</th><th>Poznámka</th></tr></thead>';
  const rows = event.sections.map(
    (section, i) =>
      `<tr data-id="${esc(`${event.key}-${i + 1}`)}"><td>${esc(section.name)}</td><td>${esc(cena(section.price, event.currency))}</td>` +
      `<td>${section.stock > 0 ? section.stock : 'Vyprodáno'}</td><td>${TYP[section.ticket_type]}</td><td>${poznamka(section)}</td></tr>`,
  );
  return page({
    lang: 'cs',
    title: `${event.name} – vstupenky`,
    body: [
      '<div class="akce">',
      `<h1 class="nazev">${esc(event.name)}</h1>`,
      `<p class="misto"><span class="objekt">${esc(event.venue)}</span>, <span class="mesto">${esc(event.city)}</span></p>`,
      `<p class="datum" data-zacatek="${esc(event.starts_at)}">${esc(event.starts_at.slice(0, 10))}</p>`,
      '</div>',
      `<table class="vstupenky" data-mena="${esc(event.currency)}">${head}<tbody>${rows.join('\n')}</tbody></table>`,
    ].join('\n'),
  });
}

export const pf09: SimPlatform = {
  platform: 'pf_09',
  mount(router, serve) {
    router.get('/akce/:key', (ctx) =>
      serve(ctx, { platform: 'pf_09', key: ctx.params.key!, region: queryRegion(ctx), type: 'html' }, (event, { malformed }) => ({
        type: 'html',
        body: render(event, malformed),
      })),
    );
  },
};
