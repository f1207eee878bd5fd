// The simulated marketplaces' inventory (docs/simulator.md, "Marketplaces A, B and C"): events of
// marketplace A (details, listings, sales), B (sections, offers, one region) and C (a page A
// links to), keyed by each marketplace's event id. Seeded with demo events (demo.ts), set
// exactly by the control API (control.ts), and, for events with `drift`, moved by a slow random
// drift: A sells tickets from its listings, B's sections sell out one ticket at a time.
import { z } from 'zod';
import { MARKETPLACE_INFO, type MarketplaceKey } from '../../market-data/tracking-ref.ts';
import { behaviourFields } from '../state.ts';
import { demoEvents } from './demo.ts';

const TICKET_TYPES = ['standard', 'resale', 'platinum', 'general_admission'] as const;
const name = (max = 200) => z.string().trim().min(1).max(max);
const money = z.number().min(0).max(1_000_000);
const currency = z.string().regex(/^[A-Z]{3}$/);
const imageUrl = z.url({ protocol: /^https?$/ }).max(500);

const venueSchema = z.strictObject({
  name: name(),
  city: z.string().max(100).nullable().default(null),
  country: z.string().max(100).nullable().default(null),
  country_code: z.string().regex(/^[A-Z]{2}$/).nullable().default(null),
  svg_map_url: imageUrl.nullable().default(null),
});

const DEFAULT_VENUE = { name: 'Simulated Arena', city: 'Springfield', country: 'United States', country_code: 'US', svg_map_url: null };

export const maListingSchema = z.strictObject({
  /** Defaults to L1, L2, ... by position. */
  id: z.string().regex(/^[A-Za-z0-9-]{1,40}$/).optional(),
  section: name(100),
  row: z.string().trim().max(20).nullable().default(null),
  quantity: z.number().int().min(1).max(10_000),
  /** Per ticket, in the event's currency. */
  price: money,
  ticket_type: z.enum(TICKET_TYPES).default('standard'),
});

export const maSaleSchema = z.strictObject({
  /** The marketplace's id of the sale: what the tracker dedupes on. */
  id: z.string().regex(/^[A-Za-z0-9-]{1,60}$/),
  sold_at: z.iso.datetime({ offset: true }),
  section: z.string().trim().max(100).nullable().default(null),
  row: z.string().trim().max(20).nullable().default(null),
  quantity: z.number().int().min(1).max(10_000),
  /** Per ticket. */
  price: money,
  /** Defaults to the event's currency. */
  currency: currency.optional(),
  ticket_type: z.enum(TICKET_TYPES).default('standard'),
});

/** Body of `PUT /_sim/marketplace_a/events/{E-id}`. */
export const maEventInputSchema = z
  .strictObject({
    name: name().default('Simulated event'),
    starts_at: z.iso.datetime({ offset: true }).nullable().default('2027-06-19T19:30:00Z'),
    image_url: imageUrl.nullable().default(null),
    category: z.string().trim().min(1).max(100).nullable().default('Concerts'),
    venue: venueSchema.nullable().default(DEFAULT_VENUE),
    /** `slug` names the artist's page, /artist/{slug}, the URL the artist endpoint looks up. */
    artist: z
      .strictObject({ name: name(), slug: z.string().regex(/^[a-z0-9-]{1,100}$/), image_url: imageUrl.nullable().default(null) })
      .nullable()
      .default(null),
    currency: currency.default('USD'),
    listings: z.array(maListingSchema).max(2_000).default([]),
    sales: z.array(maSaleSchema).max(5_000).default([]),
    marketplace_b_event_id: z.string().regex(MARKETPLACE_INFO.marketplace_b.id).nullable().default(null),
    marketplace_c_event_id: z.string().regex(MARKETPLACE_INFO.marketplace_c.id).nullable().default(null),
    ...behaviourFields,
  })
  .superRefine((event, ctx) => {
    const seen = new Set<string>();
    event.sales.forEach((sale, i) => {
      if (seen.has(sale.id)) ctx.addIssue({ code: 'custom', path: ['sales', i, 'id'], message: `sale id '${sale.id}' is repeated` });
      seen.add(sale.id);
    });
  });
export type MaEventInput = z.infer<typeof maEventInputSchema>;

export const mbSectionSchema = z.strictObject({
  name: name(100),
  capacity: z.number().int().min(0).max(1_000_000),
  available: z.number().int().min(0).max(1_000_000),
  sold: z.number().int().min(0).max(1_000_000),
});

export const mbOfferSchema = z.strictObject({
  name: name(100),
  stock: z.number().int().min(0).max(1_000_000),
  /** Per ticket, fees included (what a buyer pays). */
  price: money,
  /** Per ticket, without fees (the face value). */
  face_price: money,
  type: z.enum(['standard', 'resale', 'platinum']).default('standard'),
  /** Defaults to the event's currency. */
  currency: currency.optional(),
});

/** Body of `PUT /_sim/marketplace_b/events/{id}`. */
export const mbEventInputSchema = z.strictObject({
  name: name().default('Simulated event'),
  starts_at: z.iso.datetime({ offset: true }).nullable().default('2027-06-19T19:30:00Z'),
  category: z.string().trim().min(1).max(100).nullable().default('Concerts'),
  venue: venueSchema.nullable().default(DEFAULT_VENUE),
  /** The market the event is sold in: the page's region block, and each scrape run's region. */
  region: z.string().regex(/^[a-z]{2,8}$/).default('us'),
  currency: currency.default('USD'),
  sections: z.array(mbSectionSchema).max(500).default([]),
  offers: z.array(mbOfferSchema).max(500).default([]),
  /** Shown on the page as the average resale price when set. */
  average_sale_price: money.nullable().default(null),
  ...behaviourFields,
});
export type MbEventInput = z.infer<typeof mbEventInputSchema>;

/** Body of `PUT /_sim/marketplace_c/events/{id}`: C only shows a page. */
export const mcEventInputSchema = z.strictObject({
  name: name().default('Simulated event'),
  starts_at: z.iso.datetime({ offset: true }).nullable().default('2027-06-19T19:30:00Z'),
  ...behaviourFields,
});
export type McEventInput = z.infer<typeof mcEventInputSchema>;

interface Tracked {
  key: string;
  /** Page and API requests served for this event (the control API reads it back). */
  hits: number;
  updated_at: string;
}
export type MaEvent = MaEventInput & Tracked & { marketplace: 'marketplace_a' };
export type MbEvent = MbEventInput & Tracked & { marketplace: 'marketplace_b' };
export type McEvent = McEventInput & Tracked & { marketplace: 'marketplace_c' };
export type MarketplaceEvent = MaEvent | MbEvent | McEvent;
export type MarketplaceEventOf<M extends MarketplaceKey> = Extract<MarketplaceEvent, { marketplace: M }>;

export const INPUT_SCHEMAS = { marketplace_a: maEventInputSchema, marketplace_b: mbEventInputSchema, marketplace_c: mcEventInputSchema } as const;

export class MarketplaceStore {
  private readonly events: { [M in MarketplaceKey]: Map<string, MarketplaceEventOf<M>> } = {
    marketplace_a: new Map(),
    marketplace_b: new Map(),
    marketplace_c: new Map(),
  };
  private drifted = 0;

  constructor(
    private readonly now: () => Date = () => new Date(),
    seed = true,
  ) {
    if (seed) this.reset();
  }

  /** Back to the demo events (drifting), as POST /_sim/reset does for the platforms. */
  reset(): void {
    for (const map of Object.values(this.events)) map.clear();
    const demo = demoEvents(this.now());
    for (const [key, input] of Object.entries(demo.marketplace_a)) this.put('marketplace_a', key, maEventInputSchema.parse(input));
    for (const [key, input] of Object.entries(demo.marketplace_b)) this.put('marketplace_b', key, mbEventInputSchema.parse(input));
    for (const [key, input] of Object.entries(demo.marketplace_c)) this.put('marketplace_c', key, mcEventInputSchema.parse(input));
  }

  get<M extends MarketplaceKey>(marketplace: M, key: string): MarketplaceEventOf<M> | undefined {
    return this.events[marketplace].get(key);
  }

  put<M extends MarketplaceKey>(marketplace: M, key: string, input: z.infer<(typeof INPUT_SCHEMAS)[M]>): MarketplaceEventOf<M> {
    const previous = this.get(marketplace, key);
    const event = { ...input, marketplace, key, hits: previous?.hits ?? 0, updated_at: this.now().toISOString() } as MarketplaceEventOf<M>;
    this.events[marketplace].set(key, event);
    return event;
  }

  delete(marketplace: MarketplaceKey, key: string): boolean {
    return this.events[marketplace].delete(key);
  }

  all<M extends MarketplaceKey>(marketplace: M): MarketplaceEventOf<M>[] {
    return [...this.events[marketplace].values()];
  }

  /**
   * One drift step for drifting events: on A, a ticket or two of a random listing is sold (a new
   * sale, the listing shrinks) and now and then a listing's price moves by 1%; on B, one ticket
   * of a random section and offer is sold. `random` is injectable for tests.
   */
  drift(random: () => number = Math.random): void {
    const at = this.now().toISOString();
    for (const event of this.events.marketplace_a.values()) {
      if (!event.drift || event.listings.length === 0) continue;
      const i = Math.floor(random() * event.listings.length);
      const listing = event.listings[i]!;
      const quantity = Math.min(listing.quantity, random() < 0.7 ? 1 : 2);
      event.sales.push({
        id: `S-drift-${++this.drifted}-${Math.floor(random() * 1e6)}`,
        sold_at: at,
        section: listing.section,
        row: listing.row,
        quantity,
        price: listing.price,
        ticket_type: listing.ticket_type,
      });
      listing.quantity -= quantity;
      if (listing.quantity === 0) event.listings.splice(i, 1);
      const other = event.listings[Math.floor(random() * event.listings.length)];
      if (other && random() < 0.2) other.price = Math.round(other.price * (random() < 0.5 ? 0.99 : 1.01) * 100) / 100;
      event.updated_at = at;
    }
    for (const event of this.events.marketplace_b.values()) {
      if (!event.drift) continue;
      const section = event.sections[Math.floor(random() * event.sections.length)];
      if (section && section.available > 0) {
        section.available--;
        section.sold++;
      }
      const stocked = event.offers.filter((o) => o.stock > 0);
      const offer = stocked[Math.floor(random() * stocked.length)];
      if (offer) offer.stock--;
      event.updated_at = at;
    }
  }
}
