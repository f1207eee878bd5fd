// pf_07 in the simulator: a resale marketplace. Its listings API `/api/events/{key}/listings`
// lists tickets in pairs plus the section names; UK events also have the dedicated UK monitor
// `/uk/monitor/{key}`, another feed (fixture, stands, pence). Malformed: the listings API
// answers truncated JSON; the monitor's feed loses its stands.
import { groupByName, lots, queryRegion } from '../inventory.ts';
import { cents } from '../money.ts';
import type { SimPlatform } from '../platform.ts';
import type { SimEvent } from '../state.ts';

const PAIR = 2;

function listings(event: SimEvent) {
  return {
    event: { id: event.key, title: event.name, venue: event.venue, city: event.city, date: event.starts_at, currency: event.currency },
    sections: [...groupByName(event.sections).keys()],
    listings: event.sections.flatMap((section, s) =>
      lots(section.stock, PAIR).map((tickets, l) => ({
        listing_id: `${event.key}-${s + 1}-${l + 1}`,
        section: section.name,
        price_per_ticket: cents(section.price) / 100,
        tickets,
        features: (['restricted_view', 'accessible', 'presale'] as const).filter((flag) => section[flag]),
      })),
    ),
  };
}

function monitorFeed(event: SimEvent, malformed: boolean) {
  const stands = [...groupByName(event.sections)].map(([stand, group], g) => ({
    stand,
    available: group.flatMap((section, s) =>
      section.stock > 0
        ? [{ ref: `UK-${event.key}-${g + 1}-${s + 1}`, pence: cents(section.price), qty: section.stock, obstructed: section.restricted_view, wheelchair: section.accessible, members_presale: section.presale }]
        : [],
    ),
  }));
  return {
    fixture: { name: event.name, ground: event.venue, town: event.city, kick_off: event.starts_at, currency: event.currency },
    ...(malformed ? {} : { stands }),
    polled_at: new Date().toISOString(),
  };
}

export const pf07: SimPlatform = {
  platform: 'pf_07',
  mount(router, serve) {
    router.get('/api/events/:key/listings', (ctx) =>
      serve(ctx, { platform: 'pf_07', key: ctx.params.key!, region: queryRegion(ctx), type: 'json' }, (event, { malformed }) => {
        const json = JSON.stringify(listings(event));
        return { type: 'json', body: malformed ? json.slice(0, Math.floor(json.length / 2)) : json };
      }),
    );
    router.get('/uk/monitor/:key', (ctx) =>
      serve(ctx, { platform: 'pf_07', key: ctx.params.key!, region: queryRegion(ctx), type: 'json' }, (event, { malformed }) => ({
        type: 'json',
        body: monitorFeed(event, malformed),
      })),
    );
  },
};
