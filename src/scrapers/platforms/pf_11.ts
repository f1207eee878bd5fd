// pf_11 adapter (OfferSections). The event page's offers are `<li class="offer">` items whose
// data attributes hold the facts (data-section, data-price, data-qty, data-type, data-flags);
// their visible text is a summary and is not read.
import type { CheerioAPI } from 'cheerio';
import type { EventRef } from '../../platform/event-ref.ts';
import { eventInfo, publicUrl } from '../event-info.ts';
import { PageReader } from '../page-reader.ts';
import { OfferSectionsBuilder } from '../sections.ts';
import type { AdapterDeps, PlatformAdapter, ScrapeData, TicketType } from '../types.ts';
import { cloudflareChallenge } from '../block-pages.ts';

const read = new PageReader('pf_11');
const TYPE: Record<string, TicketType> = { standard: 'standard', resale: 'resale', platinum: 'platinum', general_admission: 'general_admission' };

export function parsePf11(ref: EventRef, $: CheerioAPI, url: string): ScrapeData {
  const list = $('ul.offers');
  if (list.length === 0) throw read.malformed('the page has no offer list (ul.offers)');
  const currency = read.optionalCurrency(list.attr('data-currency'));
  const sections = new OfferSectionsBuilder(currency);
  list.find('li.offer').each((i, el) => {
    const item = $(el);
    const where = `offer item ${i + 1}`;
    const flags = (item.attr('data-flags') ?? '').split(/\s+/);
    sections.offer(read.text(item.attr('data-section'), `data-section of ${where}`), {
      id: read.text(item.attr('data-offer-id'), `data-offer-id of ${where}`),
      price: read.price(item.attr('data-price'), `data-price of ${where}`),
      quantity: read.quantity(item.attr('data-qty'), `data-qty of ${where}`),
      ticket_type: read.oneOf(item.attr('data-type'), TYPE, `data-type of ${where}`),
      restricted_view: flags.includes('restricted_view'),
      accessible: flags.includes('accessible'),
      presale: flags.includes('presale'),
    });
  });
  const event = $('.event');
  return {
    sections_type: 'OfferSections',
    sections: sections.build(),
    event_info: eventInfo(ref, url, {
      name: read.optionalText(event.find('.event__name').text()),
      venue: read.optionalText(event.find('.event__venue').text()),
      city: read.optionalText(event.find('.event__city').text()),
      starts_at: read.optionalTime(event.find('.event__date').attr('datetime')),
      currency,
    }),
    degraded: null,
  };
}

/** pf_11 is behind Cloudflare's managed challenge (block-pages.ts). */
export const blockPage = cloudflareChallenge;

export function createPf11({ baseUrl }: AdapterDeps): PlatformAdapter {
  return {
    platform: 'pf_11',
    async scrape(ref, { http }) {
      const path = `/event/${encodeURIComponent(ref.key)}`;
      const page = await http.html(`${baseUrl}${path}?region=${encodeURIComponent(ref.region)}`);
      read.expectFound(page, 'the event page');
      return parsePf11(ref, page.$, publicUrl('pf_11', path));
    },
  };
}
