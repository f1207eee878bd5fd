// What every platform adapter returns, how a scrape fails, and what adapters are given to fetch
// with. The entry shapes of spec 2.5's `sections` and `event_info` are defined once, as zod
// schemas in schema.ts; the types here are inferred from them.
import type { CheerioAPI } from 'cheerio';
import type { z } from 'zod';
import type { Page } from 'playwright-core';
import type { EventRef } from '../platform/event-ref.ts';
import type { PlatformKey } from '../platform/registry.ts';
import type { BlockPageRule } from './block-pages.ts';
import type { ScrapeSession } from './egress/scrape-session.ts';
import type { degradedSchema, eventInfoSchema, offerSchema, offerSectionSchema, seatMapSectionSchema, seatSchema, ticketTypeSchema } from './schema.ts';

export type TicketType = z.infer<typeof ticketTypeSchema>;

/** Attributes the watchlist filters on (no_restricted_view, no_accessibility, no_presale). */
export type TicketFlags = Pick<Offer, 'ticket_type' | 'restricted_view' | 'accessible' | 'presale'>;

/** One purchasable offer of an OfferSections platform: `quantity` tickets at `price` each. */
export type Offer = z.infer<typeof offerSchema>;

/** One seat of a SeatMapSections platform. */
export type Seat = z.infer<typeof seatSchema>;

export type OfferSection = z.infer<typeof offerSectionSchema>;
export type SeatMapSection = z.infer<typeof seatMapSectionSchema>;
export type EventInfo = z.infer<typeof eventInfoSchema>;

export type Degraded = z.infer<typeof degradedSchema>;

/** What an adapter extracts: spec 2.5 minus the fields the service fills in itself. */
export type ScrapeData =
  | { sections_type: 'OfferSections'; sections: Record<string, OfferSection>; event_info: EventInfo; degraded: null }
  | { sections_type: 'SeatMapSections'; sections: Record<string, SeatMapSection>; event_info: EventInfo; degraded: Degraded | null };

/**
 * Why a scrape failed. `retryable` kinds are transient (network, 5xx, a crashed browser, one
 * attempt running out of time); the others are answered at once: the event does not exist,
 * the input cannot be scraped, or the page cannot be understood. `blocked` (the platform
 * answered 429 or 403) is not retryable either: the platform asked us to back off, and an
 * immediate retry would only hammer it; whoever polls it waits out `retryAfterMs`.
 * `browser_missing` (no Chromium at CHROMIUM_PATH) is not retryable: no retry installs it.
 */
export type ScrapeFailureKind = 'not_found' | 'unsupported' | 'malformed' | 'upstream' | 'attempt_timeout' | 'blocked' | 'browser_missing';

export const RETRYABLE_KINDS: ReadonlySet<ScrapeFailureKind> = new Set(['upstream', 'attempt_timeout']);

export class ScrapeFailure extends Error {
  /**
   * For `blocked`: how long the platform asked us to wait, in ms from the answer (its
   * Retry-After, see retry-after.ts), or null when it did not say. Null for every other kind.
   */
  readonly retryAfterMs: number | null;
  /**
   * For `blocked`: the platform itself refused the request (a 403, a 429, its challenge page),
   * so the address it came from is blocked, not only this scrape. False for a block we infer
   * ourselves (no clearance could be made in the browser).
   */
  readonly refusedByPlatform: boolean;
  /**
   * For `upstream`: the proxy the request went through failed (unreachable, or it refused our
   * credentials), not the platform: the exit is set aside as for a block.
   */
  readonly proxyFailed: boolean;
  /**
   * The platform's HTTP status when the failure is its answer (a 5xx, a 429 or 403), else null:
   * what the customer is told it answered (failure-detail.ts), without the URL around it.
   */
  readonly status: number | null;
  /**
   * What the customer may be told, when whoever raised the failure knows better than its kind's
   * generic sentence (failure-detail.ts); null: that sentence. The message is the operators':
   * it may name proxies, URLs and exits, and only logs see it. A detail must name no proxy,
   * exit, address or credential; failure-detail.ts checks it again all the same.
   */
  readonly detail: string | null;

  constructor(
    readonly kind: ScrapeFailureKind,
    message: string,
    options?: { cause?: unknown; retryAfterMs?: number | null; refusedByPlatform?: boolean; proxyFailed?: boolean; status?: number | null; detail?: string | null },
  ) {
    super(message, options);
    this.name = 'ScrapeFailure';
    this.retryAfterMs = options?.retryAfterMs ?? null;
    this.refusedByPlatform = options?.refusedByPlatform ?? false;
    this.proxyFailed = options?.proxyFailed ?? false;
    this.status = options?.status ?? null;
    this.detail = options?.detail ?? null;
  }

  /** The exit the request left through is at fault (a block, or its proxy failed), not the target. */
  get exitAtFault(): boolean {
    return (this.kind === 'blocked' && this.refusedByPlatform) || this.proxyFailed;
  }
  get retryable(): boolean {
    return RETRYABLE_KINDS.has(this.kind);
  }
}

/** Answers by which a platform tells us to back off: rate limited (429) or refused (403). */
export function isBlockedStatus(status: number): boolean {
  return status === 429 || status === 403;
}

/** The `blocked` failure for `where` (a URL, or "pf_NN: the event page") answering `status`. */
export function blockedFailure(where: string, status: number, retryAfterMs: number | null): ScrapeFailure {
  const wait = retryAfterMs === null ? 'without a Retry-After' : `asking us to wait ${Math.ceil(retryAfterMs / 1000)} s`;
  return new ScrapeFailure('blocked', `${where} answered ${status}, ${wait}`, { retryAfterMs, refusedByPlatform: true, status });
}

/** What a caller of the scrapers (index.ts) gives one scrape: never seen by an adapter. */
export interface ScrapeOptions {
  /** Aborts the scrape (the attempt ran out of time, or the caller went away). */
  signal?: AbortSignal;
  /**
   * The session every request of the scrape is made with (egress/scrape-session.ts): its exit,
   * headers and cookies. The scrapers pick one when the caller does not (a poller hands the one
   * of the exit whose turn it is), bind it into the fetchers the adapter is given (ScrapeVia) and
   * tell its pool how it went.
   */
  session?: ScrapeSession;
}

/** One platform: turns an EventRef into ScrapeData, or throws a ScrapeFailure. */
export interface PlatformAdapter {
  readonly platform: PlatformKey;
  /** `via`: this scrape's fetchers, the only way the adapter reaches the network. */
  scrape(ref: EventRef, via: ScrapeVia): Promise<ScrapeData>;
}

/** A page or API answer below 500, other than 429 and 403 (a 404 is the adapter's to interpret). */
export interface FetchedPage {
  status: number;
  url: string;
  body: string;
  /** The answer's headers (lower-case names). */
  headers?: Readonly<Record<string, string | string[] | undefined>>;
}

/**
 * What the fetcher itself (http-fetcher.ts) takes. Adapters never see it: they ask with
 * ScrapeFetchInit, the rest bound for them (scrape-via.ts).
 */
export interface FetchInit {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  /**
   * Statuses the caller reads itself instead of having them thrown as failures (pf_01 tells a
   * refused clearance from a block by a 403's body).
   */
  readStatuses?: readonly number[];
  /**
   * The scrape's session: the request leaves through its exit with its headers and cookies. None:
   * the platform's default client (http-fetcher.ts), with its own headers and cookies.
   */
  session?: ScrapeSession;
  /** The platform's challenge page (block-pages.ts): an answer it matches is a `blocked` failure. */
  blockPage?: BlockPageRule;
}

/**
 * The process's HTTP fetcher (http-fetcher.ts: a browser's requests on the wire). Only the
 * scrapers hold one; adapters get it bound to their scrape (ScrapeFetcher). A network error, a 5xx or a time-out throws a
 * ScrapeFailure (`upstream` or `attempt_timeout`), a 429 or 403 one of kind `blocked` (with the
 * answer's Retry-After); anything else comes back as a page.
 */
export interface PageFetcher {
  /** An HTML page, parsed with Cheerio over htmlparser2. */
  html(url: string, init?: FetchInit): Promise<FetchedPage & { $: CheerioAPI }>;
  /** A JSON API answer; `data` is undefined when the body is not JSON (the adapter decides). */
  json(url: string, init?: FetchInit): Promise<FetchedPage & { data: unknown }>;
}

/**
 * Opens pages of the warm browser (browser-pages.ts), for platforms that render client-side. Held by
 * the scrapers and pf_01's clearance maker; adapters get it bound to their scrape (ScrapeBrowser).
 */
export interface PageOpener {
  /**
   * `session`: the scrape session; the page goes through its exit's proxy as its browser (user agent, language).
   * `blockPage`: the platform's challenge page; a main document it matches is a `blocked` failure.
   * `watch`: called with the page before it navigates (to listen to its requests: pf_01's clearances
   * record the page's own data requests); what it returns is called once the visit is over.
   * `isolated`: the visit starts as a new browser, without the cookies the client's earlier visits
   * were given, and leaves none for its later ones (pf_01's clearances: browser-profiles.ts).
   */
  withPage<T>(
    url: string,
    use: (page: Page) => Promise<T>,
    options?: { signal?: AbortSignal; session?: ScrapeSession; blockPage?: BlockPageRule; watch?: (page: Page) => () => void; isolated?: boolean },
  ): Promise<T>;
}

/**
 * What an adapter may ask of one fetch. Where the request leaves from (the scrape's session), when
 * it stops (the scrape's signal) and which challenge page it is checked against (the platform's)
 * were decided for the whole scrape and bound into the fetcher (scrape-via.ts). They are `never`
 * here, not merely absent, so that no adapter can set them, nor pass on a FetchInit that does:
 * an adapter that tried to choose or drop its session would not compile.
 */
export type ScrapeFetchInit = Pick<FetchInit, 'method' | 'headers' | 'body' | 'readStatuses'> & {
  session?: never;
  signal?: never;
  blockPage?: never;
};

/** A PageFetcher bound to one scrape: every request goes out as that scrape's (ScrapeFetchInit). */
export interface ScrapeFetcher {
  html(url: string, init?: ScrapeFetchInit): Promise<FetchedPage & { $: CheerioAPI }>;
  json(url: string, init?: ScrapeFetchInit): Promise<FetchedPage & { data: unknown }>;
}

/** The warm browser bound to one scrape: each page is opened through its session, checked against the platform's challenge page. */
export interface ScrapeBrowser {
  withPage<T>(url: string, use: (page: Page) => Promise<T>): Promise<T>;
}

// Clearances (docs/scraping.md, "Words used in src/scrapers"): what a real browser visit leaves
// behind that lets plain HTTP requests through, made and renewed by clearance-pool.ts. The pool's
// shape lives here, beside what holds it, so that these generic types import no implementation
// and no platform's module.

/** A clearance handed to one request; give it back to refused() if the platform refuses it. */
export interface ClearanceLease<S> {
  clearance: S;
  slot: number;
  generation: number;
  /** When the clearance was made (the pool's clock). */
  madeAt: number;
}

export interface ClearancePoolStats {
  size: number;
  /** Clearances usable now. */
  ready: number;
  made: number;
  /** Made to replace a clearance (ahead of its expiry, after a refusal, or once it expired). */
  renewed: number;
  /** Clearances the platform refused before their time. */
  refused: number;
  /** Makes that failed. */
  failed: number;
  /** Requests served by a clearance (the leases handed out). */
  polls: number;
  /** Why the last make failed, while the pool is held back by it (null once a make succeeds). */
  lastError: { kind: string; message: string; at: string; retry_at: string } | null;
}

export interface ClearancePool<S> {
  /** A usable clearance, making or renewing one if need be; throws the make's ScrapeFailure. */
  acquire(signal?: AbortSignal): Promise<ClearanceLease<S>>;
  /** A usable clearance if one is ready now, never waiting for one (on-demand scrapes); starts one if none is. */
  ready(): ClearanceLease<S> | null;
  /** The platform refused this clearance: it is dropped and renewed once, whoever reports it. */
  refused(lease: ClearanceLease<S>): void;
  stats(): ClearancePoolStats;
  /** The pool's clock (epoch ms), to compare with a lease's madeAt. */
  now(): number;
  close(): Promise<void>;
}

/**
 * The clearances one scrape may use (pf_01's, pf_01-clearance.ts): those made through
 * the scrape's own exit, the fetcher their requests go through (bound like ScrapeVia's `http`),
 * and how this set of adapters uses them. What a clearance holds is its platform's business: the
 * platform's adapter knows it (pf_01.ts checks it), these generic types do not.
 */
export interface ScrapeClearances {
  pool: ClearancePool<unknown>;
  http: ScrapeFetcher;
  use: ClearanceUse;
}

/** One platform's clearances as the scrapers hold them: a pool per exit, and their fetcher. */
export interface ClearancesByExit {
  /** The pool a scrape made with scrape session `session` uses (its exit's). */
  poolFor(session: ScrapeSession | undefined): ClearancePool<unknown>;
  /** The fetcher the clearances' requests go through, bound to each scrape (scrape-via.ts). */
  http: PageFetcher;
}

/**
 * How one scrape reaches the network: fetchers bound to its session (none without exit pools),
 * its signal and its platform's challenge page, made once per scrape (scrape-via.ts, called by
 * index.ts). An adapter has no other way out, so none can send from an address it was not given.
 */
export interface ScrapeVia {
  /** Aborts the scrape; bound into every fetch already, given for the waits an adapter makes itself. */
  readonly signal: AbortSignal | undefined;
  readonly http: ScrapeFetcher;
  readonly browser: ScrapeBrowser;
  /** Present for the platform whose data endpoints need a clearance made in the browser (pf_01), when the process makes them. */
  readonly clearances?: ScrapeClearances;
}

/** What an adapter factory is given, once: where its platform is. Its fetchers come per scrape (ScrapeVia). */
export interface AdapterDeps {
  /** e.g. http://127.0.0.1:8090/pf_03 (no trailing slash); every fetch stays below it. */
  baseUrl: string;
}

/**
 * How a set of adapters uses the clearances: `always` (the monitors' polls: make one if need be,
 * and back off as for a block when none can be made) or `when-warm` (on-demand scrapes: a ready
 * clearance if there is one, the browser otherwise).
 */
export type ClearanceUse = 'always' | 'when-warm';

/**
 * The clearances a set of scrapers shares, and how it uses them; each scrape is given
 * those of its own exit (ScrapeVia.clearances).
 */
export interface PlatformClearances {
  pf01: ClearancesByExit;
  use: ClearanceUse;
}
