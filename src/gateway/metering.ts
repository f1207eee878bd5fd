// Check 4: billing. A paid request reserves its credits before the API runs; when the API
// answers, the reservation is captured (2xx-4xx: served, or the API's own 4xx, billed once)
// or released (5xx: never billed). Denials are 402s in the gateway envelope.
import type { Middleware } from 'koa';
import { BillingUnavailableError } from '../billing/provider.ts';
import { ApiError } from './api-error.ts';
import type { Operation } from './catalog.ts';
import { GatewayError } from './errors.ts';
import type { RequestState } from './request-state.ts';

export function meter(op: Operation): Middleware<RequestState> {
  return async (ctx, next) => {
    const credits = typeof op.cost === 'function' ? op.cost(ctx.query) : op.cost;
    if (credits === 0) return next();
    const { billing, metrics } = ctx.state.services;
    const { requestId, log } = ctx.state;
    const p = ctx.state.principal!;
    let auth;
    try {
      auth = await billing.authorize({ accountId: p.accountId, keyId: p.keyId, requestId, operation: ctx.state.operationId!, credits });
    } catch (err) {
      if (err instanceof BillingUnavailableError) {
        log.error({ err: err.cause }, 'billing unavailable');
        throw new GatewayError('service_unavailable', 'billing backend unavailable');
      }
      throw err;
    }
    if (!auth.ok) throw new GatewayError(auth.denial);
    ctx.state.credits = credits;

    let status = 500;
    try {
      await next();
      status = ctx.status;
    } catch (err) {
      status = err instanceof ApiError ? err.status : 500;
      throw err;
    } finally {
      try {
        if (status >= 500) {
          ctx.state.credits = 0;
          await billing.release(requestId, status);
        } else {
          await billing.capture(requestId, status);
          metrics.credits.inc({ api: op.api }, credits);
        }
      } catch (err) {
        // The reservation stays 'reserved' and the sweeper releases it: a failure here can
        // under-bill one request, never double-bill.
        log.error({ err }, 'could not settle reservation');
      }
    }
  };
}
