// The marketplaces' demo events, so `npm start` has something to track out of the box: on A an
// arena concert with listings, two days of sales and links to B and C, and a football match
// with listings but no sales yet; on B the same concert (A links to it) and a festival known only
// to B; on C the concert's page. Sales are dated relative to the moment of seeding, so the 24 h
// figures mean something whenever the simulator starts. Inputs, parsed by the store's schemas.

const HOUR = 3_600_000;

export interface DemoEvents {
  marketplace_a: Record<string, Record<string, unknown>>;
  marketplace_b: Record<string, Record<string, unknown>>;
  marketplace_c: Record<string, Record<string, unknown>>;
}

export const DEMO_IDS = {
  concertA: 'E-104729',
  derbyA: 'E-220318',
  concertB: '0B005F2A9B1E4D2C',
  festivalB: '1A9F3C7D5E2B4A60',
  concertC: '771204',
} as const;

export function demoEvents(now: Date): DemoEvents {
  const ago = (hours: number) => new Date(now.getTime() - hours * HOUR).toISOString();
  const sale = (id: number, hours: number, section: string, quantity: number, price: number) => ({
    id: `S-${id}`,
    sold_at: ago(hours),
    section,
    row: String.fromCharCode(65 + (id % 12)),
    quantity,
    price,
  });
  return {
    marketplace_a: {
      [DEMO_IDS.concertA]: {
        name: 'Aurora Skies: The Northern Lights Tour',
        starts_at: '2027-05-14T19:00:00Z',
        image_url: 'https://img.marketplace-a.example/events/E-104729.jpg',
        category: 'Concerts',
        venue: { name: 'Riverside Arena', city: 'London', country: 'United Kingdom', country_code: 'GB', svg_map_url: 'https://img.marketplace-a.example/maps/riverside-arena.svg' },
        artist: { name: 'Aurora Skies', slug: 'aurora-skies', image_url: 'https://img.marketplace-a.example/artists/aurora-skies.jpg' },
        currency: 'GBP',
        listings: [
          { section: 'Floor', row: null, quantity: 4, price: 145, ticket_type: 'general_admission' },
          { section: 'Lower Tier 112', row: 'F', quantity: 2, price: 118.5 },
          { section: 'Lower Tier 114', row: 'K', quantity: 6, price: 99 },
          { section: 'Upper Tier 410', row: 'C', quantity: 8, price: 62.75, ticket_type: 'resale' },
          { section: 'Hospitality Box 3', row: null, quantity: 2, price: 390, ticket_type: 'platinum' },
        ],
        sales: [
          sale(9001, 47, 'Floor', 2, 139),
          sale(9002, 40, 'Lower Tier 112', 2, 121),
          sale(9003, 31, 'Upper Tier 410', 4, 58.5),
          sale(9004, 26, 'Lower Tier 114', 1, 95),
          sale(9005, 20, 'Floor', 2, 150),
          sale(9006, 9, 'Upper Tier 410', 2, 64),
          sale(9007, 3, 'Lower Tier 112', 2, 124.5),
          sale(9008, 1, 'Hospitality Box 3', 2, 410),
        ],
        marketplace_b_event_id: DEMO_IDS.concertB,
        marketplace_c_event_id: DEMO_IDS.concertC,
        drift: true,
      },
      [DEMO_IDS.derbyA]: {
        name: 'City Derby',
        starts_at: '2027-03-06T15:00:00Z',
        image_url: 'https://img.marketplace-a.example/events/E-220318.jpg',
        category: 'Sports',
        venue: { name: 'Northern Park Stadium', city: 'Manchester', country: 'United Kingdom', country_code: 'GB', svg_map_url: null },
        artist: { name: 'City FC', slug: 'city-fc', image_url: null },
        currency: 'GBP',
        listings: [
          { section: 'North Stand', row: '12', quantity: 3, price: 85 },
          { section: 'East Stand', row: '4', quantity: 2, price: 110 },
        ],
        sales: [],
        drift: true,
      },
    },
    marketplace_b: {
      [DEMO_IDS.concertB]: {
        name: 'Aurora Skies: The Northern Lights Tour',
        starts_at: '2027-05-14T19:00:00Z',
        category: 'Concerts',
        venue: { name: 'Riverside Arena', city: 'London', country: 'United Kingdom', country_code: 'GB' },
        region: 'uk',
        currency: 'GBP',
        sections: [
          { name: 'Floor', capacity: 2000, available: 140, sold: 1860 },
          { name: 'Lower Tier', capacity: 6000, available: 420, sold: 5580 },
          { name: 'Upper Tier', capacity: 8000, available: 1210, sold: 6790 },
        ],
        offers: [
          { name: 'Standard Admission', stock: 1500, price: 89.5, face_price: 79.5, type: 'standard' },
          { name: 'Verified Resale', stock: 210, price: 131.25, face_price: 115, type: 'resale' },
          { name: 'Platinum Seating', stock: 60, price: 265, face_price: 240, type: 'platinum' },
        ],
        average_sale_price: 96.4,
        drift: true,
      },
      [DEMO_IDS.festivalB]: {
        name: 'Jazz im Park',
        starts_at: '2027-07-03T16:00:00Z',
        category: 'Festivals',
        venue: { name: 'Stadtpark Bühne', city: 'Berlin', country: 'Germany', country_code: 'DE' },
        region: 'de',
        currency: 'EUR',
        sections: [
          { name: 'Wiese', capacity: 5000, available: 2300, sold: 2700 },
          { name: 'Tribüne', capacity: 800, available: 95, sold: 705 },
        ],
        offers: [
          { name: 'Tagesticket', stock: 2300, price: 59, face_price: 52, type: 'standard' },
          { name: 'Tribüne Sitzplatz', stock: 95, price: 89, face_price: 79, type: 'standard' },
        ],
        drift: true,
      },
    },
    marketplace_c: {
      [DEMO_IDS.concertC]: { name: 'Aurora Skies: The Northern Lights Tour', starts_at: '2027-05-14T19:00:00Z' },
    },
  };
}
