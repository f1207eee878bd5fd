// pf_06 adapter (OfferSections). A paged JSON listings API: tickets come in lots of up to four,
// each pointing at one of the venue's sections (listed on every page, so sold-out sections are
// known). Page 1 says how many pages and listings there are; the rest are fetched together, up to
// a bound.
//
// Listings sell and are added while the pages are read, and each change moves every listing after
// it one place along: one may then show on two pages, or on none. So a listing is counted once, by
// its id, and a set of pages that disagrees is no inventory (docs/scraping.md, "pf_06: one
// inventory from many pages"): the same listing with different content on two pages, a page whose
// totals are not page 1's, or not as many listings as page 1 counts. Such a set is read once more,
// at once; if that one disagrees too, the scrape fails (Pf06PagesDisagree), never a smaller or
// larger inventory.
import type { EventRef } from '../../platform/event-ref.ts';
import { eventInfo, publicUrl } from '../event-info.ts';
import { PageReader, type JsonObject } from '../page-reader.ts';
import { OfferSectionsBuilder } from '../sections.ts';
import { ScrapeFailure, type AdapterDeps, type Offer, type PlatformAdapter, type ScrapeData, type TicketType } from '../types.ts';
import { perimeterxBlock } from '../block-pages.ts';

const read = new PageReader('pf_06');
/** Beyond this the listing is not believed (a paging loop, or an event far larger than any venue). */
export const PF06_MAX_PAGES = 200;
/** Reads of the page set one scrape makes at most: the first, and one more if its pages disagree. */
export const PF06_READS = 2;
const KIND: Record<string, TicketType> = { standard: 'standard', resale: 'resale', platinum: 'platinum', general_admission: 'general_admission' };

/**
 * The pages of one read disagree: listings moved while they were read. Not an inventory, and
 * not the event's fault: transient (`upstream`), so a poll keeps its baseline and tries again, and
 * an on-demand scrape is retried.
 */
export class Pf06PagesDisagree extends ScrapeFailure {
  constructor(problem: string) {
    super('upstream', `pf_06: the listing pages disagree (${problem}): listings moved while they were read`, {
      detail: "pf_06's listings changed while they were being read; try again in a moment",
    });
  }
}

function pageBody(data: unknown, page: number): JsonObject {
  if (data === undefined) throw read.malformed(`listings page ${page} is not JSON`);
  return read.object(data, `listings page ${page}`);
}

interface Totals {
  pages: number;
  listings: number;
}

function totalsOf(body: JsonObject, page: number): Totals {
  return { pages: read.quantity(body.total_pages, `total_pages of page ${page}`), listings: read.quantity(body.total_listings, `total_listings of page ${page}`) };
}

/** A listing as read on one page. */
interface Sighting {
  page: number;
  section: string;
  offer: Offer;
}

/** Two sightings of one id show the same listing (compared only when an id is seen again). */
function sameListing(a: Sighting, b: Sighting): boolean {
  const [x, y] = [a.offer, b.offer];
  return (
    a.section === b.section &&
    x.price === y.price &&
    x.quantity === y.quantity &&
    x.ticket_type === y.ticket_type &&
    x.restricted_view === y.restricted_view &&
    x.accessible === y.accessible &&
    x.presale === y.presale
  );
}

function readListing(raw: unknown, i: number, page: number, sectionNames: ReadonlyMap<string, string>): Sighting {
  const listing = read.object(raw, `listing ${i + 1} of page ${page}`);
  const where = `listing ${typeof listing.id === 'string' || typeof listing.id === 'number' ? listing.id : i + 1}`;
  const sectionId = read.text(listing.section_id, `section_id of ${where}`);
  const section = sectionNames.get(sectionId);
  if (section === undefined) throw read.malformed(`${where} names an unknown section (${sectionId})`);
  const price = read.object(listing.price, `price of ${where}`);
  const notes = read.array(listing.notes, `notes of ${where}`);
  const offer: Offer = {
    id: read.text(listing.id, `id of ${where}`),
    price: read.price(price.amount, `price.amount of ${where}`),
    quantity: read.quantity(listing.quantity, `quantity of ${where}`),
    ticket_type: read.oneOf(listing.kind, KIND, `kind of ${where}`),
    restricted_view: notes.includes('obstructed_view'),
    accessible: notes.includes('wheelchair_accessible'),
    presale: notes.includes('presale'),
  };
  return { page, section, offer };
}

/**
 * One read of the event: `pages` are the answers for pages 1 to page 1's `total_pages`, in order.
 * Throws Pf06PagesDisagree when they are not one inventory, a malformed failure when one of them
 * cannot be read.
 */
export function parsePf06(ref: EventRef, pages: readonly unknown[], url: string): ScrapeData {
  const first = pageBody(pages[0], 1);
  const totals = totalsOf(first, 1);
  if (pages.length !== totals.pages) throw read.malformed(`${pages.length} listings pages given where page 1 says ${totals.pages}`);
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
  const seen = new Map<string, Sighting>();
  pages.forEach((data, p) => {
    const page = p + 1;
    const body = p === 0 ? first : pageBody(data, page);
    if (p > 0) {
      const own = totalsOf(body, page);
      if (own.pages !== totals.pages || own.listings !== totals.listings) {
        throw new Pf06PagesDisagree(`page ${page} counts ${own.listings} listings on ${own.pages} pages, page 1 ${totals.listings} on ${totals.pages}`);
      }
    }
    for (const [i, raw] of read.array(body.listings, `listings of page ${page}`).entries()) {
      const sighting = readListing(raw, i, page, sectionNames);
      const before = seen.get(sighting.offer.id);
      if (!before) seen.set(sighting.offer.id, sighting);
      else if (!sameListing(before, sighting)) {
        // Two pages read at two moments may differ; one page is one moment.
        const id = sighting.offer.id;
        if (before.page === page) throw read.malformed(`listing ${id} is twice on page ${page}, with different content`);
        throw new Pf06PagesDisagree(`listing ${id} is on page ${before.page} and page ${page} with different content`);
      }
    }
  });
  // A listing that moved onto a page already read is on none; one that moved onto a page still
  // to be read is on two, counted once. Page 1's count tells the first from a quiet read.
  if (seen.size !== totals.listings) throw new Pf06PagesDisagree(`${seen.size} different listings on the pages, page 1 counts ${totals.listings}`);
  for (const { section, offer } of seen.values()) sections.offer(section, offer);
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
      const readPages = async (): Promise<unknown[]> => {
        const first = await fetchPage(1);
        const totalPages = read.quantity(pageBody(first, 1).total_pages, 'total_pages');
        if (totalPages < 1 || totalPages > PF06_MAX_PAGES) throw read.malformed(`total_pages is ${totalPages}, expected 1 to ${PF06_MAX_PAGES}`);
        const rest = await Promise.all(Array.from({ length: totalPages - 1 }, (_, i) => fetchPage(i + 2)));
        return [first, ...rest];
      };
      const url = publicUrl('pf_06', `/events/${key}`);
      // A read whose pages disagree is made once more, at once: a read lasts about two round trips
      // (page 1, then the rest), so the next one very likely meets no change. A second
      // disagreement is the scrape's failure (docs/scraping.md says why not more).
      for (let reads = 1; ; reads++) {
        try {
          return parsePf06(ref, await readPages(), url);
        } catch (err) {
          if (!(err instanceof Pf06PagesDisagree) || reads >= PF06_READS) throw err;
        }
      }
    },
  };
}
