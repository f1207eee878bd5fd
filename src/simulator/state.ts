// The simulator's inventory: one event per (platform, event key), what it has on sale, and how
// it should behave when scraped. Seeded with one demo event per platform (the registry's
// event_id_example), changed exactly by the control API, and nudged by a slow random drift so
// a demo's watchlist sees changes without anyone touching it.
import { z } from 'zod';
import { parseEventKey, parseEventRef } from '../platform/event-ref.ts';
import { PLATFORMS, PLATFORM_KEYS, type PlatformKey } from '../platform/registry.ts';

export const BEHAVIOURS = ['ok', 'slow', 'error', 'hang', 'not_found', 'malformed', 'blocked', 'challenge'] as const;
export type Behaviour = (typeof BEHAVIOURS)[number];
export type ArmState = 'ok' | 'error';
/** How pf_06's listings move while they are read (`moves`). */
export const PF06_MOVES = ['insert_front', 'remove_front'] as const;
export type Pf06Move = (typeof PF06_MOVES)[number];

/** How an event's pages answer: the platforms' and the marketplaces' events share these fields. */
export const behaviourFields = {
  behaviour: z.enum(BEHAVIOURS).default('ok'),
  /** How long `slow` waits before answering. */
  delay_ms: z.number().int().min(0).max(600_000).default(2_000),
  /** The next N page requests answer 503 first (a transient failure), then `behaviour` applies. */
  failures: z.number().int().min(0).max(1_000).default(0),
  /** What `blocked` answers: 429 (rate limited) or 403 (refused). */
  blocked_status: z.union([z.literal(429), z.literal(403)]).default(429),
  /** The Retry-After, in seconds, that `blocked` sends; null sends none. */
  retry_after_s: z.number().int().min(0).max(86_400).nullable().default(30),
  /** Let the background drift change this event (off once set exactly). */
  drift: z.boolean().default(false),
};

/** The most tickets one section entry holds. */
export const MAX_SIM_STOCK = 100_000;

export const simSectionSchema = z.strictObject({
  name: z.string().trim().min(1).max(100),
  price: z.number().min(0).max(1_000_000),
  stock: z.number().int().min(0).max(MAX_SIM_STOCK),
  ticket_type: z.enum(['standard', 'resale', 'platinum', 'general_admission']).default('standard'),
  restricted_view: z.boolean().default(false),
  accessible: z.boolean().default(false),
  presale: z.boolean().default(false),
});
export type SimSection = z.infer<typeof simSectionSchema>;

/** Body of `PUT /_sim/{platform}/events/{event_id}` (docs/simulator.md, "Control API"). */
export const simEventInputSchema = z.strictObject({
  region: z.string().trim().min(1).max(8),
  sections: z.array(simSectionSchema).max(200).default([]),
  ...behaviourFields,
  /**
   * pf_01 only: its two data arms, `v1` (resale and general admission) and `v2` (seats); `error`
   * answers 503, `not_found` 404 while the event and the other arm are there.
   */
  arms: z
    .strictObject({ v1: z.enum(['ok', 'error', 'not_found']).default('ok'), v2: z.enum(['ok', 'error', 'not_found']).default('ok') })
    .default({ v1: 'ok', v2: 'ok' }),
  /**
   * pf_01 only: its event page `/event/{key}`; `not_found` answers 404 while the arms answer as
   * `arms` and `behaviour` say (a page taken down before its data, or a routing fault of the page
   * alone). With `arms` it makes the page and the arms disagree either way (issue 38).
   */
  page: z.enum(['ok', 'not_found']).default('ok'),
  /**
   * pf_06 only: its listings move between pages while a client reads them, as the real
   * platform's do when listings are added or sell (platforms/pf_06.ts). Right after serving a
   * page 1, the simulator applies `move` to the event's own inventory, for the next `reads`
   * page-1 requests (counted down, like `failures`): `insert_front` adds a lot of four tickets
   * before every listing (each one after it one place down), `remove_front` sells the first
   * listing (each one after it one place up). Null: nothing moves.
   */
  moves: z
    .strictObject({ move: z.enum(PF06_MOVES), reads: z.number().int().min(0).max(1_000_000).default(1) })
    .nullable()
    .default(null),
  name: z.string().max(200).default('Simulated event'),
  venue: z.string().max(200).default('Simulated Arena'),
  city: z.string().max(100).default('Springfield'),
  starts_at: z.iso.datetime({ offset: true }).default('2027-06-19T19:30:00Z'),
  currency: z.string().regex(/^[A-Z]{3}$/).default('EUR'),
});
export type SimEventInput = z.infer<typeof simEventInputSchema>;

export interface SimEvent extends SimEventInput {
  platform: PlatformKey;
  key: string;
  /** Page and API requests served for this event (the control API reads it back). */
  hits: number;
  /**
   * Of those, the whole pages served (its inventory could be read): no failure, challenge or
   * malformed page. What a ground truth asks when it wants to know whether a change was seen.
   */
  reads: number;
  updated_at: string;
}

const KEY = /^[A-Za-z0-9-]{1,100}$/;

/** The demo events are priced in their region's currency. */
const DEMO_CURRENCY: Record<string, string> = { us: 'USD', uk: 'GBP', au: 'AUD', cz: 'CZK', it: 'EUR', de: 'EUR' };

/**
 * The control API names an event by its key (the id inside the platform's URL, or the bare id)
 * or by the whole client event id, URL-encoded. Returns the key, or null if neither fits.
 */
export function eventKeyFromPath(platform: PlatformKey, raw: string): string | null {
  if (raw.includes('://')) {
    const parsed = parseEventKey(platform, raw);
    return parsed.ok ? parsed.key : null;
  }
  return KEY.test(raw) ? raw : null;
}

function demoSections(seed: number): SimSection[] {
  const base = 40 + (seed % 7) * 10;
  const flags = { restricted_view: false, accessible: false, presale: false };
  return [
    { name: 'Floor', price: base * 3, stock: 12, ticket_type: 'standard', ...flags },
    { name: 'Lower Tier 101', price: base * 2, stock: 30, ticket_type: 'standard', ...flags },
    { name: 'Upper Tier 305', price: base, stock: 4, ticket_type: 'standard', ...flags, restricted_view: true },
    { name: 'Resale Block A', price: base * 2.5, stock: 6, ticket_type: 'resale', ...flags },
    { name: 'General Admission', price: base * 1.5, stock: 80, ticket_type: 'general_admission', ...flags },
  ];
}

export class SimStore {
  private readonly events = new Map<string, SimEvent>();

  /** Seeded with the demo events unless `seed` is false (tests that set every event themselves). */
  constructor(
    private readonly now: () => Date = () => new Date(),
    seed = true,
  ) {
    if (seed) this.reset();
  }

  private static id(platform: PlatformKey, key: string): string {
    return `${platform}/${key}`;
  }

  /** Back to the seeded demo events: one per platform, drifting. */
  reset(): void {
    this.events.clear();
    PLATFORM_KEYS.forEach((platform, i) => {
      const info = PLATFORMS[platform];
      const region = platform === 'pf_08' ? 'au' : ((info.regions as readonly string[] | null)?.[0] ?? 'us');
      const parsed = parseEventRef(platform, info.event_id_example, region);
      if (!parsed.ok) throw new Error(`registry example for ${platform} does not parse: ${parsed.message}`);
      const currency = DEMO_CURRENCY[region] ?? 'EUR';
      this.put(platform, parsed.ref.key, simEventInputSchema.parse({ region, currency, sections: demoSections(i), drift: true, name: `Demo event on ${platform}` }));
    });
  }

  get(platform: PlatformKey, key: string): SimEvent | undefined {
    return this.events.get(SimStore.id(platform, key));
  }

  put(platform: PlatformKey, key: string, input: SimEventInput): SimEvent {
    const previous = this.get(platform, key);
    const event: SimEvent = { ...input, region: input.region.toLowerCase(), platform, key, hits: previous?.hits ?? 0, reads: previous?.reads ?? 0, updated_at: this.now().toISOString() };
    this.events.set(SimStore.id(platform, key), event);
    return event;
  }

  delete(platform: PlatformKey, key: string): boolean {
    return this.events.delete(SimStore.id(platform, key));
  }

  all(): SimEvent[] {
    return [...this.events.values()];
  }

  /**
   * One drift step: each drifting event has one section's stock moved by one ticket (never
   * below zero) and, now and then, its price by 1%. `random` is injectable for tests.
   */
  drift(random: () => number = Math.random): void {
    for (const event of this.events.values()) {
      if (!event.drift || event.sections.length === 0) continue;
      const section = event.sections[Math.floor(random() * event.sections.length)]!;
      section.stock = Math.max(0, section.stock + (random() < 0.5 ? -1 : 1));
      if (random() < 0.2) section.price = Math.round(section.price * (random() < 0.5 ? 0.99 : 1.01) * 100) / 100;
      event.updated_at = this.now().toISOString();
    }
  }
}
