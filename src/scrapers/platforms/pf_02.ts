// pf_02 adapter (SeatMapSections). The event page renders client-side from the JSON in its
// `<script id="__STATE__">`, so the seat map is read from there: sections, rows, seats with
// price, category and tags; only seats with status "available" are on sale.
import type { EventRef } from '../../platform/event-ref.ts';
import { eventInfo, publicUrl } from '../event-info.ts';
import { label, PageReader, type JsonObject } from '../page-reader.ts';
import { SeatMapSectionsBuilder } from '../sections.ts';
import type { AdapterDeps, PlatformAdapter, ScrapeData, TicketType } from '../types.ts';
import { perimeterxBlock } from '../block-pages.ts';

const read = new PageReader('pf_02');
const CATEGORY: Record<string, TicketType> = { standard: 'standard', resale: 'resale', platinum: 'platinum', ga: 'general_admission' };

function parseState(text: string | null): JsonObject {
  if (text === null) throw read.malformed('the page has no __STATE__ script');
  try {
    return read.object(JSON.parse(text), '__STATE__');
  } catch (err) {
    if (err instanceof SyntaxError) throw read.malformed('__STATE__ is not valid JSON');
    throw err;
  }
}

export function parsePf02(ref: EventRef, stateText: string | null, url: string): ScrapeData {
  const state = parseState(stateText);
  const event = read.object(state.event, '__STATE__.event');
  const venue = typeof event.venue === 'object' && event.venue !== null ? (event.venue as JsonObject) : {};
  const currency = read.optionalCurrency(event.currency);
  const seatMap = read.object(state.seatMap, '__STATE__.seatMap');
  const sections = new SeatMapSectionsBuilder(currency);
  for (const [i, rawSection] of read.array(seatMap.sections, 'seatMap.sections').entries()) {
    const section = read.object(rawSection, `seat map section ${i + 1}`);
    const name = read.text(section.label, `label of seat map section ${i + 1}`);
    sections.section(name);
    for (const rawRow of read.array(section.rows, `rows of section "${name}"`)) {
      const row = read.object(rawRow, `a row of section "${name}"`);
      const rowLabel = read.text(row.label, `a row label in section "${name}"`);
      for (const rawSeat of read.array(row.seats, `seats of row ${rowLabel} in "${name}"`)) {
        const seat = read.object(rawSeat, `a seat in row ${rowLabel} of "${name}"`);
        const where = `seat ${label(seat.n)} in row ${rowLabel} of "${name}"`;
        if (read.text(seat.status, `status of ${where}`) !== 'available') continue;
        const tags = read.array(seat.tags, `tags of ${where}`);
        sections.seat(name, {
          row: rowLabel,
          seat: read.text(seat.n, `number of a seat in row ${rowLabel} of "${name}"`),
          price: read.price(seat.price, `price of ${where}`),
          ticket_type: read.oneOf(seat.category, CATEGORY, `category of ${where}`),
          restricted_view: tags.includes('restricted_view'),
          accessible: tags.includes('wheelchair'),
          presale: tags.includes('presale'),
        });
      }
    }
  }
  return {
    sections_type: 'SeatMapSections',
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

/** pf_02 is behind PerimeterX's CAPTCHA (block-pages.ts). */
export const blockPage = perimeterxBlock;

export function createPf02({ baseUrl }: AdapterDeps): PlatformAdapter {
  return {
    platform: 'pf_02',
    async scrape(ref, { http }) {
      // The URL's locale segment is the region (uk, us, nu, de), as on the public site.
      const path = `/${encodeURIComponent(ref.region)}/event/${encodeURIComponent(ref.key)}`;
      const page = await http.html(`${baseUrl}${path}?region=${encodeURIComponent(ref.region)}`);
      read.expectFound(page, 'the event page');
      const script = page.$('script#__STATE__');
      return parsePf02(ref, script.length ? script.text() : null, publicUrl('pf_02', path));
    },
  };
}
