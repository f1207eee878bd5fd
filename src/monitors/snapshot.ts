// A target's snapshot: what a watchlist monitor diffs. The scrape response (spec 2.5) reduced to
// what the item filters look at, in one shape for both section types, in a canonical order so
// that equal content hashes equally and a poller stores a new row only when something changed.
//
// Offers (of an offer section, or sold without a seat in a seat map: pf_01 resale lots and
// standing counts): one snapshot offer each; an offer's tickets count as one block (a listing of
// N tickets is sold together). Seats: grouped by (row, price, flags); the group's `block` is its
// longest run of consecutive seat numbers, which is what `seat_quantity` asks for. Tickets known
// only as a count (pf_01's primary counts without its seat arm) carry no price per ticket, row or
// flag, so they are not read: what a failed pf_01 arm leaves is recorded as unknown (`unknown`),
// never as stock 0 (issue 24).
import { createHash } from 'node:crypto';
import type { ScrapeResponse } from '../scrapers/response.ts';

export type TicketType = 'standard' | 'resale' | 'platinum' | 'general_admission';

export interface SnapshotOffer {
  price: number;
  quantity: number;
  /** Most tickets of this offer that sit together (seat_quantity compares with it). */
  block: number;
  ticket_type: TicketType;
  restricted_view: boolean;
  accessible: boolean;
  presale: boolean;
  /** Row name for seat-map seats; null when the platform gives none. */
  row: string | null;
}

export interface SnapshotSection {
  name: string;
  currency: string | null;
  offers: SnapshotOffer[];
}

/**
 * The snapshot format. A baseline of another format is not compared with (record-poll.ts): what
 * a format reads differently (format 2 reads pf_01's resale and standing tickets in seated
 * sections, with their flags) would otherwise notify as if the platform had changed.
 */
export const SNAPSHOT_FORMAT = 2;

export interface TargetSnapshot {
  /** SNAPSHOT_FORMAT when built; absent in snapshots stored before there was one (format 1). */
  format?: number;
  /** The event's start as the platform states it (RFC 3339), for date_filter. */
  starts_at: string | null;
  sections: SnapshotSection[];
  /**
   * Ticket kinds this snapshot does not know (a pf_01 data arm failed): unknown, not zero. Their
   * offers are absent, and no rule compares them; absent when every kind was read, so a full
   * snapshot hashes as it always did.
   */
  unknown?: TicketType[];
}

/**
 * What a failed pf_01 arm leaves unknown. Without v1 the resale lots and standing counts are not
 * read. Without v2 no seat is read: what v1 still says of the seated kinds (a count per kind at
 * one price, without rows, blocks or flags) is not what the item filters look at, so those kinds
 * are unknown rather than read wrong; v1's own resale lots and standing counts are read whole.
 */
function unknownKinds(degraded: string | null | undefined): TicketType[] {
  if (degraded === 'v1') return ['general_admission', 'resale'];
  if (degraded === 'v2') return ['platinum', 'standard'];
  return [];
}

type Flags = Pick<SnapshotOffer, 'ticket_type' | 'restricted_view' | 'accessible' | 'presale'>;

/** Longest run of consecutive integers among seat numbers; a non-numeric seat is a run of one. */
function longestRun(seats: readonly string[]): number {
  const numbers = [...new Set(seats.filter((s) => /^\d{1,9}$/.test(s)).map(Number))].sort((a, b) => a - b);
  let best = seats.length > 0 ? 1 : 0;
  let run = 1;
  for (let i = 1; i < numbers.length; i++) {
    run = numbers[i] === numbers[i - 1]! + 1 ? run + 1 : 1;
    if (run > best) best = run;
  }
  return best;
}

/** Code-unit order: localeCompare depends on the process locale and ties distinct strings. */
function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function offerOrder(a: SnapshotOffer, b: SnapshotOffer): number {
  return (
    a.price - b.price ||
    byCodeUnits(a.row ?? '', b.row ?? '') ||
    byCodeUnits(a.ticket_type, b.ticket_type) ||
    Number(a.restricted_view) - Number(b.restricted_view) ||
    Number(a.accessible) - Number(b.accessible) ||
    Number(a.presale) - Number(b.presale) ||
    a.quantity - b.quantity
  );
}

/** The same key order whatever built it, so equal offers serialise (and hash) equally. */
function canonical(o: SnapshotOffer): SnapshotOffer {
  const { price, quantity, block, ticket_type, restricted_view, accessible, presale, row } = o;
  return { price, quantity, block, ticket_type, restricted_view, accessible, presale, row };
}

function flagsOf(x: Flags): Flags {
  return { ticket_type: x.ticket_type, restricted_view: x.restricted_view, accessible: x.accessible, presale: x.presale };
}

export function toSnapshot(response: Pick<ScrapeResponse, 'sections' | 'event_info'> & { degraded?: string | null }): TargetSnapshot {
  const unknown = unknownKinds(response.degraded);
  const sections: SnapshotSection[] = [];
  for (const section of Object.values(response.sections)) {
    const offers: SnapshotOffer[] = [];
    for (const o of section.offers) {
      if (o.quantity > 0) offers.push({ price: o.price, quantity: o.quantity, block: o.quantity, row: null, ...flagsOf(o) });
    }
    if ('seats' in section && section.seats.length > 0) {
      const groups = new Map<string, { seats: string[]; offer: Omit<SnapshotOffer, 'quantity' | 'block'> }>();
      for (const seat of section.seats) {
        const key = JSON.stringify([seat.row, seat.price, seat.ticket_type, seat.restricted_view, seat.accessible, seat.presale]);
        let g = groups.get(key);
        if (!g) groups.set(key, (g = { seats: [], offer: { price: seat.price, row: seat.row, ...flagsOf(seat) } }));
        g.seats.push(seat.seat);
      }
      for (const g of groups.values()) offers.push({ ...g.offer, quantity: g.seats.length, block: longestRun(g.seats) });
    }
    const known = unknown.length ? offers.filter((o) => !unknown.includes(o.ticket_type)) : offers;
    known.sort(offerOrder);
    sections.push({ name: section.name, currency: section.currency, offers: known.map(canonical) });
  }
  sections.sort((a, b) => byCodeUnits(a.name, b.name));
  return { format: SNAPSHOT_FORMAT, starts_at: response.event_info?.starts_at ?? null, sections, ...(unknown.length ? { unknown } : {}) };
}

/**
 * A partial snapshot completed from the previous one: each kind it does not know keeps the
 * offers last read for it, so a partial read never moves the baseline of what it did not read,
 * and the part's recovery with nothing changed on the platform compares equal. A kind stays
 * unknown only when the previous snapshot did not know it either (or there is none).
 */
export function carryUnknown(previous: TargetSnapshot | null, next: TargetSnapshot): TargetSnapshot {
  if (!next.unknown?.length || !previous || !sameFormat(previous, next)) return next;
  const missing = new Set(next.unknown);
  const byName = new Map(next.sections.map((s) => [s.name, { name: s.name, currency: s.currency, offers: [...s.offers] }]));
  for (const section of previous.sections) {
    const carried = section.offers.filter((o) => missing.has(o.ticket_type));
    if (carried.length === 0) continue;
    let into = byName.get(section.name);
    if (!into) byName.set(section.name, (into = { name: section.name, currency: section.currency, offers: [] }));
    into.offers.push(...carried);
  }
  const sections = [...byName.values()].map((s) => ({ ...s, offers: s.offers.sort(offerOrder).map(canonical) })).sort((a, b) => byCodeUnits(a.name, b.name));
  const unknown = next.unknown.filter((k) => previous.unknown?.includes(k));
  return { format: next.format, starts_at: next.starts_at, sections, ...(unknown.length ? { unknown } : {}) };
}

/** Two snapshots read by the same rules, so comparable. */
export function sameFormat(a: TargetSnapshot, b: TargetSnapshot): boolean {
  return (a.format ?? 1) === (b.format ?? 1);
}

/** sha-256 of the canonical JSON: equal snapshots, equal hashes. */
export function snapshotHash(s: TargetSnapshot): string {
  return createHash('sha256').update(JSON.stringify(s)).digest('hex');
}
