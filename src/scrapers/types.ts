// What every platform adapter returns, and how a scrape fails. The shapes below are the
// documented entries of spec 2.5's `sections` and `event_info` (README, "Live Availability"),
// so the API, the watchlist monitors and the tests all read one definition.
import type { CheerioAPI } from 'cheerio';
import type { Page } from 'playwright-core';
import type { EventRef } from '../platform/event-ref.ts';
import type { PlatformKey } from '../platform/registry.ts';

export type TicketType = 'standard' | 'resale' | 'platinum' | 'general_admission';

/** Attributes the watchlist filters on (no_restricted_view, no_accessibility, no_presale). */
export interface TicketFlags {
  ticket_type: TicketType;
  restricted_view: boolean;
  accessible: boolean;
  presale: boolean;
}

/** One purchasable offer of an OfferSections platform: `quantity` tickets at `price` each. */
export interface Offer extends TicketFlags {
  id: string;
  price: number;
  quantity: number;
}

/** One seat of a SeatMapSections platform. */
export interface Seat extends TicketFlags {
  row: string;
  seat: string;
  price: number;
}

interface SectionSummary {
  name: string;
  /** ISO 4217 code, or null when the page does not say. */
  currency: string | null;
  /** Lowest and highest price on offer; null when nothing is on sale. */
  min_price: number | null;
  max_price: number | null;
  /** Tickets available in this section. */
  stock: number;
}

export interface OfferSection extends SectionSummary {
  offers: Offer[];
}

export interface SeatMapSection extends SectionSummary {
  /** Available seats; empty when seat-level detail is missing (pf_01 degraded `v2`). */
  seats: Seat[];
  /** Tickets per ticket type; counts of a missing arm are absent (pf_01 degraded `v1`). */
  by_ticket_type: Partial<Record<TicketType, number>>;
}

export interface EventInfo {
  name: string | null;
  venue: string | null;
  city: string | null;
  country: string | null;
  /** RFC 3339 start time as the platform states it. */
  starts_at: string | null;
  currency: string | null;
  /** The platform's public page for the event. */
  url: string | null;
}

export type Degraded = 'v1' | 'v2';

/** What an adapter extracts: spec 2.5 minus the fields the service fills in itself. */
export type ScrapeData =
  | { sections_type: 'OfferSections'; sections: Record<string, OfferSection>; event_info: EventInfo; degraded: null }
  | { sections_type: 'SeatMapSections'; sections: Record<string, SeatMapSection>; event_info: EventInfo; degraded: Degraded | null };

/**
 * Why a scrape failed. `retryable` kinds are transient (network, 5xx, a crashed browser, one
 * attempt running out of time); the others are answered at once: the event does not exist,
 * the input cannot be scraped, or the page cannot be understood.
 */
export type ScrapeFailureKind = 'not_found' | 'unsupported' | 'malformed' | 'upstream' | 'attempt_timeout';

export const RETRYABLE_KINDS: ReadonlySet<ScrapeFailureKind> = new Set(['upstream', 'attempt_timeout']);

export class ScrapeFailure extends Error {
  constructor(
    readonly kind: ScrapeFailureKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ScrapeFailure';
  }
  get retryable(): boolean {
    return RETRYABLE_KINDS.has(this.kind);
  }
}

export interface ScrapeOptions {
  /** Aborts the scrape (the attempt ran out of time, or the caller went away). */
  signal?: AbortSignal;
}

/** One platform: turns an EventRef into ScrapeData, or throws a ScrapeFailure. */
export interface PlatformAdapter {
  readonly platform: PlatformKey;
  scrape(ref: EventRef, options?: ScrapeOptions): Promise<ScrapeData>;
}

/** A page or API answer below 500 (a 404 is the adapter's to interpret). */
export interface FetchedPage {
  status: number;
  url: string;
  body: string;
}

export interface FetchInit {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

/**
 * HTTP fetching through crawlee (http-pages.ts). A network error, a 5xx or a time-out throws a
 * ScrapeFailure (`upstream` or `attempt_timeout`); anything else comes back as a page.
 */
export interface PageFetcher {
  /** An HTML page, parsed by crawlee's Cheerio crawling. */
  html(url: string, init?: FetchInit): Promise<FetchedPage & { $: CheerioAPI }>;
  /** A JSON API answer; `data` is undefined when the body is not JSON (the adapter decides). */
  json(url: string, init?: FetchInit): Promise<FetchedPage & { data: unknown }>;
}

/** Pages of the warm browser (browser-pages.ts), for platforms that render client-side. */
export interface BrowserSession {
  withPage<T>(url: string, use: (page: Page) => Promise<T>, options?: { signal?: AbortSignal }): Promise<T>;
}

/** What an adapter factory is given: its platform's base URL and the shared fetchers. */
export interface AdapterDeps {
  /** e.g. http://127.0.0.1:8090/pf_03 (no trailing slash); every fetch stays below it. */
  baseUrl: string;
  http: PageFetcher;
  browser: BrowserSession;
}
