// Fixed calendar-minute rate limiting shared by every gateway replica: one atomic
// upsert-and-return per request, so concurrent requests can never slip past the limit.
import type { Db } from '../../db/connection.ts';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Whole seconds until the current window ends (at least 1). */
  resetSeconds: number;
}

const WINDOW_MS = 60_000;

export class RateLimiter {
  constructor(
    private readonly db: Db,
    private readonly now: () => number = Date.now,
  ) {}

  async hit(subject: string, limit: number): Promise<RateDecision> {
    const t = this.now();
    const windowStart = t - (t % WINDOW_MS);
    const { rows } = await this.db.raw(
      `INSERT INTO rate_limit_windows AS w (subject, window_start, hits) VALUES (?, ?, 1)
       ON CONFLICT (subject, window_start) DO UPDATE SET hits = w.hits + 1
       RETURNING hits`,
      [subject, new Date(windowStart)],
    );
    const hits = Number(rows[0].hits);
    return {
      allowed: hits <= limit,
      limit,
      remaining: Math.max(0, limit - hits),
      resetSeconds: Math.max(1, Math.ceil((windowStart + WINDOW_MS - t) / 1000)),
    };
  }

  /** Drops finished windows; run periodically. */
  async prune(): Promise<number> {
    return this.db('rate_limit_windows')
      .where('window_start', '<', new Date(this.now() - 2 * WINDOW_MS))
      .delete();
  }
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
