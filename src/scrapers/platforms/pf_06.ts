// pf_06 adapter (OfferSections). A paged JSON listings API: tickets come in lots of up to four,
// each pointing at one of the venue's sections (listed on every page, so sold-out sections are
// known). Page 1 says how many pages there are; the rest are fetched together, up to a bound.
import type { EventRef } from '../../platform/event-ref.ts';
import { eventInfo, publicUrl } from '../event-info.ts';
import { PageReader, type JsonObject } from '../page-reader.ts';
import { OfferSectionsBuilder } from '../sections.ts';
import type { AdapterDeps, PlatformAdapter, ScrapeData, TicketType } from '../types.ts';
import { perimeterxBlock } from '../block-pages.ts';

const read = new PageReader('pf_06');
/** Beyond this the listing is not believed (a paging loop, or an event far larger than any venue). */
export const PF06_MAX_PAGES = 200;
const KIND: Record<string, TicketType> = { standard: 'standard', resale: 'resale', platinum: 'platinum', general_admission: 'general_admission' };

function pageBody(data: unknown, page: number): JsonObject {
  if (data === undefined) throw read.malformed(`listings page ${page} is not JSON`);
  return read.object(data, `listings page ${page}`);
}

export function parsePf06(ref: EventRef, pages: readonly unknown[], url: string): ScrapeData {
  const first = pageBody(pages[0], 1);
  const event = read.object(first.event, 'event');
  const venue = typeof event.venue === 'object' && event.venue !== null ? (event.venue as JsonObject) : {};
  const currency = read.optionalCurrency(event.currency);
  const sections = new OfferSectionsBuilder(currency);
  const sectionNames = new Map<string, string>();
  for (const [i, raw] of read.array(first.sections, 'sections').entries()) {
    const section = read.object(raw, `section ${i + 1}`);
    const name = read.text(section.name, `name of section ${i + 1}`);
    sectionNames.set(read.text(section.id, `id of section "${name}"`), name);
    sections.section(name);
  }
  pages.forEach((data, p) => {
    const body = pageBody(data, p + 1);
    for (const [i, raw] of read.array(body.listings, `listings of page ${p + 1}`).entries()) {
      const listing = read.object(raw, `listing ${i + 1} of page ${p + 1}`);
      const where = `listing ${typeof listing.id === 'string' || typeof listing.id === 'number' ? listing.id : i + 1}`;
      const sectionId = read.text(listing.section_id, `section_id of ${where}`);
      const name = sectionNames.get(sectionId);
      if (name === undefined) throw read.malformed(`${where} names an unknown section (${sectionId})`);
      const price = read.object(listing.price, `price of ${where}`);
      const notes = read.array(listing.notes, `notes of ${where}`);
      sections.offer(name, {
        id: read.text(listing.id, `id of ${where}`),
        price: read.price(price.amount, `price.amount of ${where}`),
        quantity: read.quantity(listing.quantity, `quantity of ${where}`),
        ticket_type: read.oneOf(listing.kind, KIND, `kind of ${where}`),
        restricted_view: notes.includes('obstructed_view'),
        accessible: notes.includes('wheelchair_accessible'),
        presale: notes.includes('presale'),
      });
    }
  });
  return {
    sections_type: 'OfferSections',
    sections: sections.build(),
    event_info: eventInfo(ref, url, {
      name: read.optionalText(event.name),
      venue: read.optionalText(venue.name),
      city: read.optionalText(venue.city),
      starts_at: read.optionalTime(event.starts_at),
      currency,
    }),
    degraded: null,
  };
}

/** pf_06 is behind PerimeterX's CAPTCHA (block-pages.ts). */
export const blockPage = perimeterxBlock;

export function createPf06({ baseUrl }: AdapterDeps): PlatformAdapter {
  return {
    platform: 'pf_06',
    async scrape(ref, { http }) {
      const key = encodeURIComponent(ref.key);
      const fetchPage = async (page: number) => {
        const answer = await http.json(`${baseUrl}/v1/events/${key}/listings?region=${encodeURIComponent(ref.region)}&page=${page}`);
        read.expectFound(answer, `listings page ${page}`);
        return answer.data;
      };
      const first = await fetchPage(1);
      const totalPages = read.quantity(pageBody(first, 1).total_pages, 'total_pages');
      if (totalPages < 1 || totalPages > PF06_MAX_PAGES) throw read.malformed(`total_pages is ${totalPages}, expected 1 to ${PF06_MAX_PAGES}`);
      const rest = await Promise.all(Array.from({ length: totalPages - 1 }, (_, i) => fetchPage(i + 2)));
      return parsePf06(ref, [first, ...rest], publicUrl('pf_06', `/events/${key}`));
    },
  };
}
