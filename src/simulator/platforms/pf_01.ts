// pf_01 in the simulator: `/event/{key}?region=xx` is an HTML shell whose inline script
// (pf_01-page.ts) draws the seat map from two data arms, v2 `/api/v2/events/{key}/seats` (seats)
// and v1 `/api/v1/events/{key}/availability` (primary counts, resale lots, standing counts).
// Each arm fails on its own per the event's `arms`, the page on its own per its `page`; the
// event's behaviour applies to all three.
// In front of the arms sits the platform's protection (pf_01-protection.ts): every page sets the
// session cookie and a fresh challenge, `POST /api/session` trades the answer for a token, and an
// arm request without a valid token is refused before the event is even looked up. The front page
// `/pf_01/` gets a session the same way and uses it at once, as the platform's home page does:
// its script asks `GET /api/v1/visitor` (the visitor's state) with the token.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { readJsonBody } from '../../gateway/json-body.ts';
import type { SimPlatform } from '../platform.ts';
import { esc, page } from '../html.ts';
import { groupByName, lots, queryRegion } from '../inventory.ts';
import { cents } from '../money.ts';
import type { ServeEvent } from '../serve.ts';
import type { SimEvent, SimSection } from '../state.ts';
import { eventPageScript, frontPageScript, MALFORMED_PAGE_SCRIPT } from './pf_01-page.ts';
import { CHALLENGE_HEADER, CHALLENGE_MODES, CHALLENGE_REQUIRED, isSid, newSid, Pf01Protection, SID_COOKIE, TOKEN_CARRIERS, type ChallengeMode, type TokenCarrier } from './pf_01-protection.ts';

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

/** What both arms say about the event itself, so a client of the arms alone needs no page. */
function eventDetails(event: SimEvent) {
  return { name: event.name, venue: event.venue, city: event.city, starts_at: event.starts_at };
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
    event: eventDetails(event),
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
    event: eventDetails(event),
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

/** Each page's script per mode and token carrier, built once. */
const scripts = (make: (mode: ChallengeMode, carrier: TokenCarrier) => string): Record<string, string> =>
  Object.fromEntries(CHALLENGE_MODES.flatMap((mode) => TOKEN_CARRIERS.map((carrier) => [`${mode}/${carrier}`, make(mode, carrier)])));
const EVENT_SCRIPTS = scripts(eventPageScript);
const FRONT_SCRIPTS = scripts(frontPageScript);
const scriptOf = (all: Record<string, string>, protection: Pf01Protection): string => all[`${protection.mode}/${protection.tokenIn}`]!;

/** In <head>, so it has run before the page's own script asks for it. */
function challengeHead(code: string): string {
  return `<script id="pf01-challenge">${code}</script>`;
}

function shell(event: SimEvent, malformed: boolean, challenge: string, script: string): string {
  const header = [
    `<header id="event" data-event-id="${esc(event.key)}" data-name="${esc(event.name)}" data-venue="${esc(event.venue)}"`,
    ` data-city="${esc(event.city)}" data-starts-at="${esc(event.starts_at)}" data-currency="${esc(event.currency)}">`,
    `<h1>${esc(event.name)}</h1><p class="where">${esc(event.venue)}, ${esc(event.city)}</p>`,
    `<time datetime="${esc(event.starts_at)}">${esc(event.starts_at)}</time></header>`,
  ].join('');
  return page({
    lang: 'en',
    title: `${event.name} | pf01 tickets`,
    head: challengeHead(challenge),
    body: [header, '<main id="seat-map"></main>', `<script>${malformed ? MALFORMED_PAGE_SCRIPT : script}</script>`].join('\n'),
  }).replace('<body>', '<body data-state="loading">');
}

function frontPage(challenge: string, script: string): string {
  return page({
    lang: 'en',
    title: 'pf01 tickets',
    head: challengeHead(challenge),
    body: ['<header id="front"><h1>pf01 tickets</h1></header>', '<main id="home"><p>Find your seats.</p></main>', `<script>${script}</script>`].join('\n'),
  });
}

/**
 * The request's session id, or a new one; either way set on the answer (setting a kept one
 * again is harmless and keeps every page answer alike).
 */
function session(ctx: Context): string {
  const given = ctx.cookies.get(SID_COOKIE);
  const sid = isSid(given) ? given : newSid();
  ctx.append('Set-Cookie', `${SID_COOKIE}=${sid}; Path=/pf_01; HttpOnly; SameSite=Lax`);
  // Each load carries its own challenge: a cached copy would hold a spent one.
  ctx.set('Cache-Control', 'no-store');
  return sid;
}

function cookieSid(ctx: Context): string | null {
  const given = ctx.cookies.get(SID_COOKIE);
  return isSid(given) ? given : null;
}

function challengeRequired(ctx: Context): void {
  ctx.status = 403;
  ctx.set(CHALLENGE_HEADER, 'required');
  ctx.set('Cache-Control', 'no-store');
  ctx.type = 'application/json';
  ctx.body = JSON.stringify(CHALLENGE_REQUIRED);
}

/** The answer is a few digits; anything longer is not a browser answering the challenge. */
const SESSION_BODY_BYTES = 1_024;

/** pf_01's routes with the protection they share; `router` is prefixed with `/pf_01`. */
export function mountPf01(router: Router, serve: ServeEvent, protection: Pf01Protection): void {
  router.get('/', (ctx) => {
    // The page's relative `api/session` must resolve below /pf_01/, not next to it.
    if (!ctx.path.endsWith('/')) return ctx.redirect(`${ctx.path}/${ctx.search}`);
    const sid = session(ctx);
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = frontPage(protection.challenge(sid), scriptOf(FRONT_SCRIPTS, protection));
  });
  router.post('/api/session', async (ctx) => {
    const sid = cookieSid(ctx);
    const body = await readJsonBody(ctx, SESSION_BODY_BYTES);
    const value = body.kind === 'json' && typeof body.value === 'object' && body.value !== null ? (body.value as Record<string, unknown>)[protection.protocol.answerField] : undefined;
    const issued = protection.redeem(sid, value, ctx.get('user-agent'));
    if (!issued) return challengeRequired(ctx);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = issued;
  });
  router.get('/event/:key', (ctx) => {
    const sid = session(ctx);
    return serve(ctx, { platform: 'pf_01', key: ctx.params.key!, region: queryRegion(ctx), type: 'html', eventPage: true }, (event, { malformed }) => ({
      type: 'html',
      body: shell(event, malformed, protection.challenge(sid), scriptOf(EVENT_SCRIPTS, protection)),
    }));
  });

  /** As a WAF in front of the data would: before the event is looked up, and not counted as a hit. */
  const guarded = (ctx: Context): boolean => {
    const { tokenHeader, tokenCookie } = protection.protocol;
    const token = protection.tokenIn === 'cookie' ? ctx.cookies.get(tokenCookie) : ctx.get(tokenHeader);
    if (protection.authorize(cookieSid(ctx), token || undefined, ctx.get('user-agent'))) return true;
    challengeRequired(ctx);
    return false;
  };
  // The visitor's state, which the front page shows: anonymous, and until when the session holds.
  router.get('/api/v1/visitor', (ctx) => {
    if (!guarded(ctx)) return;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { visitor: 'anonymous', cart: [] };
  });
  router.get('/api/v2/events/:key/seats', async (ctx) => {
    if (!guarded(ctx)) return;
    await serve(ctx, { platform: 'pf_01', key: ctx.params.key!, region: queryRegion(ctx), arm: 'v2', type: 'json' }, (event, { malformed }) => ({
      type: 'json',
      body: malformed ? truncated(seatsArm(event)) : seatsArm(event),
    }));
  });
  router.get('/api/v1/events/:key/availability', async (ctx) => {
    if (!guarded(ctx)) return;
    await serve(ctx, { platform: 'pf_01', key: ctx.params.key!, region: queryRegion(ctx), arm: 'v1', type: 'json' }, (event, { malformed }) => ({
      type: 'json',
      body: malformed ? truncated(availabilityArm(event)) : availabilityArm(event),
    }));
  });
}

/** The `malformed` variant of a JSON arm: cut off half-way. */
function truncated(value: object): string {
  const json = JSON.stringify(value);
  return json.slice(0, Math.floor(json.length / 2));
}

/**
 * pf_01 as one of the platforms; mounted alone it has a protection of its own. The simulator
 * mounts it with mountPf01 instead, to share the protection with its control API.
 */
export const pf01: SimPlatform = {
  platform: 'pf_01',
  mount(router, serve) {
    mountPf01(router, serve, new Pf01Protection());
  },
};
