// pf_04 adapter (OfferSections), Europe. The strategy follows the region, as the platform
// serves it: the German-speaking regions (de, at, ch) have a JSON offers API (prices in cents);
// everywhere else the event page is scraped, reading its schema.org Event and Offer microdata.
import type { CheerioAPI } from 'cheerio';
import type { EventRef } from '../../platform/event-ref.ts';
import { eventInfo, publicUrl } from '../event-info.ts';
import { PageReader } from '../page-reader.ts';
import { OfferSectionsBuilder } from '../sections.ts';
import type { AdapterDeps, PlatformAdapter, ScrapeData, TicketType } from '../types.ts';
import { datadomeBlock } from '../block-pages.ts';

const read = new PageReader('pf_04');
export const PF04_API_REGIONS: readonly string[] = ['de', 'at', 'ch'];
const KIND: Record<string, TicketType> = { STANDARD: 'standard', RESALE: 'resale', PLATINUM: 'platinum', GA: 'general_admission' };

export function parsePf04Api(ref: EventRef, data: unknown, url: string): ScrapeData {
  if (data === undefined) throw read.malformed('the offers API did not answer JSON');
  const body = read.object(data, 'the offers API answer');
  const event = read.object(body.event, 'event');
  const currency = read.optionalCurrency(event.currency);
  const sections = new OfferSectionsBuilder(currency);
  for (const [i, raw] of read.array(body.offers, 'offers').entries()) {
    const offer = read.object(raw, `offer ${i + 1}`);
    const where = `offer ${i + 1}`;
    sections.offer(read.text(offer.block, `block of ${where}`), {
      id: read.text(offer.offerId, `offerId of ${where}`),
      price: read.priceInMinorUnits(offer.priceCents, `priceCents of ${where}`),
      quantity: read.quantity(offer.available, `available of ${where}`),
      ticket_type: read.oneOf(offer.type, KIND, `type of ${where}`),
      restricted_view: read.boolean(offer.restrictedView, `restrictedView of ${where}`),
      accessible: read.boolean(offer.accessible, `accessible of ${where}`),
      presale: read.boolean(offer.presale, `presale of ${where}`),
    });
  }
  return {
    sections_type: 'OfferSections',
    sections: sections.build(),
    event_info: eventInfo(ref, url, {
      name: read.optionalText(event.name),
      venue: read.optionalText(event.venue),
      city: read.optionalText(event.city),
      starts_at: read.optionalTime(event.start),
      currency,
    }),
    degraded: null,
  };
}

export function parsePf04Page(ref: EventRef, $: CheerioAPI, url: string): ScrapeData {
  const list = $('#offers');
  if (list.length === 0) throw read.malformed('the event page has no offer list (#offers)');
  const offers = list.find('[itemtype="https://schema.org/Offer"]').toArray();
  const currencies = new Set(offers.map((el) => read.optionalCurrency($(el).find('meta[itemprop="priceCurrency"]').attr('content'))));
  const currency = currencies.size === 1 ? [...currencies][0]! : null;
  const sections = new OfferSectionsBuilder(currency);
  offers.forEach((el, i) => {
    const offer = $(el);
    const where = `offer ${i + 1}`;
    const kind = offer.find('.kind').attr('data-kind')?.toUpperCase();
    const attrs = offer
      .find('.attributes li')
      .toArray()
      .map((li) => $(li).attr('data-attr'));
    sections.offer(read.text(offer.find('[itemprop="name"]').first().text(), `name of ${where}`), {
      id: read.text(offer.attr('data-offer-id'), `id of ${where}`),
      price: read.price(offer.find('meta[itemprop="price"]').attr('content'), `price of ${where}`),
      quantity: read.quantity(offer.find('.stock').attr('data-available'), `stock of ${where}`),
      ticket_type: read.oneOf(kind, KIND, `kind of ${where}`),
      restricted_view: attrs.includes('restricted-view'),
      accessible: attrs.includes('accessible'),
      presale: attrs.includes('presale'),
    });
  });
  const event = $('[itemtype="https://schema.org/Event"]').first();
  const place = event.find('[itemtype="https://schema.org/Place"]').first();
  return {
    sections_type: 'OfferSections',
    sections: sections.build(),
    event_info: eventInfo(ref, url, {
      name: read.optionalText(event.children('[itemprop="name"]').first().text()),
      venue: read.optionalText(place.find('[itemprop="name"]').first().text()),
      city: read.optionalText(place.find('[itemprop="address"]').first().text()),
      starts_at: read.optionalTime(event.find('meta[itemprop="startDate"]').attr('content')),
      currency,
    }),
    degraded: null,
  };
}

/** pf_04 is behind DataDome's CAPTCHA (block-pages.ts). */
export const blockPage = datadomeBlock;

export function createPf04({ baseUrl }: AdapterDeps): PlatformAdapter {
  return {
    platform: 'pf_04',
    async scrape(ref, { http }) {
      const region = encodeURIComponent(ref.region);
      const key = encodeURIComponent(ref.key);
      const pagePath = `/${region}/tickets/${key}`;
      const url = publicUrl('pf_04', pagePath);
      if (PF04_API_REGIONS.includes(ref.region)) {
        const answer = await http.json(`${baseUrl}/api/events/${key}/offers?region=${region}`);
        read.expectFound(answer, 'the offers API');
        return parsePf04Api(ref, answer.data, url);
      }
      const page = await http.html(`${baseUrl}${pagePath}`);
      read.expectFound(page, 'the event page');
      return parsePf04Page(ref, page.$, url);
    },
  };
}
