// pf_07 adapter (OfferSections), a resale marketplace: every offer is ticket_type 'resale'.
// UK events (isPf07UkEvent: region uk or the .co.uk host) are read from the platform's
// dedicated UK monitor feed (stands, prices in pence); all others from its listings API.
import { isPf07UkEvent, type EventRef } from '../../platform/event-ref.ts';
import { eventInfo, publicUrl } from '../event-info.ts';
import { label, PageReader } from '../page-reader.ts';
import { OfferSectionsBuilder } from '../sections.ts';
import type { AdapterDeps, PlatformAdapter, ScrapeData } from '../types.ts';
import { akamaiBlock } from '../block-pages.ts';

const read = new PageReader('pf_07');
const UK_HOST = 'www.pf07.example.co.uk';

export function parsePf07Listings(ref: EventRef, data: unknown, url: string): ScrapeData {
  if (data === undefined) throw read.malformed('the listings API did not answer JSON');
  const body = read.object(data, 'the listings API answer');
  const event = read.object(body.event, 'event');
  const currency = read.optionalCurrency(event.currency);
  const sections = new OfferSectionsBuilder(currency);
  for (const [i, name] of read.array(body.sections, 'sections').entries()) sections.section(read.text(name, `section ${i + 1}`));
  for (const [i, raw] of read.array(body.listings, 'listings').entries()) {
    const listing = read.object(raw, `listing ${i + 1}`);
    const where = `listing ${label(listing.listing_id ?? i + 1)}`;
    const features = read.array(listing.features, `features of ${where}`);
    sections.offer(read.text(listing.section, `section of ${where}`), {
      id: read.text(listing.listing_id, `listing_id of ${where}`),
      price: read.price(listing.price_per_ticket, `price_per_ticket of ${where}`),
      quantity: read.quantity(listing.tickets, `tickets of ${where}`),
      ticket_type: 'resale',
      restricted_view: features.includes('restricted_view'),
      accessible: features.includes('accessible'),
      presale: features.includes('presale'),
    });
  }
  return {
    sections_type: 'OfferSections',
    sections: sections.build(),
    event_info: eventInfo(ref, url, {
      name: read.optionalText(event.title),
      venue: read.optionalText(event.venue),
      city: read.optionalText(event.city),
      starts_at: read.optionalTime(event.date),
      currency,
    }),
    degraded: null,
  };
}

export function parsePf07UkMonitor(ref: EventRef, data: unknown, url: string): ScrapeData {
  if (data === undefined) throw read.malformed('the UK monitor did not answer JSON');
  const body = read.object(data, 'the UK monitor feed');
  const fixture = read.object(body.fixture, 'fixture');
  const currency = read.optionalCurrency(fixture.currency);
  const sections = new OfferSectionsBuilder(currency);
  for (const [i, raw] of read.array(body.stands, 'stands').entries()) {
    const stand = read.object(raw, `stand ${i + 1}`);
    const name = read.text(stand.stand, `name of stand ${i + 1}`);
    sections.section(name);
    for (const rawOffer of read.array(stand.available, `available of stand "${name}"`)) {
      const offer = read.object(rawOffer, `an offer in stand "${name}"`);
      const where = `offer ${label(offer.ref)} in stand "${name}"`;
      sections.offer(name, {
        id: read.text(offer.ref, `ref of an offer in stand "${name}"`),
        price: read.priceInMinorUnits(offer.pence, `pence of ${where}`),
        quantity: read.quantity(offer.qty, `qty of ${where}`),
        ticket_type: 'resale',
        restricted_view: read.boolean(offer.obstructed, `obstructed of ${where}`),
        accessible: read.boolean(offer.wheelchair, `wheelchair of ${where}`),
        presale: read.boolean(offer.members_presale, `members_presale of ${where}`),
      });
    }
  }
  return {
    sections_type: 'OfferSections',
    sections: sections.build(),
    event_info: eventInfo(ref, url, {
      name: read.optionalText(fixture.name),
      venue: read.optionalText(fixture.ground),
      city: read.optionalText(fixture.town),
      starts_at: read.optionalTime(fixture.kick_off),
      currency,
    }),
    degraded: null,
  };
}

/** pf_07 is behind DataDome's CAPTCHA (block-pages.ts). */
export const blockPage = akamaiBlock;

export function createPf07({ baseUrl }: AdapterDeps): PlatformAdapter {
  return {
    platform: 'pf_07',
    async scrape(ref, { http }) {
      const key = encodeURIComponent(ref.key);
      const region = encodeURIComponent(ref.region);
      const path = `/event/${key}`;
      if (isPf07UkEvent(ref)) {
        const answer = await http.json(`${baseUrl}/uk/monitor/${key}?region=${region}`);
        read.expectFound(answer, 'the UK monitor');
        return parsePf07UkMonitor(ref, answer.data, publicUrl('pf_07', path, UK_HOST));
      }
      const answer = await http.json(`${baseUrl}/api/events/${key}/listings?region=${region}`);
      read.expectFound(answer, 'the listings API');
      return parsePf07Listings(ref, answer.data, publicUrl('pf_07', path));
    },
  };
}
