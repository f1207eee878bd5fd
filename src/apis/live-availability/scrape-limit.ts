// The per-account, per-platform limit on on-demand scrapes (issue 36). On-demand scrapes are not
// paced per address (docs/scraping.md), so without it one account could spend a platform's
// request budget: an account, over all its keys, may send at most its plan's number
// (SCRAPE_REQUESTS_PER_PLATFORM_PER_MINUTE when the plan sets none) of POST /events/scrape to one
// platform per calendar minute. Counted in the gateway's rate-limit windows, one atomic upsert
// per request (never read and then incremented), after the body is known valid (a bad body stays
// its 400) and before the scrape starts. The key's own limit (30 a minute by default) applies
// first, at admission. A refusal is the gateway's 429 `rate_limited` with Retry-After, as the
// key's limit answers; it is a GatewayError, so the credits reserved at admission are released
// (spec 7.7: rate-limited requests are never billed).
import { z } from 'zod';
import { GatewayError } from '../../gateway/errors.ts';
import { appendRateLimitHeaders } from '../../gateway/rate-limit.ts';
import type { RouteContext } from '../../gateway/route.ts';
import type { PlatformKey } from '../../platform/registry.ts';

/** The body of a refusal, for the route's OpenAPI 429 response. */
export const scrapeLimitedSchema = z
  .object({ error: z.object({ code: z.literal('rate_limited'), message: z.string() }) })
  .meta({ description: 'Gateway envelope (spec 7.1), code rate_limited' });

/** The rate-limit window's subject: the account, not the key, so every key of it shares one budget. */
export function scrapeLimitSubject(accountId: number, platform: PlatformKey): string {
  return `scrape:${accountId}:${platform}`;
}

/** The policy's name in RateLimit-Policy and RateLimit, beside the key's `default`. */
export function scrapeLimitPolicy(platform: PlatformKey): string {
  return `scrape_${platform}`;
}

/** The account's limit: its plan's, else the service default. */
export function scrapeLimit(ctx: RouteContext): number {
  return ctx.state.principal!.scrapeRequestsPerPlatformPerMinute ?? ctx.state.services.config.SCRAPE_REQUESTS_PER_PLATFORM_PER_MINUTE;
}

/**
 * Counts this scrape in its account's window for `platform`, puts the policy's RateLimit headers
 * on the answer, and refuses with 429 past the limit. A limiter that cannot be reached fails
 * closed (502, not billed): an uncounted scrape could spend the budget this protects.
 */
export async function enforceScrapeLimit(ctx: RouteContext, platform: PlatformKey): Promise<void> {
  const { accountId } = ctx.state.principal!;
  const limit = scrapeLimit(ctx);
  let d;
  try {
    // The account's lane (AdmissionCall.lane): its rows are never locked by another lane's group.
    d = await ctx.state.services.limiter.hit(scrapeLimitSubject(accountId, platform), limit, accountId);
  } catch (err) {
    ctx.state.log.error({ err }, 'rate limiter unavailable');
    throw new GatewayError('service_unavailable');
  }
  appendRateLimitHeaders(ctx, scrapeLimitPolicy(platform), d);
  if (d.allowed) return;
  const refusal = new GatewayError('rate_limited', `more than ${limit} scrape requests to ${platform} in the current minute for this account`);
  refusal.headers = { 'Retry-After': String(d.resetSeconds) };
  throw refusal;
}
