// pf_09 adapter (OfferSections), Czech Republic and Slovakia. The tickets table is read by its
// Czech column headings (Sektor, Cena, Volných míst, Typ, Poznámka), not by position, so a
// reordered table still reads and a changed one fails as malformed. Prices like "1 250 Kč".
import type { CheerioAPI } from 'cheerio';
import type { EventRef } from '../../platform/event-ref.ts';
import { eventInfo, publicUrl } from '../event-info.ts';
import { PageReader } from '../page-reader.ts';
import { OfferSectionsBuilder } from '../sections.ts';
import type { AdapterDeps, PlatformAdapter, ScrapeData, TicketType } from '../types.ts';
import { perimeterxBlock } from '../block-pages.ts';

const read = new PageReader('pf_09');
const TYP: Record<string, TicketType> = { Standard: 'standard', Přeprodej: 'resale', Platinum: 'platinum', Stání: 'general_admission' };
const COLUMNS = ['Sektor', 'Cena', 'Volných míst', 'Typ', 'Poznámka'] as const;
type Column = (typeof COLUMNS)[number];

export function parsePf09(ref: EventRef, $: CheerioAPI, url: string): ScrapeData {
  const table = $('table.vstupenky');
  if (table.length === 0) throw read.malformed('the page has no tickets table (table.vstupenky)');
  const headings = table
    .find('thead th')
    .toArray()
    .map((th) => $(th).text().trim());
  const index = {} as Record<Column, number>;
  for (const column of COLUMNS) {
    index[column] = headings.indexOf(column);
    if (index[column] < 0) throw read.malformed(`the tickets table has no "${column}" column`);
  }
  const currency = read.optionalCurrency(table.attr('data-mena'));
  const sections = new OfferSectionsBuilder(currency);
  table.find('tbody tr').each((i, el) => {
    const cells = $(el)
      .children('td')
      .toArray()
      .map((td) => $(td).text());
    const cell = (column: Column) => cells[index[column]];
    const where = `ticket row ${i + 1}`;
    const free = cell('Volných míst')?.trim();
    const notes = (cell('Poznámka') ?? '').split(';').map((n) => n.trim());
    sections.offer(read.text(cell('Sektor'), `Sektor of ${where}`), {
      id: read.text($(el).attr('data-id'), `id of ${where}`),
      price: read.priceText(cell('Cena'), 'comma', `Cena of ${where}`),
      quantity: free === 'Vyprodáno' ? 0 : read.quantity(free, `Volných míst of ${where}`),
      ticket_type: read.oneOf(cell('Typ'), TYP, `Typ of ${where}`),
      restricted_view: notes.includes('Omezený výhled'),
      accessible: notes.includes('Bezbariérový přístup'),
      presale: notes.includes('Předprodej'),
    });
  });
  const akce = $('.akce');
  return {
    sections_type: 'OfferSections',
    sections: sections.build(),
    event_info: eventInfo(ref, url, {
      name: read.optionalText(akce.find('.nazev').text()),
      venue: read.optionalText(akce.find('.objekt').text()),
      city: read.optionalText(akce.find('.mesto').text()),
      starts_at: read.optionalTime(akce.find('.datum').attr('data-zacatek')),
      currency,
    }),
    degraded: null,
  };
}

/** pf_09 is behind PerimeterX's CAPTCHA (block-pages.ts). */
export const blockPage = perimeterxBlock;

export function createPf09({ baseUrl }: AdapterDeps): PlatformAdapter {
  return {
    platform: 'pf_09',
    async scrape(ref, { http }) {
      const path = `/akce/${encodeURIComponent(ref.key)}`;
      const page = await http.html(`${baseUrl}${path}?region=${encodeURIComponent(ref.region)}`);
      read.expectFound(page, 'the event page');
      return parsePf09(ref, page.$, publicUrl('pf_09', path));
    },
  };
}
