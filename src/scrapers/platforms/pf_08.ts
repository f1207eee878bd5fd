// pf_08 adapter (OfferSections). One site per country domain, so the region is the domain's
// (event-ref.ts checks the two agree) and the public URL keeps the client's domain. Offers are
// the page's ticket cards: zone, price text ("A$120.50"), "12 left" or "Sold out", kind, tags.
import type { CheerioAPI } from 'cheerio';
import type { EventRef } from '../../platform/event-ref.ts';
import { eventInfo, publicUrl } from '../event-info.ts';
import { PageReader } from '../page-reader.ts';
import { OfferSectionsBuilder } from '../sections.ts';
import type { AdapterDeps, PlatformAdapter, ScrapeData, TicketType } from '../types.ts';
import { akamaiBlock } from '../block-pages.ts';

const read = new PageReader('pf_08');
const KIND: Record<string, TicketType> = { standard: 'standard', resale: 'resale', platinum: 'platinum', general_admission: 'general_admission' };

export function parsePf08(ref: EventRef, $: CheerioAPI, url: string): ScrapeData {
  const list = $('#ticket-list');
  if (list.length === 0) throw read.malformed('the page has no ticket list (#ticket-list)');
  const hero = $('.event-hero');
  const currency = read.optionalCurrency(hero.attr('data-currency'));
  const sections = new OfferSectionsBuilder(currency);
  list.find('article.ticket-card').each((i, el) => {
    const ticket = $(el);
    const where = `ticket card ${i + 1}`;
    const remaining = ticket.find('.remaining');
    const left = /^(\d+) left$/.exec(remaining.text().trim());
    if (!remaining.hasClass('sold-out') && !left) throw read.malformed(`availability of ${where} is unreadable ("${remaining.text().trim()}")`);
    const tags = ticket
      .find('.tags .tag')
      .toArray()
      .map((t) => $(t).attr('data-tag'));
    sections.offer(read.text(ticket.find('.zone').text(), `zone of ${where}`), {
      id: read.text(ticket.attr('data-ticket-id'), `id of ${where}`),
      price: read.priceText(ticket.find('.price').text(), 'point', `price of ${where}`),
      quantity: left ? read.quantity(left[1], `availability of ${where}`) : 0,
      ticket_type: read.oneOf(ticket.find('.ticket-kind').attr('data-kind'), KIND, `kind of ${where}`),
      restricted_view: tags.includes('restricted'),
      accessible: tags.includes('accessible'),
      presale: tags.includes('presale'),
    });
  });
  return {
    sections_type: 'OfferSections',
    sections: sections.build(),
    event_info: eventInfo(ref, url, {
      name: read.optionalText(hero.find('h1').text()),
      venue: read.optionalText(hero.find('.venue').text()),
      city: read.optionalText(hero.find('.city').text()),
      starts_at: read.optionalTime(hero.find('.date').attr('data-iso')),
      currency,
    }),
    degraded: null,
  };
}

/** pf_08 is behind Cloudflare's managed challenge (block-pages.ts). */
export const blockPage = akamaiBlock;

export function createPf08({ baseUrl }: AdapterDeps): PlatformAdapter {
  return {
    platform: 'pf_08',
    async scrape(ref, { http }) {
      const path = `/event/${encodeURIComponent(ref.key)}`;
      // The simulator (and base URL) is one site for all domains, so the region travels along.
      const page = await http.html(`${baseUrl}${path}?region=${encodeURIComponent(ref.region)}`);
      read.expectFound(page, 'the event page');
      return parsePf08(ref, page.$, publicUrl('pf_08', path, ref.host ?? undefined));
    },
  };
}
