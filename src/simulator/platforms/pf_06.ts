// pf_06 in the simulator: a paged JSON listings API, `/v1/events/{key}/listings?region=xx&page=N`.
// Tickets are listed in lots of up to four; every page repeats the event and the venue's
// sections (so sold-out sections stay visible) and says how many pages there are. Malformed:
// listings lose their price.
import { groupByName, lots, queryRegion } from '../inventory.ts';
import { decimalString } from '../money.ts';
import type { SimPlatform } from '../platform.ts';
import type { SimEvent } from '../state.ts';

export const PF06_PAGE_SIZE = 50;
const LOT_SIZE = 4;
const NOTES = { restricted_view: 'obstructed_view', accessible: 'wheelchair_accessible', presale: 'presale' } as const;

function listingsPage(event: SimEvent, pageNumber: number, malformed: boolean) {
  const groups = [...groupByName(event.sections)];
  const sectionId = new Map(groups.map(([name], i) => [name, `sec-${i + 1}`]));
  const listings = event.sections.flatMap((section, s) =>
    lots(section.stock, LOT_SIZE).map((quantity, l) => ({
      id: `${event.key}-${s + 1}-${l + 1}`,
      section_id: sectionId.get(section.name)!,
      quantity,
      ...(malformed ? {} : { price: { amount: decimalString(section.price), currency: event.currency } }),
      kind: section.ticket_type,
      notes: (['restricted_view', 'accessible', 'presale'] as const).filter((flag) => section[flag]).map((flag) => NOTES[flag]),
    })),
  );
  const totalPages = Math.max(1, Math.ceil(listings.length / PF06_PAGE_SIZE));
  return {
    event: { id: event.key, name: event.name, venue: { name: event.venue, city: event.city }, starts_at: event.starts_at, currency: event.currency },
    sections: groups.map(([name]) => ({ id: sectionId.get(name)!, name })),
    listings: listings.slice((pageNumber - 1) * PF06_PAGE_SIZE, pageNumber * PF06_PAGE_SIZE),
    page: pageNumber,
    total_pages: totalPages,
  };
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
      return serve(ctx, { platform: 'pf_06', key: ctx.params.key!, region: queryRegion(ctx), type: 'json' }, (event, { malformed }) => ({
        type: 'json',
        body: listingsPage(event, requested, malformed),
      }));
    });
  },
};
