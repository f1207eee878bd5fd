// pf_06 in the simulator: a paged JSON listings API, `/v1/events/{key}/listings?region=xx&page=N`.
// Tickets are listed in lots of up to four; every page repeats the event and the venue's
// sections (so sold-out sections stay visible) and says how many pages and listings there are.
// Malformed: listings lose their price.
//
// A listing keeps its id while the inventory around it changes, as the real platform's do:
// `{key}-{section}-{lot}`, a section's lots numbered from its last one, so a lot added at the
// front of a section or sold from there renumbers none of the others. The event's `moves`
// (state.ts) changes the inventory right after a page 1 is served, so that a client reading the
// other pages next finds the listings one place further down (or up) than page 1 left them.
import { groupByName, lots, queryRegion } from '../inventory.ts';
import { decimalString } from '../money.ts';
import type { SimPlatform } from '../platform.ts';
import { MAX_SIM_STOCK, type SimEvent } from '../state.ts';

export const PF06_PAGE_SIZE = 50;
const LOT_SIZE = 4;
const NOTES = { restricted_view: 'obstructed_view', accessible: 'wheelchair_accessible', presale: 'presale' } as const;

function listingsPage(event: SimEvent, pageNumber: number, malformed: boolean) {
  const groups = [...groupByName(event.sections)];
  const sectionId = new Map(groups.map(([name], i) => [name, `sec-${i + 1}`]));
  const listings = event.sections.flatMap((section, s) => {
    const sectionLots = lots(section.stock, LOT_SIZE);
    return sectionLots.map((quantity, l) => ({
      id: `${event.key}-${s + 1}-${sectionLots.length - l}`,
      section_id: sectionId.get(section.name)!,
      quantity,
      ...(malformed ? {} : { price: { amount: decimalString(section.price), currency: event.currency } }),
      kind: section.ticket_type,
      notes: (['restricted_view', 'accessible', 'presale'] as const).filter((flag) => section[flag]).map((flag) => NOTES[flag]),
    }));
  });
  const totalPages = Math.max(1, Math.ceil(listings.length / PF06_PAGE_SIZE));
  return {
    event: { id: event.key, name: event.name, venue: { name: event.venue, city: event.city }, starts_at: event.starts_at, currency: event.currency },
    sections: groups.map(([name]) => ({ id: sectionId.get(name)!, name })),
    listings: listings.slice((pageNumber - 1) * PF06_PAGE_SIZE, pageNumber * PF06_PAGE_SIZE),
    page: pageNumber,
    total_pages: totalPages,
    total_listings: listings.length,
  };
}

/**
 * One move of the event's `moves`, made to its own inventory (counted down): `insert_front` adds a
 * full lot before the first section's lots, the first listing of all; `remove_front` sells the
 * first listing there is (a section's first lot is a full one unless it is its only one).
 */
function moveListings(event: SimEvent): void {
  const moves = event.moves;
  if (!moves || moves.reads <= 0) return;
  moves.reads--;
  if (moves.move === 'insert_front') {
    const first = event.sections[0];
    if (first && first.stock + LOT_SIZE <= MAX_SIM_STOCK) first.stock += LOT_SIZE;
  } else {
    const first = event.sections.find((section) => section.stock > 0);
    if (first) first.stock = first.stock <= LOT_SIZE ? 0 : first.stock - LOT_SIZE;
  }
  event.updated_at = new Date().toISOString();
}

export const pf06: SimPlatform = {
  platform: 'pf_06',
  mount(router, serve) {
    router.get('/v1/events/:key/listings', (ctx) => {
      const requested = Number(ctx.query.page ?? '1');
      if (!Number.isSafeInteger(requested) || requested < 1) {
        ctx.status = 400;
        ctx.body = { error: 'page must be a whole number from 1' };
        return;
      }
      return serve(ctx, { platform: 'pf_06', key: ctx.params.key!, region: queryRegion(ctx), type: 'json' }, (event, { malformed }) => {
        const body = listingsPage(event, requested, malformed);
        // Page 1 shows the inventory as it was asked for; the others may find it moved.
        if (requested === 1) moveListings(event);
        return { type: 'json', body };
      });
    });
  },
};
