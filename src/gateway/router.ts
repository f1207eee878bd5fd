// Mounts each API's routes behind the gateway's checks, in the order of spec 5.6:
// authentication, access, rate limit, then billing, then the API's handler. A route answers
// only its catalog method: any other method, HEAD included, matches no route and is the
// gateway's 404 not_found (spec 7.1), before any key is looked at or anything is counted.
import Router, { type Layer } from '@koa/router';
import type { Middleware } from 'koa';
import { authenticate, checkAccess } from './authenticate.ts';
import { operation, type Operation } from './catalog.ts';
import { GatewayError } from './errors.ts';
import { admit } from './metering.ts';
import type { RequestState } from './request-state.ts';
import type { RouteSpec } from './route.ts';

function matched(operationId: string, op: Operation): Middleware<RequestState> {
  return async (ctx, next) => {
    ctx.state.operationId = operationId;
    ctx.state.api = op.api;
    for (const [name, pattern] of Object.entries(op.pathPatterns ?? {})) {
      const value = (ctx as unknown as { params: Record<string, string> }).params[name];
      if (value === undefined || !pattern.test(value)) throw new GatewayError('not_found', 'malformed path');
    }
    await next();
  };
}

export function buildRouter(routes: readonly RouteSpec[]): Router<RequestState> {
  const router = new Router<RequestState>();
  for (const spec of routes) {
    const op = operation(spec.operationId);
    const chain: Middleware<RequestState>[] = [matched(spec.operationId, op), authenticate, checkAccess, admit(op)];
    const layer = router.register(op.path, [op.method], [...chain, (ctx: Parameters<RouteSpec['handler']>[0]) => spec.handler(ctx)] as never) as Layer<RequestState>;
    // @koa/router adds HEAD to every GET route (Layer's method normalisation), which would serve
    // and bill a HEAD as the GET. No operation lists HEAD: take it back out.
    layer.methods = layer.methods.filter((m) => m === op.method);
    if (layer.methods.length !== 1) throw new Error(`route ${op.method} ${op.path} did not register its method`);
  }
  return router;
}
