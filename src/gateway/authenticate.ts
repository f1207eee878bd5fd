// Check 1 of 5.6: who is calling. Missing key: 401 unauthenticated, from the header alone (no
// key store or limiter call); rejected key (unknown, revoked, expired, malformed): 401
// invalid_credentials; key store unreachable: 502, fail closed. Rejected keys are rate limited
// per client address so keys cannot be guessed at speed; a request that sends no key guesses
// nothing and is not counted (spec 5.2: it is always 401 unauthenticated). The per-address limit
// is checked before the key store is asked (a key not in the cache), not only after a rejection:
// an address past it gets 429 for any key not already known valid, without a lookup.
import type { RateDecision } from './rate-limit.ts';
import type { Middleware } from 'koa';
import { GatewayError } from './errors.ts';
import { enforceRateDecision, rateLimitHeaders } from './rate-limit.ts';
import type { RequestState } from './request-state.ts';
import type { RouteContext } from './route.ts';

async function limitRejectedKey(ctx: RouteContext): Promise<void> {
  const { limiter, config, log } = ctx.state.services;
  try {
    enforceRateDecision(ctx, 'unauthenticated', await limiter.hitAddress(ctx.ip, config.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE));
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    // The limiter's store is down: the answer is a 401 either way, so say that.
    log.warn({ err }, 'per-address rate limiter unavailable');
  }
}

/** Refuses (429) before a key lookup when the address has spent its budget of rejected keys. */
async function addressBeforeLookup(ctx: RouteContext): Promise<void> {
  const { limiter, config, log } = ctx.state.services;
  let spent: RateDecision | null;
  try {
    spent = await limiter.addressSpent(ctx.ip, config.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE);
  } catch (err) {
    // The lookup that follows fails closed if the store is down; nothing to refuse here.
    log.warn({ err }, 'per-address rate limiter unavailable');
    return;
  }
  // Spent: the next rejected key would be refused anyway, so no key is looked up until the window ends.
  if (spent) enforceRateDecision(ctx, 'unauthenticated', spent);
}

export const authenticate: Middleware<RequestState> = async (ctx, next) => {
  const key = ctx.get('apikey');
  if (!key) throw new GatewayError('unauthenticated');
  let principal;
  try {
    principal = await ctx.state.services.keys.verify(key, () => addressBeforeLookup(ctx));
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    ctx.state.log.error({ err }, 'key store unreachable');
    throw new GatewayError('service_unavailable', 'authentication backend unavailable');
  }
  if (!principal) {
    await limitRejectedKey(ctx);
    throw new GatewayError('invalid_credentials');
  }
  ctx.state.principal = principal;
  await next();
};

/** Check 2: the key must be granted the API it calls. The Account API is open to every key. */
export const checkAccess: Middleware<RequestState> = async (ctx, next) => {
  const api = ctx.state.api;
  const p = ctx.state.principal!;
  if (api !== 'account' && (!api || !p.apis.includes(api))) {
    // Not counted (access comes before the limit), but the answer still tells the client
    // where its window stands, as every keyed response does.
    const { limiter, config } = ctx.state.services;
    const d = await limiter.peek(`key:${p.keyId}`, p.rateLimitPerMinute ?? config.RATE_LIMIT_PER_MINUTE).catch(() => null);
    if (d) ctx.set(rateLimitHeaders('default', d));
    throw new GatewayError('forbidden');
  }
  await next();
};
