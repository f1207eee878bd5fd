// Test harness for the platform adapters: one real simulator (empty) and one real crawlee
// fetcher, every adapter of pf_02..pf_11 built on them, valid event ids per platform, and
// inventory set through the simulator's control API, as a test or a demo would set it. An
// adapter is given its fetchers per scrape, bound (scrape-via.ts); withFetchers binds them as
// createScrapers does without exit pools, so a test can hand an adapter a fetcher of its own.
import { expect } from 'vitest';
import { parseEventRef, type EventRef } from '../../src/platform/event-ref.ts';
import { PLATFORMS, type PlatformKey } from '../../src/platform/registry.ts';
import { createHttpFetcher, type HttpFetcher } from '../../src/scrapers/http-fetcher.ts';
import { ADAPTER_FACTORIES, BLOCK_PAGES } from '../../src/scrapers/platforms/index.ts';
import { scrapeVia, type ScrapeFetchers } from '../../src/scrapers/scrape-via.ts';
import { ScrapeFailure, type PageOpener, type OfferSection, type PageFetcher, type PlatformAdapter, type ScrapeData, type ScrapeFailureKind, type ScrapeOptions } from '../../src/scrapers/types.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import type { SimSection } from '../../src/simulator/state.ts';

export const HTTP_PLATFORMS = ['pf_02', 'pf_03', 'pf_04', 'pf_05', 'pf_06', 'pf_07', 'pf_08', 'pf_09', 'pf_10', 'pf_11'] as const satisfies readonly PlatformKey[];
export type HttpPlatform = (typeof HTTP_PLATFORMS)[number];

const PF08_HOSTS: Record<string, string> = {
  au: 'pf08.example.com.au',
  nz: 'pf08.example.co.nz',
  sg: 'pf08.example.sg',
  my: 'pf08.example.com.my',
  uk: 'pf08.example.co.uk',
  ph: 'pf08.example.com.ph',
};

/** A region each platform accepts, and a second one (or a code the simulator stores but the platform never asks for). */
export function regionsOf(platform: HttpPlatform): { home: string; other: string } {
  const regions: readonly string[] | null = PLATFORMS[platform].regions;
  if (!regions) return { home: 'us', other: 'ca' };
  return { home: regions[0]!, other: regions[1] ?? 'xx' };
}

/** The n-th valid event key of a platform (each platform has its own id shape). */
export function keyOf(platform: HttpPlatform, n: number): string {
  switch (platform) {
    case 'pf_02':
      return `ev-${n}`;
    case 'pf_03':
      return `show-${n}`;
    case 'pf_04':
      return String(100_000 + n);
    case 'pf_05':
      return String(7_000_000 + n);
    case 'pf_06':
      return `K${String(n).padStart(7, '0')}`;
    case 'pf_07':
      return `arena-tour-${100_000 + n}`;
    case 'pf_08':
      return `EV-${1000 + n}`;
    case 'pf_09':
      return String(200_000 + n);
    case 'pf_10':
      return `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
    case 'pf_11':
      return String(70_000 + n);
  }
}

/** The event id a client would send for that key: a bare id or the full public URL. */
export function eventIdOf(platform: HttpPlatform, key: string, region: string): string {
  switch (platform) {
    case 'pf_02':
      return `https://www.pf02.example/${region}/event/${key}`;
    case 'pf_03':
      return `https://pf03.example/e/${key}`;
    case 'pf_04':
      return `https://www.pf04.example/${region}/tickets/${key}`;
    case 'pf_07':
      return `https://www.pf07.example/event/${key}`;
    case 'pf_08':
      return `https://${PF08_HOSTS[region]}/event/${key}`;
    case 'pf_11':
      return `https://tickets.pf11.example/event/${key}`;
    default:
      return key;
  }
}

export function refOf(platform: HttpPlatform, eventId: string, region: string): EventRef {
  const parsed = parseEventRef(platform, eventId, region);
  if (!parsed.ok) throw new Error(`test event id does not parse: ${parsed.message}`);
  return parsed.ref;
}

const noBrowser: PageOpener = {
  withPage: () => Promise.reject(new Error('no browser in HTTP adapter tests')),
};

/** An adapter with its fetchers: each scrape is given them bound to its session (if any) and signal. */
export interface BoundAdapter {
  readonly platform: PlatformAdapter['platform'];
  scrape(ref: EventRef, options?: ScrapeOptions): Promise<ScrapeData>;
}

export function withFetchers(adapter: PlatformAdapter, fetchers: ScrapeFetchers): BoundAdapter {
  return {
    platform: adapter.platform,
    scrape: (ref, options = {}) => adapter.scrape(ref, scrapeVia(fetchers, { session: options.session, signal: options.signal, blockPage: BLOCK_PAGES[adapter.platform] })),
  };
}

export interface Harness {
  sim: Simulator;
  http: HttpFetcher;
  adapter(platform: HttpPlatform, http?: PageFetcher): BoundAdapter;
  /** Sets an event through the control API; returns the ref to scrape it with. */
  put(platform: HttpPlatform, n: number, body: Record<string, unknown>, options?: { scrapeRegion?: string }): Promise<EventRef>;
  scrape(ref: EventRef, signal?: AbortSignal): Promise<ScrapeData>;
  close(): Promise<void>;
}

export async function startHarness(options: { timeoutMs?: number; concurrency?: number } = {}): Promise<Harness> {
  const sim = await startSimulator({ empty: true });
  const http = createHttpFetcher({ concurrency: options.concurrency ?? 16, timeoutMs: options.timeoutMs ?? 2_000 });
  await warmUp(http, `${sim.url}/_sim/health`);
  const adapter = (platform: HttpPlatform, fetcher: PageFetcher = http) => withFetchers(ADAPTER_FACTORIES[platform]({ baseUrl: sim.baseUrls[platform]! }), { http: fetcher, browser: noBrowser });
  const adapters = new Map(HTTP_PLATFORMS.map((p) => [p, adapter(p)]));
  return {
    sim,
    http,
    adapter,
    async put(platform, n, body, putOptions = {}) {
      const key = keyOf(platform, n);
      const region = String(body.region ?? regionsOf(platform).home);
      const scrapeRegion = putOptions.scrapeRegion ?? region;
      const eventId = eventIdOf(platform, key, scrapeRegion);
      const res = await fetch(`${sim.url}/_sim/${platform}/events/${encodeURIComponent(eventId)}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ region, ...body }),
      });
      if (res.status !== 200) throw new Error(`control API PUT answered ${res.status}: ${await res.text()} for ${JSON.stringify({ region, ...body })}`);
      return refOf(platform, eventId, scrapeRegion);
    },
    scrape: (ref, signal) => adapters.get(ref.platform as HttpPlatform)!.scrape(ref, { signal }),
    async close() {
      http.close();
      await sim.close();
    },
  };
}

/**
 * Sends one request of each kind through a fetcher, so that the one-off set-up (loading wreq-js's
 * native module, its first client) is not charged to a test's short time limit.
 */
export async function warmUp(pages: HttpFetcher, url: string): Promise<void> {
  const patient = createHttpFetcher({ concurrency: 2, timeoutMs: 30_000 });
  try {
    await Promise.all([patient.html(url), patient.json(url)]);
  } finally {
    patient.close();
  }
  await pages.warm();
  // A fetcher whose limit is short on purpose (its tests are about time-outs) may still miss it
  // here on a loaded machine: only a time-out is let through.
  const timedOut = (err: unknown) => {
    if (!(err instanceof ScrapeFailure && err.kind === 'attempt_timeout')) throw err;
  };
  await Promise.all([pages.html(url).catch(timedOut), pages.json(url).catch(timedOut)]);
}

/** The ScrapeFailure a promise rejects with (fails the test if it resolves or throws anything else). */
export async function failureOf(promise: Promise<unknown>): Promise<ScrapeFailure> {
  const outcome = await promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  if (outcome.ok) throw new Error(`expected a ScrapeFailure, got ${JSON.stringify(outcome.value).slice(0, 200)}`);
  if (!(outcome.error instanceof ScrapeFailure)) throw outcome.error;
  return outcome.error;
}

export async function expectFailure(promise: Promise<unknown>, kind: ScrapeFailureKind): Promise<ScrapeFailure> {
  const failure = await failureOf(promise);
  expect(failure.kind, failure.message).toBe(kind);
  return failure;
}

type Flags = Pick<SimSection, 'ticket_type' | 'restricted_view' | 'accessible' | 'presale'>;

/** How each platform lists a section's tickets: in one offer, or split into lots. */
export function lotSize(ref: EventRef): number {
  if (ref.platform === 'pf_06') return 4;
  if (ref.platform === 'pf_07' && !(ref.region === 'uk' || ref.host === 'www.pf07.example.co.uk')) return 2;
  return Number.POSITIVE_INFINITY;
}

/** The offers a platform should show for the inventory put, without their ids, in a stable order. */
export function expectedOffers(ref: EventRef, sections: readonly (Flags & { name: string; price: number; stock: number })[]) {
  const lot = lotSize(ref);
  // A Map, not an object: a section may well be called "__proto__".
  const out = new Map<string, { price: number; quantity: number; ticket_type: string; restricted_view: boolean; accessible: boolean; presale: boolean }[]>();
  for (const s of sections) {
    const list = out.get(s.name) ?? [];
    out.set(s.name, list);
    for (let left = s.stock; left > 0; left -= lot) {
      list.push({
        price: Math.round(s.price * 100) / 100,
        quantity: Math.min(lot, left),
        ticket_type: ref.platform === 'pf_07' ? 'resale' : s.ticket_type,
        restricted_view: s.restricted_view,
        accessible: s.accessible,
        presale: s.presale,
      });
    }
  }
  return Object.fromEntries([...out].map(([name, offers]) => [name, sortOffers(offers)]));
}

export function sortOffers<T extends { price: number; quantity: number; ticket_type: string }>(offers: T[]): T[] {
  return [...offers].sort((a, b) => a.price - b.price || a.quantity - b.quantity || a.ticket_type.localeCompare(b.ticket_type) || JSON.stringify(a).localeCompare(JSON.stringify(b)));
}

/** The offers scraped, without ids (checked separately: present and unique). */
export function scrapedOffers(sections: Record<string, OfferSection>) {
  const ids = Object.values(sections).flatMap((s) => s.offers.map((o) => o.id));
  expect(new Set(ids).size, 'offer ids are unique').toBe(ids.length);
  return Object.fromEntries(Object.entries(sections).map(([name, s]) => [name, sortOffers(s.offers.map(({ id: _id, ...offer }) => offer))]));
}

/** Section summaries (name, stock, price range, currency) the inventory put should produce. */
export function expectedSummaries(sections: readonly { name: string; price: number; stock: number }[], currency: string) {
  const out = new Map<string, { name: string; currency: string; stock: number; min_price: number | null; max_price: number | null }>();
  for (const s of sections) {
    const entry = out.get(s.name) ?? { name: s.name, currency, stock: 0, min_price: null, max_price: null };
    out.set(s.name, entry);
    entry.stock += s.stock;
    if (s.stock > 0) {
      const price = Math.round(s.price * 100) / 100;
      entry.min_price = entry.min_price === null ? price : Math.min(entry.min_price, price);
      entry.max_price = entry.max_price === null ? price : Math.max(entry.max_price, price);
    }
  }
  return Object.fromEntries(out);
}

export function summaries(data: ScrapeData) {
  return Object.fromEntries(
    Object.entries(data.sections).map(([name, s]: [string, { name: string; currency: string | null; stock: number; min_price: number | null; max_price: number | null }]) => [
      name,
      { name: s.name, currency: s.currency, stock: s.stock, min_price: s.min_price, max_price: s.max_price },
    ]),
  );
}
