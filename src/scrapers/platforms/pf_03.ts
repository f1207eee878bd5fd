// pf_03 adapter (OfferSections). A server-rendered page: the offers are the rows of
// `table.offers` (section, price text like "€120.50", quantity or "Sold out", badges for the
// ticket kind and flags); the currency is the table's data-currency; the event is in the header.
import type { CheerioAPI } from 'cheerio';
import type { EventRef } from '../../platform/event-ref.ts';
import { eventInfo, publicUrl } from '../event-info.ts';
import { PageReader } from '../page-reader.ts';
import { OfferSectionsBuilder } from '../sections.ts';
import type { AdapterDeps, PlatformAdapter, ScrapeData, TicketType } from '../types.ts';
import { cloudflareChallenge } from '../block-pages.ts';

const read = new PageReader('pf_03');

function kind(badges: string[]): TicketType {
  if (badges.includes('badge-resale')) return 'resale';
  if (badges.includes('badge-platinum')) return 'platinum';
  if (badges.includes('badge-ga')) return 'general_admission';
  return 'standard';
}

export function parsePf03(ref: EventRef, $: CheerioAPI, url: string): ScrapeData {
  const table = $('table.offers');
  if (table.length === 0) throw read.malformed('the page has no offers table (table.offers)');
  const currency = read.optionalCurrency(table.attr('data-currency'));
  const sections = new OfferSectionsBuilder(currency);
  table.find('tbody tr').each((i, el) => {
    const row = $(el);
    const where = `offer row ${i + 1}`;
    const name = read.text(row.find('td.section').text(), `section of ${where}`);
    const qtyText = row.find('td.qty').text().trim();
    const badges = row
      .find('td.badges .badge')
      .toArray()
      .flatMap((b) => ($(b).attr('class') ?? '').split(/\s+/));
    sections.offer(name, {
      id: read.text(row.attr('data-offer-id'), `id of ${where}`),
      price: read.priceText(row.find('td.price').text(), 'point', `price of ${where}`),
      quantity: /^sold out$/i.test(qtyText) ? 0 : read.quantity(qtyText, `quantity of ${where}`),
      ticket_type: kind(badges),
      restricted_view: badges.includes('badge-restricted'),
      accessible: badges.includes('badge-accessible'),
      presale: badges.includes('badge-presale'),
    });
  });
  const header = $('header.event-header');
  return {
    sections_type: 'OfferSections',
    sections: sections.build(),
    event_info: eventInfo(ref, url, {
      name: read.optionalText(header.find('h1').text()),
      venue: read.optionalText(header.find('.venue').text()),
      city: read.optionalText(header.find('.city').text()),
      starts_at: read.optionalTime(header.find('time').attr('datetime')),
      currency,
    }),
    degraded: null,
  };
}

/** pf_03 is behind Cloudflare's managed challenge (block-pages.ts). */
export const blockPage = cloudflareChallenge;

export function createPf03({ baseUrl }: AdapterDeps): PlatformAdapter {
  return {
    platform: 'pf_03',
    async scrape(ref, { http }) {
      const path = `/e/${encodeURIComponent(ref.key)}`;
      const page = await http.html(`${baseUrl}${path}?region=${encodeURIComponent(ref.region)}`);
      read.expectFound(page, 'the event page');
      return parsePf03(ref, page.$, publicUrl('pf_03', path));
    },
  };
}
