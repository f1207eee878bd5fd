// The platform the monitors bench watches (BENCH_PLATFORM): its events on the simulator, in the
// platform's own shape, and what one poll of it costs the simulator. Two are measured:
//
// - pf_03: plain HTML over HTTP (OfferSections), events by URL, any region;
// - pf_01: client-rendered (SeatMapSections). The worker reads it with Chromium, or makes a
//   session in the browser and polls over plain HTTP (the worker decides; the bench only
//   watches). Events are 16-character bare ids in one of its regions.
//
// Every target gets a small, realistic inventory: three standard sections the churn raises in
// turn (default items watch standard tickets only, so each raise is one stock_increase for every
// item on the target), and what default items do not watch: a resale lot, and on pf_01 a few
// platinum seats inside a standard section and a standing (general admission) count. A pf_01
// page stays a few dozen seats.
import { parseEventRef } from '../../src/platform/event-ref.ts';

export const BENCH_PLATFORMS = ['pf_03', 'pf_01'] as const;
export type BenchPlatform = (typeof BENCH_PLATFORMS)[number];

export type TicketType = 'standard' | 'resale' | 'platinum' | 'general_admission';

export interface Section {
  name: string;
  price: number;
  stock: number;
  ticket_type: TicketType;
}

export interface PlatformShape {
  platform: BenchPlatform;
  /** The region every target is in (and every item asks for). */
  region: string;
  /** Sent with every PUT when set (the platform's usual currency in that region). */
  currency: string | null;
  /** Whether the worker needs Chromium for it (its CPU is then a figure of its own). */
  browser: boolean;
  /** The client event id items watch and the simulator's event key, for target i. */
  event(i: number): { eventId: string; key: string };
  sections(i: number): Section[];
  /**
   * The simulator route every poll requests exactly once, whatever else it requests (pf_01's
   * page and its other data arm, a session): the bench counts polls at the simulator with it.
   * Group 1 is the event key.
   */
  pollRoute: RegExp;
  /** For the report: what pollRoute is. */
  pollRouteName: string;
}

function base(i: number): number {
  return 40 + (i % 7) * 10;
}

const PF_03: PlatformShape = {
  platform: 'pf_03',
  region: 'us',
  currency: null,
  browser: false,
  event(i) {
    const key = `bench-mon-${i}`;
    return { eventId: `https://pf03.example/e/${key}`, key };
  },
  sections(i) {
    const b = base(i);
    return [
      { name: 'Floor', price: b * 3, stock: 10, ticket_type: 'standard' },
      { name: 'Lower 101', price: b * 2, stock: 20, ticket_type: 'standard' },
      { name: 'Upper 305', price: b, stock: 30, ticket_type: 'standard' },
      { name: 'Resale A', price: b * 2.5, stock: 4, ticket_type: 'resale' },
    ];
  },
  pollRoute: /^\/pf_03\/e\/([^/?#]+)/,
  pollRouteName: 'the event page, /pf_03/e/{key}',
};

const PF_01: PlatformShape = {
  platform: 'pf_01',
  region: 'uk',
  currency: 'GBP',
  browser: true,
  event(i) {
    // 16 letters or digits (src/platform/event-ref.ts): "BenchMon" and 8 digits.
    const key = `BenchMon${String(i).padStart(8, '0')}`;
    return { eventId: key, key };
  },
  sections(i) {
    const b = base(i);
    // 24 standard and 2 platinum seats at the start; the resale stock is listed as lots of 4
    // and 2, the standing area as one count.
    return [
      { name: 'Floor', price: b * 3, stock: 6, ticket_type: 'standard' },
      { name: 'Lower 101', price: b * 2, stock: 8, ticket_type: 'standard' },
      { name: 'Upper 305', price: b, stock: 10, ticket_type: 'standard' },
      { name: 'Lower 101', price: b * 4, stock: 2, ticket_type: 'platinum' },
      { name: 'Resale Block A', price: b * 2.5, stock: 6, ticket_type: 'resale' },
      { name: 'Standing', price: b * 1.5, stock: 40, ticket_type: 'general_admission' },
    ];
  },
  // The seat arm: a browser visit's page fetches it once, and so must any other way of reading
  // the seats. The page itself and the availability arm (v1) are requests of the same poll.
  pollRoute: /^\/pf_01\/api\/v2\/events\/([^/?#]+)\/seats/,
  pollRouteName: 'the seat arm, /pf_01/api/v2/events/{key}/seats',
};

export const PLATFORM_SHAPES: Record<BenchPlatform, PlatformShape> = { pf_03: PF_03, pf_01: PF_01 };

export function parseBenchPlatform(raw: string | undefined): BenchPlatform {
  const value = (raw ?? '').trim() || 'pf_03';
  if ((BENCH_PLATFORMS as readonly string[]).includes(value)) return value as BenchPlatform;
  throw new Error(`BENCH_PLATFORM must be one of ${BENCH_PLATFORMS.join(', ')} (the platforms the monitors bench can drive), got ${JSON.stringify(raw)}`);
}

/** The platform's events, checked against the service's own parser so no POST is refused for its id. */
export function shapeFor(platform: BenchPlatform): PlatformShape {
  const shape = PLATFORM_SHAPES[platform];
  const { eventId, key } = shape.event(0);
  const parsed = parseEventRef(platform, eventId, shape.region);
  if (!parsed.ok) throw new Error(`bench event id ${eventId} is not valid for ${platform}: ${parsed.message}`);
  if (parsed.ref.key !== key) throw new Error(`bench event id ${eventId} parses to key ${parsed.ref.key}, not ${key}`);
  return shape;
}

/** The sections the churn raises in turn: the standard ones, in order. */
export function changedSections(sections: readonly Section[]): Section[] {
  return sections.filter((s) => s.ticket_type === 'standard');
}
