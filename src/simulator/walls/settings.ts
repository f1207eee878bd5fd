// What a site's bot wall checks, switch by switch (docs/simulator.md, "Bot walls"). Each platform
// and marketplace has its own settings: a real site turns its vendor's checks on one by one, and a
// test or a benchmark must be able to do the same at run time (POST /_sim/walls).
import { z } from 'zod';

export interface WallSettings {
  /** The wall at all; off: every request goes through unjudged (the default: tests use http://). */
  enabled: boolean;
  /** Refuse a request that did not come over TLS (a site behind such a wall is HTTPS only). */
  plaintext: boolean;
  /** The ClientHello's JA4 must be a known one of the browser family the user agent claims. */
  tls: boolean;
  /** HTTP/2, with the claimed browser's SETTINGS and pseudo-header order. */
  http2: boolean;
  /** Header order, client hints consistent with the user agent, no HeadlessChrome, accept-language. */
  headers: boolean;
  /** The family's bot cookie: issued, rotated, bound to its user agent. */
  cookie: boolean;
  /** A cookie older than this is replaced (Set-Cookie) on the next answer. */
  cookieRotateMs: number;
  /** After a rotation the replaced value is still taken for this long, then refused. */
  cookieGraceMs: number;
  /** A cookie never rotated (its client went quiet) is forgotten this long after it was issued (its Max-Age). */
  cookieMaxAgeMs: number;
  /** New cookies one source address may be given in any 60 s; null: no bound. */
  cookieIssuesPerAddressPerMinute: number | null;
}
export type WallSettingsInput = Partial<WallSettings>;

/** Every check on; the wall itself off until asked for. */
export const DEFAULT_WALL_SETTINGS: Readonly<WallSettings> = Object.freeze({
  enabled: false,
  plaintext: true,
  tls: true,
  http2: true,
  headers: true,
  cookie: true,
  cookieRotateMs: 300_000,
  cookieGraceMs: 30_000,
  // __cf_bm's own lifetime.
  cookieMaxAgeMs: 1_800_000,
  cookieIssuesPerAddressPerMinute: 30,
});

const DAY_MS = 86_400_000;

/** A settings change as the control API and startSimulator() take it. */
export const wallSettingsInputSchema = z.strictObject({
  enabled: z.boolean().optional(),
  plaintext: z.boolean().optional(),
  tls: z.boolean().optional(),
  http2: z.boolean().optional(),
  headers: z.boolean().optional(),
  cookie: z.boolean().optional(),
  cookieRotateMs: z.number().int().min(1).max(DAY_MS).optional(),
  cookieGraceMs: z.number().int().min(0).max(DAY_MS).optional(),
  cookieMaxAgeMs: z.number().int().min(1).max(30 * DAY_MS).optional(),
  cookieIssuesPerAddressPerMinute: z.number().int().min(1).max(1_000_000).nullable().optional(),
});

/** `base` with the fields `input` gives; an undefined field leaves the base's (a spread would copy it). */
export function withSettings(base: Readonly<WallSettings>, input: WallSettingsInput): WallSettings {
  const out: WallSettings = { ...base };
  for (const key of Object.keys(out) as (keyof WallSettings)[]) {
    const value = input[key];
    if (value !== undefined) (out as unknown as Record<string, unknown>)[key] = value;
  }
  return out;
}
