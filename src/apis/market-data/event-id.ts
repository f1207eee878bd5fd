// Marketplace A event ids in paths (spec 4.1, 7.2): `E-<digits>`, whose numeric part is the
// event's catalog id (migration 005). Shared by GET marketplace_a/{event_id} and the sales list.
//
// Accepted: a capital `E`, a hyphen, one or more ASCII digits, nothing else (`e-12`, `E12`,
// `E-12 `, `E-+12` are 400 INVALID_MARKETPLACE_A_ID). Leading zeros name the same number, so
// `E-0012` is event 12. A well-formed id that cannot name a marketplace A event (0, or at or
// above the catalog ids given to events known only from marketplace B, however many digits)
// is 404 EVENT_NOT_FOUND without a query: it is well-formed, there is just no such event.
import { z } from 'zod';
import { MarketDataError } from './errors.ts';
import { quoted } from './query-params.ts';

const EVENT_ID = /^E-([0-9]+)$/;

/** The path parameter as the OpenAPI document shows it. */
export const marketplaceAEventIdParams = z.object({
  event_id: z.string().regex(EVENT_ID).meta({ description: 'E-<digits>; the digits are the event id', example: 'E-104729' }),
});

/**
 * First catalog id of the events known only from marketplace B (`events_local_id_seq` in
 * migration 005); marketplace A's ids are all below it, and well inside Number's exact range.
 */
export const LOCAL_EVENT_ID_START = 1_000_000_000_000;

export function eventNotFound(raw: string): MarketDataError {
  return new MarketDataError('EVENT_NOT_FOUND', `no tracked marketplace A event ${quoted(raw)}`);
}

/** The catalog id named by a path's `E-<digits>`; throws the 7.2 error otherwise. */
export function marketplaceAEventId(raw: string): number {
  const m = EVENT_ID.exec(raw);
  if (!m) {
    throw new MarketDataError('INVALID_MARKETPLACE_A_ID', `event_id must be E-<digits>, for example E-12345; got ${quoted(raw)}`);
  }
  const digits = m[1]!.replace(/^0+/, '');
  // Checked on the text first: a hundred digits would still parse, but not exactly.
  if (digits === '' || digits.length > String(LOCAL_EVENT_ID_START).length) throw eventNotFound(raw);
  const id = Number(digits);
  if (id >= LOCAL_EVENT_ID_START) throw eventNotFound(raw);
  return id;
}
