// pf_01 adapter (SeatMapSections): primary and resale ticketing whose event page draws its seat
// map in the browser from two data arms: seats from the seat arm (v2), resale listings and
// general-admission counts from the availability arm (v1). One arm down still answers, marked
// `degraded` (spec 2.5); both down fails. Two ways in, judged by the same rules (parsePf01):
// - the rendered DOM of a warm Chromium page (on-demand scrapes without a ready clearance);
// - both arms over plain HTTP with a clearance made in the browser (pf_01-clearance.ts: the
//   token-bearing headers and cookies of the page's own data request): the monitors' polls
//   always, on-demand scrapes when a clearance is ready. domFromArms turns the
//   two answers into the DOM the page would have drawn from them.
// Both ways come bound to the scrape (ScrapeVia, issue 36): the page is opened through the
// scrape's session, and the arms are polled through it with a clearance made through the
// same exit (the exit's own pool, `via.clearances`). Both check pf_01's Cloudflare challenge
// page, a block the platform answered; the arms' own `challenge_required` 403 is not one, but a
// refused clearance (its token).
// Not found rests on all three (issue 38): the event page and both arms answering 404 or 410. Over
// HTTP, both arms gone has the page loaded (armsGone); in the browser, the page gone has both arms
// asked from it (askArmsFromPage). Any of the three answering otherwise is `upstream`, not gone.
import type { Page } from 'playwright-core';
import type { EventRef } from '../../platform/event-ref.ts';
import { eventInfo, publicUrl } from '../event-info.ts';
import { PageReader } from '../page-reader.ts';
import { SeatMapSectionsBuilder } from '../sections.ts';
import { blockPageFailure, failureForStatus } from '../answer-status.ts';
import { parseRetryAfter } from '../retry-after.ts';
import { blockedFailure, isBlockedStatus, ScrapeFailure, type AdapterDeps, type Degraded, type FetchedPage, type PlatformAdapter, type ScrapeBrowser, type ScrapeData, type ScrapeFetcher, type TicketType } from '../types.ts';
import type { ClearanceLease } from '../types.ts';
import { clearanceInPage, isPf01Clearance, PF01_BLOCK_PAGE, clearanceHeaders, type Pf01Clearance } from './pf_01-clearance.ts';

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

function flagsOf(el: Attrs, where: string): { restricted_view: boolean; accessible: boolean; presale: boolean } {
  return {
    restricted_view: flag(el.restrictedView, `the restricted-view flag of ${where}`),
    accessible: flag(el.accessible, `the accessible flag of ${where}`),
    presale: flag(el.presale, `the presale flag of ${where}`),
  };
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

/** The URLs of one event on pf_01: its page (what the browser visits) and its two data arms. */
interface EventUrls {
  baseUrl: string;
  page: string;
  v2: string;
  v1: string;
}

function eventUrls(baseUrl: string, ref: EventRef): EventUrls {
  const query = `?region=${encodeURIComponent(ref.region)}`;
  const key = encodeURIComponent(ref.key);
  return { baseUrl, page: `${baseUrl}/event/${key}${query}`, v2: `${baseUrl}/api/v2/events/${key}/seats${query}`, v1: `${baseUrl}/api/v1/events/${key}/availability${query}` };
}

/** Visits the event page and copies out what it rendered; page-level verdicts are thrown here. */
async function loadDom(page: Page, urls: EventUrls): Promise<Pf01Dom> {
  const code = await status(page);
  // The page's 404 alone is not the event's end: its data arms must say so too (issue 38).
  if (code === 404 || code === 410) throw pageGone(code, await askArmsFromPage(page, urls));
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
          ...flagsOf(seat, where),
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
      // Sold without a seat, but with their flags, so every item filter applies to them as to seats.
      for (const listing of section.resale) {
        const id = read.text(listing.listingId, `a resale listing's id in "${name}"`);
        const where = `resale listing ${id} in "${name}"`;
        sections.offer(name, {
          id,
          price: read.price(listing.price, `the price of ${where}`),
          quantity: read.quantity(listing.quantity, `the quantity of ${where}`),
          ticket_type: 'resale',
          ...flagsOf(listing, where),
        });
      }
      section.ga.forEach((ga, n) => {
        const where = `general-admission offer ${n + 1} in "${name}"`;
        sections.offer(name, {
          // The platform gives standing offers no id: their place in the section is what it shows.
          id: `ga-${n + 1}`,
          price: read.price(ga.price, `the price of ${where}`),
          quantity: read.quantity(ga.available, `the count of ${where}`),
          ticket_type: 'general_admission',
          ...flagsOf(ga, where),
        });
      });
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

/** One data arm as the page script reads it: its JSON, or null when it failed. */
type ArmData = Record<string, unknown> | null;

/** What renderSeats and renderAvailability do to the DOM, done to a copy (pf_01-page.ts). */
class DomBuilder {
  readonly sections: Pf01Dom['sections'] = [];
  private readonly byName = new Map<unknown, Pf01Dom['sections'][number]>();

  section(name: unknown): Pf01Dom['sections'][number] {
    let el = this.byName.get(name);
    if (!el) {
      el = { name: String(name), seats: [], primary: [], resale: [], ga: [] };
      this.byName.set(name, el);
      this.sections.push(el);
    }
    return el;
  }
}

/** The page's own conversions, so a value reads the same whichever way it reached us. */
const attr = (value: unknown): string => String(value);
const decimal = (cents: unknown): string => (Number(cents) / 100).toFixed(2);
const flagAttrs = (item: Record<string, unknown>) => ({ restrictedView: attr(!!item.restricted_view), accessible: attr(!!item.accessible), presale: attr(!!item.presale) });

function each(value: unknown, use: (item: Record<string, unknown>) => void): void {
  // The page calls .forEach on what the arm sent: anything but an array throws there, as here.
  if (!Array.isArray(value)) throw new TypeError('not a list');
  for (const item of value) {
    if (item === null || item === undefined) throw new TypeError('an empty entry');
    use(item as Record<string, unknown>);
  }
}

function renderSeats(dom: DomBuilder, data: Record<string, unknown>): void {
  each(data.sections, (s) => {
    const el = dom.section(s.name);
    each(s.rows, (r) =>
      each(r.seats, (seat) => {
        el.seats.push({ row: attr(r.row), seat: attr(seat.number), offer: attr(seat.offer_type).toLowerCase(), price: decimal(seat.price_cents), ...flagAttrs(seat) });
      }),
    );
  });
}

function renderAvailability(dom: DomBuilder, data: Record<string, unknown>): void {
  each(data.sections, (s) => {
    const el = dom.section(s.name);
    each(s.primary, (p) => el.primary.push({ offer: attr(p.offer_type).toLowerCase(), available: attr(p.available), price: decimal(p.price_cents) }));
    each(s.resale, (r) => el.resale.push({ listingId: attr(r.listing_id), price: decimal(r.price_cents), quantity: attr(r.quantity), ...flagAttrs(r) }));
    each(s.general_admission, (g) => el.ga.push({ price: decimal(g.price_cents), available: attr(g.available), ...flagAttrs(g) }));
  });
}

function eventAttrs(data: Record<string, unknown>): Attrs {
  const event = (typeof data.event === 'object' && data.event !== null ? data.event : {}) as Record<string, unknown>;
  const text = (v: unknown) => (typeof v === 'string' ? v : undefined);
  return { eventId: text(data.event_id), name: text(event.name), venue: text(event.venue), city: text(event.city), startsAt: text(event.starts_at), currency: text(data.currency) };
}

/**
 * The DOM the event page would render from these two arm answers: the same sections in the
 * same order, every value through the page's own conversions, an arm that throws half-way
 * leaving what it drew, so parsePf01 judges a poll over HTTP exactly as it judges the page.
 */
export function domFromArms(v2: ArmData, v1: ArmData): Pf01Dom {
  const dom = new DomBuilder();
  let v2ok = false;
  let v1ok = false;
  try {
    if (v2) {
      renderSeats(dom, v2);
      v2ok = true;
    }
  } catch {
    /* drawn as unavailable, as the page does */
  }
  try {
    if (v1) {
      renderAvailability(dom, v1);
      v1ok = true;
    }
  } catch {
    /* drawn as unavailable, as the page does */
  }
  const source = v2ok ? v2 : v1ok ? v1 : null;
  return {
    status: 200,
    hasSeatMap: true,
    state: 'ready',
    arms: { v1: v1ok ? 'ok' : 'error', v2: v2ok ? 'ok' : 'error' },
    event: source ? eventAttrs(source) : null,
    sections: dom.sections,
  };
}

/** How one arm's request ended. */
type ArmOutcome =
  | { kind: 'ok'; data: Record<string, unknown> }
  | { kind: 'failed'; failure: ScrapeFailure; unreadable: boolean }
  | { kind: 'refused' }
  | { kind: 'not_found'; url: string; status: number };
/** An arm as the inventory is read from it: its data, or unavailable. */
type ArmRead = Extract<ArmOutcome, { kind: 'ok' | 'failed' }>;

/** The data arms' answer to a request without a valid token (docs/simulator.md). */
function isChallenge(page: Pick<FetchedPage, 'status' | 'body'>): boolean {
  if (page.status !== 403) return false;
  try {
    return (JSON.parse(page.body) as { error?: unknown }).error === 'challenge_required';
  } catch {
    return false;
  }
}

async function fetchArm(http: ScrapeFetcher, url: string, clearance: Pf01Clearance): Promise<ArmOutcome> {
  let page: FetchedPage & { data: unknown };
  try {
    // The challenge page (bound: PF01_BLOCK_PAGE) is checked on the 403s read here too: Cloudflare's answers 403.
    page = await http.json(url, { headers: clearanceHeaders(clearance), readStatuses: [403] });
  } catch (err) {
    // 5xx, the network, a time-out: the page would draw this arm as unavailable. A block is not
    // an arm's trouble but the platform's word on us, and is thrown as it is.
    if (err instanceof ScrapeFailure && err.kind !== 'blocked') return { kind: 'failed', failure: err, unreadable: false };
    throw err;
  }
  // The event is gone only if the other arm says so too (scrapeWithClearance).
  if (page.status === 404 || page.status === 410) return { kind: 'not_found', url, status: page.status };
  if (isChallenge(page)) return { kind: 'refused' };
  const refusal = failureForStatus(url, page.status, retryAfterOf(page), Date.now());
  if (refusal) throw refusal;
  if (page.status >= 400) return { kind: 'failed', failure: new ScrapeFailure('upstream', `${url} answered ${page.status}`), unreadable: false };
  const data = page.data;
  // As the page's load(): no JSON or no sections list and the arm is unavailable.
  if (typeof data !== 'object' || data === null || !Array.isArray((data as { sections?: unknown }).sections)) {
    return { kind: 'failed', failure: read.malformed(`${url} did not answer JSON with a sections list`), unreadable: true };
  }
  return { kind: 'ok', data: data as Record<string, unknown> };
}

function retryAfterOf(page: FetchedPage): string | undefined {
  const value = page.headers?.['retry-after'];
  return Array.isArray(value) ? value[0] : value;
}

/** Both arms over HTTP with one clearance; 'refused' when the platform did not take its token. */
async function scrapeWithClearance(ref: EventRef, baseUrl: string, http: ScrapeFetcher, browser: ScrapeBrowser, clearance: Pf01Clearance, signal: AbortSignal | undefined): Promise<ScrapeData | 'refused'> {
  const urls = eventUrls(baseUrl, ref);
  const [v2, v1] = await Promise.all([fetchArm(http, urls.v2, clearance), fetchArm(http, urls.v1, clearance)]);
  if (v2.kind === 'refused' || v1.kind === 'refused') return 'refused';
  // Both arms gone: the event page must say so too (issue 38), one page load on this rare path.
  if (v2.kind === 'not_found' && v1.kind === 'not_found') throw await armsGone(urls, browser, v2.status, v1.status);
  // One arm's 404 beside the other's answer is that arm's trouble, not the event's end: it is read
  // as unavailable, as the page draws it, and a not-found never rests on one arm (issue 38).
  return readArms(ref, armRead(v2), armRead(v1), signal);
}

/**
 * The verdict when both arms answered 404 or 410 (`v2`, `v1`): the event page asked at the URL
 * the browser visits, through the scrape's browser (its exit and identity). Gone too: `not_found`.
 * A block or a time-out is thrown as it is; any other answer (the page, a 5xx) is the page and the
 * arms disagreeing, `upstream`. Not over the clearances' fetcher: the page sets its own session
 * cookie (`pf01_sid`), which the fetcher would keep in the identity's jar and send, over the
 * clearance's own, with every later poll of that exit, whose tokens would then all be refused
 * (test/scrapers/pf_01-not-found.test.ts). A page load costs more than a request, but only here,
 * at most once per back-off step of a target whose arms are both gone.
 */
async function armsGone(urls: EventUrls, browser: ScrapeBrowser, v2: number, v1: number): Promise<ScrapeFailure> {
  const arms = `its data arms answered ${v2} and ${v1}`;
  let code: number;
  try {
    code = await browser.withPage(urls.page, status);
  } catch (err) {
    if (err instanceof ScrapeFailure && err.kind === 'upstream') return new ScrapeFailure('upstream', `pf_01: ${arms} but the event page failed (${err.message}): not a not-found`, { cause: err });
    throw err;
  }
  if (isGone(code)) return new ScrapeFailure('not_found', `pf_01: no such event in this region (${arms}, the event page ${code})`);
  return new ScrapeFailure('upstream', `pf_01: ${arms} but the event page answered ${code}: not a not-found`);
}

/** An arm that answered 404 while the other did not: unavailable, as a failed arm. */
function armRead(arm: Exclude<ArmOutcome, { kind: 'refused' }>): ArmRead {
  if (arm.kind !== 'not_found') return arm;
  return { kind: 'failed', failure: new ScrapeFailure('upstream', `${arm.url} answered ${arm.status} while the other data arm did not`), unreadable: false };
}

/** The inventory from the arms that answered; both unavailable is a failure, as on the page. */
function readArms(ref: EventRef, v2: ArmRead, v1: ArmRead, signal: AbortSignal | undefined): ScrapeData {
  if (v2.kind === 'failed' && v1.kind === 'failed') {
    if (signal?.aborted) throw v2.failure;
    if (v2.unreadable || v1.unreadable) throw read.malformed(`both data arms answered something other than their data (${v2.failure.message}; ${v1.failure.message})`);
    if (v2.failure.kind === 'attempt_timeout' && v1.failure.kind === 'attempt_timeout') throw v2.failure;
    throw new ScrapeFailure('upstream', `pf_01: both data arms failed (v2 seats: ${v2.failure.message}; v1 resale/general admission: ${v1.failure.message})`);
  }
  return parsePf01(ref, domFromArms(v2.kind === 'ok' ? v2.data : null, v1.kind === 'ok' ? v1.data : null));
}

/** One data arm as a script of the page got it (askArmsInPage): status 0 when the request itself failed. */
interface PageArmAnswer {
  url: string;
  status: number;
  headers: Record<string, string>;
  body: string;
  error?: string;
}

/**
 * Runs in the page: both arms fetched by a script of the page, as the event page's own script
 * does (Chromium's network stack, the context's cookies, the page's exit), with `headers` on top.
 * No named inner functions (tsx's keepNames helper does not exist there).
 */
function askArmsInPage(arg: { urls: string[]; headers: Record<string, string> }): Promise<PageArmAnswer[]> {
  return Promise.all(
    arg.urls.map((url) =>
      fetch(url, { headers: arg.headers, credentials: 'same-origin', cache: 'no-store' }).then(
        (res) => res.text().then((body) => ({ url, status: res.status, headers: Object.fromEntries(Array.from(res.headers.entries())), body: body.slice(0, 16_384) })),
        (err: unknown) => ({ url, status: 0, headers: {}, body: '', error: String(err) }),
      ),
    ),
  );
}

/**
 * Headers of a recorded data request that a page's script cannot set (the Fetch standard's
 * forbidden names) or that Chromium sends by itself on every request: left to the browser.
 */
const BROWSER_OWN = new Set(['user-agent', 'referer', 'origin', 'priority', 'accept-language', 'accept-charset', 'accept-encoding', 'access-control-request-headers', 'access-control-request-method', 'connection', 'content-length', 'cookie', 'cookie2', 'date', 'dnt', 'expect', 'host', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'via']);

/**
 * The two data arms of an event whose page answered 404, asked from the page's own browser context:
 * the 404 page carries no challenge, so a session is first obtained in the same page as a clearance
 * is made (the front page, whose script answers its challenge and asks its data with the token:
 * clearanceInPage), then a script of the page asks both arms with the headers the platform's
 * script sent (the token among them, or in a cookie it set) and the context's cookies.
 */
async function askArmsFromPage(page: Page, urls: EventUrls): Promise<[PageArmAnswer, PageArmAnswer]> {
  const clearance = await clearanceInPage(page, urls.baseUrl);
  const headers: Record<string, string> = {};
  for (const [name, value] of clearance.headers) {
    if (!name.startsWith('sec-') && !name.startsWith('proxy-') && !BROWSER_OWN.has(name)) headers[name] = value;
  }
  const [v2, v1] = await page.evaluate(askArmsInPage, { urls: [urls.v2, urls.v1], headers });
  return [v2!, v1!];
}

const isGone = (status: number): boolean => status === 404 || status === 410;

/**
 * The verdict on an event page that answered `code` (404 or 410), given what its arms answered
 * from the page: `not_found` only when both are gone too; a block is thrown as such; anything
 * else is the page and the arms disagreeing, `upstream` (it says nothing about the event).
 */
function pageGone(code: number, [v2, v1]: [PageArmAnswer, PageArmAnswer]): ScrapeFailure {
  for (const arm of [v2, v1]) {
    const wall = PF01_BLOCK_PAGE(arm);
    if (wall) throw blockPageFailure(arm.url, wall, arm.headers['retry-after'], Date.now());
    // A token the platform's own script obtained a moment ago, refused: the platform refusing us.
    if (isChallenge(arm)) throw blockedFailure('pf_01: its data arms, with a session made just now in the page,', 403, null);
    if (isBlockedStatus(arm.status)) throw blockedFailure(arm.url, arm.status, parseRetryAfter(arm.headers['retry-after'], Date.now()));
  }
  if (isGone(v2.status) && isGone(v1.status)) {
    return new ScrapeFailure('not_found', `pf_01: no such event in this region (the event page answered ${code}, its data arms ${v2.status} and ${v1.status})`);
  }
  const said = (arm: PageArmAnswer, name: string) => `${name} ${arm.status === 0 ? `could not be asked (${arm.error})` : `answered ${arm.status}`}`;
  return new ScrapeFailure('upstream', `pf_01: the event page answered ${code} but its data arms did not agree (${said(v2, 'v2 seats')}; ${said(v1, 'v1 resale/general admission')}): not a not-found`);
}

/** pf_01 is behind Cloudflare's managed challenge (block-pages.ts). */
export const blockPage = PF01_BLOCK_PAGE;

/** The pf_01 clearance a pool lent (the scrapers give pf_01 only pf_01's pools: anything else is a wiring bug). */
function clearanceOf(lease: ClearanceLease<unknown>): Pf01Clearance {
  if (!isPf01Clearance(lease.clearance)) throw new Error('pf_01 was given a clearance that is not one of pf_01-clearance.ts');
  return lease.clearance;
}

export function createPf01({ baseUrl }: AdapterDeps): PlatformAdapter {
  const viaBrowser = async (ref: EventRef, browser: ScrapeBrowser): Promise<ScrapeData> => {
    const urls = eventUrls(baseUrl, ref);
    return parsePf01(ref, await browser.withPage(urls.page, (page) => loadDom(page, urls)));
  };
  return {
    platform: 'pf_01',
    async scrape(ref, { signal, browser, clearances }) {
      if (!clearances) return viaBrowser(ref, browser);
      // Clearances made through the exit this scrape leaves from, and their fetcher.
      const { pool, http, use } = clearances;
      const first = use === 'always' ? await pool.acquire(signal) : pool.ready();
      if (!first) return viaBrowser(ref, browser);
      const answer = await scrapeWithClearance(ref, baseUrl, http, browser, clearanceOf(first), signal);
      if (answer !== 'refused') return answer;
      // Refused before its time (revoked, or the platform's rules changed): the clearance is
      // renewed once, and every poll that meets the same refusal waits for that one renewal.
      pool.refused(first);
      if (use === 'when-warm') return viaBrowser(ref, browser);
      const refusedAt = pool.now();
      // The pool's other clearances may have been refused too (a revocation takes them all): each
      // is reported and renewed in turn, until one made after the first refusal answers or is
      // refused as well, which is the platform refusing what its own challenge just gave.
      for (let tries = 0; tries <= pool.stats().size; tries++) {
        const next = await pool.acquire(signal);
        const again = await scrapeWithClearance(ref, baseUrl, http, browser, clearanceOf(next), signal);
        if (again !== 'refused') return again;
        pool.refused(next);
        if (next.madeAt >= refusedAt) break;
      }
      throw blockedFailure('pf_01: its data arms, with a clearance made just now,', 403, null);
    },
  };
}
