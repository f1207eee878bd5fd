// pf_01 adapter (SeatMapSections): primary and resale ticketing whose event page draws its seat
// map in the browser from two data arms, so it is read off the rendered DOM of a warm chromium
// page: seats from the seat arm (v2), resale listings and general-admission counts from the
// availability arm (v1). One arm down still answers, marked `degraded` (spec 2.5); both down fails.
import type { Page } from 'playwright-core';
import type { EventRef } from '../../platform/event-ref.ts';
import { eventInfo, publicUrl } from '../event-info.ts';
import { PageReader } from '../page-reader.ts';
import { SeatMapSectionsBuilder } from '../sections.ts';
import { blockedFailure, isBlockedStatus, ScrapeFailure, type AdapterDeps, type Degraded, type PlatformAdapter, type ScrapeData, type TicketType } from '../types.ts';

const read = new PageReader('pf_01');

/** Attributes of one element, as the page wrote them (dataset: data-foo-bar is fooBar). */
type Attrs = Record<string, string | undefined>;

/** What the rendered page holds, copied out in one round trip and checked here in Node. */
export interface Pf01Dom {
  /** HTTP status of the document (0 if the browser does not say). */
  status: number;
  hasSeatMap: boolean;
  state: string | null;
  arms: { v1: string | null; v2: string | null };
  event: Attrs | null;
  sections: { name: string | undefined; seats: Attrs[]; primary: Attrs[]; resale: Attrs[]; ga: Attrs[] }[];
}

/** Seat classes of the seat arm; `data-offer` values. */
const SEAT_OFFERS: Readonly<Record<string, TicketType>> = { standard: 'standard', platinum: 'platinum' };
const FLAG: Readonly<Record<string, 'true' | 'false'>> = { true: 'true', false: 'false' };

function flag(value: string | undefined, what: string): boolean {
  return read.oneOf(value, FLAG, what) === 'true';
}

function status(page: Page): Promise<number> {
  // withPage hands over the page, not the response: the navigation entry keeps its status.
  return page.evaluate(() => {
    const entry = performance.getEntriesByType('navigation')[0] as (PerformanceNavigationTiming & { responseStatus?: number }) | undefined;
    return entry?.responseStatus ?? 0;
  });
}

/**
 * Runs in the page. No named inner functions: tsx compiles with keepNames, whose __name helper
 * does not exist in the browser.
 */
function readDom(): Omit<Pf01Dom, 'status'> {
  const body = document.body;
  const header = document.getElementById('event');
  return {
    hasSeatMap: document.getElementById('seat-map') !== null,
    state: body.getAttribute('data-state'),
    arms: { v1: body.getAttribute('data-arm-v1'), v2: body.getAttribute('data-arm-v2') },
    event: header ? { ...header.dataset } : null,
    sections: Array.from(document.querySelectorAll<HTMLElement>('#seat-map .map-section'), (section) => ({
      name: section.dataset.section,
      seats: Array.from(section.querySelectorAll<HTMLElement>('.seat'), (el) => ({ ...el.dataset })),
      primary: Array.from(section.querySelectorAll<HTMLElement>('.primary-count'), (el) => ({ ...el.dataset })),
      resale: Array.from(section.querySelectorAll<HTMLElement>('.resale-listing'), (el) => ({ ...el.dataset })),
      ga: Array.from(section.querySelectorAll<HTMLElement>('.ga-offer'), (el) => ({ ...el.dataset })),
    })),
  };
}

/** Visits the event page and copies out what it rendered; page-level verdicts are thrown here. */
async function loadDom(page: Page): Promise<Pf01Dom> {
  const code = await status(page);
  if (code === 404 || code === 410) throw new ScrapeFailure('not_found', `pf_01: no such event in this region (the event page answered ${code})`);
  // The browser pool settles 429 and 403 with their Retry-After before this; the page alone has no headers.
  if (isBlockedStatus(code)) throw blockedFailure('pf_01: the event page', code, null);
  if (code >= 400) throw new ScrapeFailure('upstream', `pf_01: the event page answered ${code}`);
  // The page marks itself done once both arms have answered; a page without the seat map is
  // not an event page at all and is judged as it is. Bounded by the visit's time limit.
  await page.waitForFunction(() => {
    const state = document.body?.getAttribute('data-state');
    return document.getElementById('seat-map') === null || (state !== null && state !== undefined && state !== 'loading');
  });
  return { status: code, ...(await page.evaluate(readDom)) };
}

function armState(value: string | null, arm: string): 'ok' | 'error' {
  if (value !== 'ok' && value !== 'error') {
    throw read.malformed(`the page does not say whether its ${arm} arm loaded (data-arm-${arm} is ${value === null ? 'missing' : JSON.stringify(value)})`);
  }
  return value;
}

/** ScrapeData from the copied DOM: the rules of docs/live-availability.md, "pf_01's two data arms". */
export function parsePf01(ref: EventRef, dom: Pf01Dom): ScrapeData {
  if (!dom.hasSeatMap) throw read.malformed('the event page has no seat map (#seat-map)');
  if (dom.state !== 'ready') throw read.malformed(`the event page ended in state ${JSON.stringify(dom.state)} instead of "ready"`);
  const v1 = armState(dom.arms.v1, 'v1');
  const v2 = armState(dom.arms.v2, 'v2');
  if (v1 === 'error' && v2 === 'error') {
    throw new ScrapeFailure('upstream', 'pf_01: both data arms failed (v2 seats and v1 resale/general admission)');
  }
  if (!dom.event) throw read.malformed('the event page has no event header (#event)');
  const currency = read.optionalCurrency(dom.event.currency);
  // Without v1 nobody knows the resale and standing counts: left out of by_ticket_type.
  const sections = new SeatMapSectionsBuilder(currency, v1 === 'error' ? ['resale', 'general_admission'] : []);

  dom.sections.forEach((section, i) => {
    const name = read.text(section.name, `the name of seat map section ${i + 1}`);
    sections.section(name);
    if (v2 === 'ok') {
      for (const seat of section.seats) {
        const row = read.text(seat.row, `a seat's row in "${name}"`);
        const number = read.text(seat.seat, `a seat's number in row ${row} of "${name}"`);
        const where = `seat ${row}${number} of "${name}"`;
        sections.seat(name, {
          row,
          seat: number,
          price: read.price(seat.price, `the price of ${where}`),
          ticket_type: read.oneOf(seat.offer, SEAT_OFFERS, `the class of ${where}`),
          restricted_view: flag(seat.restrictedView, `the restricted-view flag of ${where}`),
          accessible: flag(seat.accessible, `the accessible flag of ${where}`),
          presale: flag(seat.presale, `the presale flag of ${where}`),
        });
      }
    } else {
      // Seat detail is missing, but v1 still counts the primary seats.
      for (const count of section.primary) {
        const type = read.oneOf(count.offer, SEAT_OFFERS, `a primary count's class in "${name}"`);
        const available = read.quantity(count.available, `the ${type} count in "${name}"`);
        sections.counted(name, type, available, [read.price(count.price, `the ${type} price in "${name}"`)]);
      }
    }
    if (v1 === 'ok') {
      for (const listing of section.resale) {
        const quantity = read.quantity(listing.quantity, `a resale listing's quantity in "${name}"`);
        sections.counted(name, 'resale', quantity, [read.price(listing.price, `a resale listing's price in "${name}"`)]);
      }
      for (const ga of section.ga) {
        const available = read.quantity(ga.available, `the general-admission count in "${name}"`);
        sections.counted(name, 'general_admission', available, [read.price(ga.price, `the general-admission price in "${name}"`)]);
      }
    }
  });

  const degraded: Degraded | null = v1 === 'error' ? 'v1' : v2 === 'error' ? 'v2' : null;
  return {
    sections_type: 'SeatMapSections',
    sections: sections.build(),
    event_info: eventInfo(ref, publicUrl('pf_01', `/event/${ref.key}`), {
      name: read.optionalText(dom.event.name),
      venue: read.optionalText(dom.event.venue),
      city: read.optionalText(dom.event.city),
      starts_at: read.optionalTime(dom.event.startsAt),
      currency,
    }),
    degraded,
  };
}

export function createPf01({ baseUrl, browser }: AdapterDeps): PlatformAdapter {
  return {
    platform: 'pf_01',
    async scrape(ref, options) {
      const url = `${baseUrl}/event/${encodeURIComponent(ref.key)}?region=${encodeURIComponent(ref.region)}`;
      const dom = await browser.withPage(url, loadDom, { signal: options?.signal });
      return parsePf01(ref, dom);
    },
  };
}
