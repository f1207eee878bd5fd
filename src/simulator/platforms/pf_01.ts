// pf_01 in the simulator: `/event/{key}?region=xx` is an HTML shell whose inline script
// (pf_01-page.ts) draws the seat map from two data arms, v2 `/api/v2/events/{key}/seats` (seats)
// and v1 `/api/v1/events/{key}/availability` (primary counts, resale lots, standing counts).
// Each arm fails on its own per the event's `arms`; the event's behaviour applies to all three.
import type { SimPlatform } from '../platform.ts';
import { esc, page } from '../html.ts';
import { groupByName, lots, queryRegion } from '../inventory.ts';
import { cents } from '../money.ts';
import type { SimEvent, SimSection } from '../state.ts';
import { EVENT_PAGE_SCRIPT, MALFORMED_PAGE_SCRIPT } from './pf_01-page.ts';

/** Seats per row: rows run A1..A10, B1..B10, ... through a section's seated stock. */
export const SEATS_PER_ROW = 10;
/** Resale tickets are listed in lots of at most this many, as resellers list pairs and fours. */
export const RESALE_LOT = 4;

const SEATED: ReadonlySet<SimSection['ticket_type']> = new Set(['standard', 'platinum']);

/** A, B, ..., Z, AA, AB, ...: how long blocks are labelled. */
export function rowLabel(index: number): string {
  let label = '';
  for (let n = index; n >= 0; n = Math.floor(n / 26) - 1) label = String.fromCharCode(65 + (n % 26)) + label;
  return label;
}

function flags(section: SimSection) {
  return { restricted_view: section.restricted_view, accessible: section.accessible, presale: section.presale };
}

/**
 * v2: every section of the venue map (standing and resale-only ones too, with no rows), its
 * standard and platinum stock laid out as numbered seats in the order the sections were set.
 */
export function seatsArm(event: SimEvent) {
  return {
    event_id: event.key,
    currency: event.currency,
    sections: [...groupByName(event.sections)].map(([name, group]) => {
      const seats = group
        .filter((s) => SEATED.has(s.ticket_type))
        .flatMap((s) =>
          Array.from({ length: s.stock }, () => ({ offer_type: s.ticket_type.toUpperCase(), price_cents: cents(s.price), ...flags(s) })),
        );
      const rows: { row: string; seats: (typeof seats[number] & { number: string })[] }[] = [];
      seats.forEach((seat, i) => {
        if (i % SEATS_PER_ROW === 0) rows.push({ row: rowLabel(i / SEATS_PER_ROW), seats: [] });
        rows[rows.length - 1]!.seats.push({ number: String((i % SEATS_PER_ROW) + 1), ...seat });
      });
      return { name, rows };
    }),
  };
}

/**
 * v1: per section, primary counts (no seat detail), resale listings in lots, and
 * general-admission counts. Sections with nothing of either kind set are listed too.
 */
export function availabilityArm(event: SimEvent) {
  return {
    event_id: event.key,
    currency: event.currency,
    sections: [...groupByName(event.sections)].map(([name, group], s) => ({
      name,
      primary: group
        .filter((x) => SEATED.has(x.ticket_type))
        .map((x) => ({ offer_type: x.ticket_type.toUpperCase(), available: x.stock, price_cents: cents(x.price) })),
      resale: group
        .filter((x) => x.ticket_type === 'resale')
        .flatMap((x, i) => lots(x.stock, RESALE_LOT).map((quantity, n) => ({ listing_id: `R${s + 1}-${i + 1}-${n + 1}`, price_cents: cents(x.price), quantity, ...flags(x) }))),
      general_admission: group
        .filter((x) => x.ticket_type === 'general_admission')
        .map((x) => ({ price_cents: cents(x.price), available: x.stock, ...flags(x) })),
    })),
  };
}

function shell(event: SimEvent, malformed: boolean): string {
  const header = [
    `<header id="event" data-event-id="${esc(event.key)}" data-name="${esc(event.name)}" data-venue="${esc(event.venue)}"`,
    ` data-city="${esc(event.city)}" data-starts-at="${esc(event.starts_at)}" data-currency="${esc(event.currency)}">`,
    `<h1>${esc(event.name)}</h1><p class="where">${esc(event.venue)}, ${esc(event.city)}</p>`,
    `<time datetime="${esc(event.starts_at)}">${esc(event.starts_at)}</time></header>`,
  ].join('');
  return page({
    lang: 'en',
    title: `${event.name} | pf01 tickets`,
    body: [header, '<main id="seat-map"></main>', `<script>${malformed ? MALFORMED_PAGE_SCRIPT : EVENT_PAGE_SCRIPT}</script>`].join('\n'),
  }).replace('<body>', '<body data-state="loading">');
}

/** The `malformed` variant of a JSON arm: cut off half-way. */
function truncated(value: object): string {
  const json = JSON.stringify(value);
  return json.slice(0, Math.floor(json.length / 2));
}

export const pf01: SimPlatform = {
  platform: 'pf_01',
  mount(router, serve) {
    router.get('/event/:key', (ctx) =>
      serve(ctx, { platform: 'pf_01', key: ctx.params.key!, region: queryRegion(ctx), type: 'html' }, (event, { malformed }) => ({
        type: 'html',
        body: shell(event, malformed),
      })),
    );
    router.get('/api/v2/events/:key/seats', (ctx) =>
      serve(ctx, { platform: 'pf_01', key: ctx.params.key!, region: queryRegion(ctx), arm: 'v2', type: 'json' }, (event, { malformed }) => ({
        type: 'json',
        body: malformed ? truncated(seatsArm(event)) : seatsArm(event),
      })),
    );
    router.get('/api/v1/events/:key/availability', (ctx) =>
      serve(ctx, { platform: 'pf_01', key: ctx.params.key!, region: queryRegion(ctx), arm: 'v1', type: 'json' }, (event, { malformed }) => ({
        type: 'json',
        body: malformed ? truncated(availabilityArm(event)) : availabilityArm(event),
      })),
    );
  },
};
