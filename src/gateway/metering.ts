// Checks 3 and 4 of spec 5.6: the rate limit, then billing. A free request is only counted in
// its key's window. A paid request is admitted in one step (BillingProvider.admit): counted,
// and only when within the limit, its credits reserved. When the API answers, the reservation
// is captured (2xx-4xx: served, or the API's own 4xx, billed once) or released (5xx, or a
// refusal the gateway made after admission, such as the per-platform scrape limit: never
// billed, spec 7.7). A capture is not awaited: the response does not wait on bookkeeping, and a
// capture lost to a crash is released by the sweeper (under-billing, never double-billing). A
// release is awaited, so the credits are back before the response and an immediate retry at the
// hard cap is not refused. Either happens once: this `finally` runs once per request, and the
// store settles only a reservation still reserved.
import type { Middleware } from 'koa';
import { BillingUnavailableError } from '../billing/provider.ts';
import { ApiError } from './api-error.ts';
import type { Operation } from './catalog.ts';
import { GatewayError } from './errors.ts';
import { enforceRateDecision, rateDecision, rateWindow } from './rate-limit.ts';
import type { RequestState } from './request-state.ts';
import type { RouteContext } from './route.ts';

function keyLimit(ctx: RouteContext): { subject: string; limit: number } {
  const p = ctx.state.principal!;
  return { subject: `key:${p.keyId}`, limit: p.rateLimitPerMinute ?? ctx.state.services.config.RATE_LIMIT_PER_MINUTE };
}

/** Counts the request in its key's window (free routes, and paid ones refused before billing). */
async function count(ctx: RouteContext): Promise<void> {
  const { subject, limit } = keyLimit(ctx);
  let d;
  try {
    d = await ctx.state.services.limiter.hit(subject, limit, ctx.state.principal!.accountId);
  } catch (err) {
    ctx.state.log.error({ err }, 'rate limiter unavailable');
    throw new GatewayError('service_unavailable');
  }
  enforceRateDecision(ctx, 'default', d);
}

export function admit(op: Operation): Middleware<RequestState> {
  return async (ctx, next) => {
    let credits: number;
    try {
      credits = typeof op.cost === 'function' ? op.cost(ctx.query) : op.cost;
    } catch (err) {
      await count(ctx); // a rate-limited request answers 429 even when its parameter is bad
      throw err;
    }
    if (credits === 0) {
      await count(ctx);
      return next();
    }

    const { billing, metrics, limiter } = ctx.state.services;
    const { requestId, log } = ctx.state;
    const p = ctx.state.principal!;
    const { subject, limit } = keyLimit(ctx);
    const window = rateWindow(limiter.now());
    let admission;
    try {
      admission = await billing.admit({
        accountId: p.accountId,
        keyId: p.keyId,
        requestId,
        operation: ctx.state.operationId!,
        credits,
        rate: { subject, windowStart: window.start, limit },
      });
    } catch (err) {
      if (err instanceof BillingUnavailableError) {
        log.error({ err: err.cause }, 'billing unavailable');
        throw new GatewayError('service_unavailable', 'billing backend unavailable');
      }
      throw err;
    }
    enforceRateDecision(ctx, 'default', rateDecision(admission.hits, limit, window.resetSeconds));
    if (admission.rateLimited) throw new Error('unreachable: a rate-limited admission is refused above');
    if (!admission.authorization.ok) throw new GatewayError(admission.authorization.denial);
    ctx.state.credits = credits;

    let status = 500;
    let billable = true;
    try {
      await next();
      status = ctx.status;
    } catch (err) {
      status = err instanceof ApiError ? err.status : 500;
      billable = err instanceof ApiError ? err.billable : true;
      throw err;
    } finally {
      const unsettled = (err: unknown) => log.error({ err }, 'could not settle reservation; the sweeper will release it');
      if (status >= 500 || !billable) {
        ctx.state.credits = 0;
        // Awaited: the credits are back before the client hears of the failure, so a retry at
        // the hard cap fits. Rare, and one short statement.
        await billing.release(requestId, status).catch(unsettled);
      } else {
        void billing
          .capture(requestId, status)
          .then(() => metrics.credits.inc({ api: op.api }, credits))
          .catch(unsettled);
      }
    }
  };
}
