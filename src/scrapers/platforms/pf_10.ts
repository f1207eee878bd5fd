// pf_10 adapter (OfferSections). A GraphQL-style API: one POST /graphql asks for the event by id
// and region and gets sectors with their offers. An unknown event is `event: null` (or a 404);
// GraphQL `errors` without data mean the query itself failed upstream.
import type { EventRef } from '../../platform/event-ref.ts';
import { eventInfo, publicUrl } from '../event-info.ts';
import { label, PageReader, type JsonObject } from '../page-reader.ts';
import { OfferSectionsBuilder } from '../sections.ts';
import { ScrapeFailure, type AdapterDeps, type PlatformAdapter, type ScrapeData, type TicketType } from '../types.ts';
import { datadomeBlock } from '../block-pages.ts';

const read = new PageReader('pf_10');
const TICKET_TYPE: Record<string, TicketType> = { STANDARD: 'standard', RESALE: 'resale', PLATINUM: 'platinum', GENERAL_ADMISSION: 'general_admission' };

export const PF10_EVENT_QUERY = `query Event($id: ID!, $region: String!) {
  event(id: $id, region: $region) {
    id title startsAt currency
    venue { name city }
    sectors { name offers { id price { amount currency } available ticketType restrictedView accessible presale } }
  }
}`;

/** The event object of an answer, or a ScrapeFailure saying why there is none. */
function eventOf(data: unknown): JsonObject {
  if (data === undefined) throw read.malformed('the GraphQL API did not answer JSON');
  const body = read.object(data, 'the GraphQL answer');
  if (body.data === null || body.data === undefined) {
    const errors = Array.isArray(body.errors) ? body.errors.map((e) => label((e as JsonObject)?.message ?? e)).join('; ') : 'no data';
    throw new ScrapeFailure('upstream', `pf_10: the GraphQL query failed: ${errors}`);
  }
  const event = read.object(body.data, 'data').event;
  if (event === null) throw new ScrapeFailure('not_found', 'pf_10: no such event (data.event is null)');
  return read.object(event, 'data.event');
}

export function parsePf10(ref: EventRef, data: unknown, url: string): ScrapeData {
  const event = eventOf(data);
  const venue = typeof event.venue === 'object' && event.venue !== null ? (event.venue as JsonObject) : {};
  const currency = read.optionalCurrency(event.currency);
  const sections = new OfferSectionsBuilder(currency);
  for (const [i, raw] of read.array(event.sectors, 'event.sectors').entries()) {
    const sector = read.object(raw, `sector ${i + 1}`);
    const name = read.text(sector.name, `name of sector ${i + 1}`);
    sections.section(name);
    for (const rawOffer of read.array(sector.offers, `offers of sector "${name}"`)) {
      const offer = read.object(rawOffer, `an offer of sector "${name}"`);
      const where = `offer ${label(offer.id)} of sector "${name}"`;
      const price = read.object(offer.price, `price of ${where}`);
      sections.offer(name, {
        id: read.text(offer.id, `id of an offer of sector "${name}"`),
        price: read.price(price.amount, `price.amount of ${where}`),
        quantity: read.quantity(offer.available, `available of ${where}`),
        ticket_type: read.oneOf(offer.ticketType, TICKET_TYPE, `ticketType of ${where}`),
        restricted_view: read.boolean(offer.restrictedView, `restrictedView of ${where}`),
        accessible: read.boolean(offer.accessible, `accessible of ${where}`),
        presale: read.boolean(offer.presale, `presale of ${where}`),
      });
    }
  }
  return {
    sections_type: 'OfferSections',
    sections: sections.build(),
    event_info: eventInfo(ref, url, {
      name: read.optionalText(event.title),
      venue: read.optionalText(venue.name),
      city: read.optionalText(venue.city),
      starts_at: read.optionalTime(event.startsAt),
      currency,
    }),
    degraded: null,
  };
}

/** pf_10 is behind DataDome's CAPTCHA (block-pages.ts). */
export const blockPage = datadomeBlock;

export function createPf10({ baseUrl }: AdapterDeps): PlatformAdapter {
  return {
    platform: 'pf_10',
    async scrape(ref, { http }) {
      const answer = await http.json(`${baseUrl}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: PF10_EVENT_QUERY, variables: { id: ref.key, region: ref.region } }),
      });
      read.expectFound(answer, 'the GraphQL API');
      return parsePf10(ref, answer.data, publicUrl('pf_10', `/events/${encodeURIComponent(ref.key)}`));
    },
  };
}
