// Fixed calendar-minute rate limiting shared by every gateway replica: one atomic
// upsert-and-return per request, so concurrent requests can never slip past the limit. Paid
// requests are counted inside their admission (BillingProvider.admit) in the same round trip.
import type { Context } from 'koa';
import { z } from 'zod';
import type { Pool } from '../../db/pool.ts';
import { GroupedCalls } from '../runtime/grouped-calls.ts';
import { GatewayError } from './errors.ts';
import type { AdmissionGroups } from './admissions.ts';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Whole seconds until the current window ends (at least 1). */
  resetSeconds: number;
}

const WINDOW_MS = 60_000;

/** The calendar minute containing `nowMs`, and whole seconds until it ends (at least 1). */
export function rateWindow(nowMs: number): { start: Date; resetSeconds: number } {
  const start = nowMs - (nowMs % WINDOW_MS);
  return { start: new Date(start), resetSeconds: Math.max(1, Math.ceil((start + WINDOW_MS - nowMs) / 1000)) };
}

export function rateDecision(hits: number, limit: number, resetSeconds: number): RateDecision {
  return { allowed: hits <= limit, limit, remaining: Math.max(0, limit - hits), resetSeconds };
}

/** The rate-limit subject of a client address (requests without a valid key). */
function addressSubject(address: string): string {
  return `ip:${address}`;
}

interface Peek {
  subject: string;
  windowStart: Date;
}

/** Peeks read in one query at most. */
const MAX_PEEKS = 256;

/** Counts requests per subject in the current window, through gateway_admit's counting step. */
export class RateLimiter {
  /** One read in flight at a time; peeks that arrive meanwhile share the next (see peek). */
  private readonly peeks = new GroupedCalls<Peek, number>({ send: (batch) => this.readPeeks(batch), maxGroup: MAX_PEEKS });

  constructor(
    private readonly admissions: AdmissionGroups,
    private readonly pool: Pool,
    readonly now: () => number = Date.now,
  ) {}

  /** `lane`: the account of a keyed subject (see AdmissionCall.lane); defaults to the subject. */
  async hit(subject: string, limit: number, lane: number | string = subject): Promise<RateDecision> {
    const w = rateWindow(this.now());
    const row = await this.admissions.admit({
      lane,
      subject,
      windowStart: w.start,
      limit,
      accountId: null,
      credits: null,
      requestId: null,
      keyId: null,
      operation: null,
    });
    return rateDecision(Number(row.hits), limit, w.resetSeconds);
  }

  /**
   * The subject's standing in the current window, without counting a request (for refusals made
   * before the limit, and the address check before every lookup of a key not cached). Peeks that
   * arrive while a read is in flight share the next one: after a restart every request's key is
   * unknown, and one read each (300 at once in bench:stream's reconnect storm) queued on the pool
   * for a third of a second. A read always starts after the peeks it answers arrived.
   */
  async peek(subject: string, limit: number): Promise<RateDecision> {
    const w = rateWindow(this.now());
    const hits = await this.peeks.call({ subject, windowStart: w.start });
    return { ...rateDecision(hits, limit, w.resetSeconds), allowed: true };
  }

  private async readPeeks(batch: Peek[]): Promise<number[]> {
    const { rows } = await this.pool.query<{ hits: number | null }>(
      `SELECT w.hits
         FROM unnest($1::text[], $2::timestamptz[]) WITH ORDINALITY AS u(subject, window_start, ord)
         LEFT JOIN rate_limit_windows w ON w.subject = u.subject AND w.window_start = u.window_start
        ORDER BY u.ord`,
      [batch.map((p) => p.subject), batch.map((p) => p.windowStart)],
    );
    return rows.map((r) => Number(r.hits ?? 0));
  }

  /** Counts one rejected key against the client address's per-minute budget (gateway and stream alike). */
  hitAddress(address: string, limit: number): Promise<RateDecision> {
    return this.hit(addressSubject(address), limit);
  }

  /**
   * Checked before a key is looked up (gateway and stream alike): the refusal to give when the
   * address has spent its budget of rejected keys, so guessing keys costs the key store nothing;
   * null while it has some left. Throws when the limiter's store is down.
   */
  async addressSpent(address: string, limit: number): Promise<RateDecision | null> {
    const d = await this.peek(addressSubject(address), limit);
    return d.remaining > 0 ? null : { ...d, allowed: false };
  }

}

/** Puts the window's headers on the response (every limited answer carries them) and refuses with 429 past the limit. */
export function enforceRateDecision(ctx: Context, policy: string, d: RateDecision): void {
  ctx.set(rateLimitHeaders(policy, d));
  if (!d.allowed) throw new GatewayError('rate_limited', `more than ${d.limit} requests in the current minute`);
}

/**
 * Adds a further policy (a route's own limit) to the answer's RateLimit-Policy and RateLimit
 * beside the key's: both fields are structured-field lists with one item per policy, and repeated
 * header lines are one comma-joined list. Retry-After is the refusal's to set (one value).
 */
export function appendRateLimitHeaders(ctx: Context, policy: string, d: RateDecision): void {
  const h = rateLimitHeaders(policy, { ...d, allowed: true });
  for (const [name, value] of Object.entries(h)) ctx.append(name, value);
}

/** IETF draft RateLimit headers (draft-ietf-httpapi-ratelimit-headers), plus Retry-After on 429. */
export function rateLimitHeaders(policy: string, d: RateDecision): Record<string, string> {
  const headers: Record<string, string> = {
    'RateLimit-Policy': `"${policy}";q=${d.limit};w=60`,
    RateLimit: `"${policy}";r=${d.remaining};t=${d.resetSeconds}`,
  };
  if (!d.allowed) headers['Retry-After'] = String(d.resetSeconds);
  return headers;
}

/** The headers of a 429, for a route that documents its own (RouteSpec responses). */
export const RATE_LIMIT_RESPONSE_HEADERS = {
  'Retry-After': { description: 'Whole seconds until the window ends: retry then, not before', schema: z.number().int().min(1) },
  'RateLimit-Policy': { description: 'IETF draft: each limit that applies, as `"name";q=<requests>;w=60`', schema: z.string() },
  RateLimit: { description: 'IETF draft: each limit\'s state, as `"name";r=<left>;t=<seconds to reset>`', schema: z.string() },
};
