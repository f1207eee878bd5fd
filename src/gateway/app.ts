// Builds the gateway: one Koa app in front of every API. Stateless; scale by replicas.
import Koa from 'koa';
import type { ApiFailureRenderer } from './api-error.ts';
import type { ApiName } from './catalog.ts';
import { docsPage } from './docs-page.ts';
import { errorBoundary } from './error-boundary.ts';
import { buildOpenApi } from './openapi.ts';
import { requestContext } from './request-context.ts';
import type { RequestState, Services } from './request-state.ts';
import type { RouteSpec } from './route.ts';
import { buildRouter } from './router.ts';
import { STRIPE_WEBHOOK_PATH } from '../billing/stripe/webhook-endpoint.ts';
import { buildAsyncApi } from '../stream/asyncapi.ts';

export interface ApiModule {
  api: ApiName;
  routes: readonly RouteSpec[];
  failures: ApiFailureRenderer;
}

export function createGateway(services: Services, apis: readonly ApiModule[]): Koa<RequestState> {
  // Behind the trusted reverse proxy, only the X-Forwarded-For entry that proxy appended (the
  // last one) is the client's address; earlier entries are whatever the client sent, and
  // trusting them would let a caller rotate addresses past the unauthenticated rate limit.
  const app = new Koa<RequestState>({ proxy: services.config.TRUST_PROXY, maxIpsCount: 1 });
  // Errors are rendered by the boundary; Koa's default handler would only print them again.
  app.silent = true;
  const routes = apis.flatMap((a) => a.routes);
  const openapi = JSON.stringify(buildOpenApi(routes, { localPort: services.config.PORT }));
  // The stream's document too, though the stream node serves it itself: /docs/stream renders it
  // from this origin.
  const asyncapi = JSON.stringify(buildAsyncApi());
  const router = buildRouter(routes);

  app.use(requestContext(services));
  app.use(errorBoundary(Object.fromEntries(apis.map((a) => [a.api, a.failures]))));
  app.use(async (ctx, next) => {
    // GET only: any other method, HEAD included, is 404 not_found as on every route (spec 7.1).
    if (ctx.method === 'GET' && ctx.path === '/openapi.json') {
      ctx.state.operationId = 'openapi';
      ctx.type = 'application/json';
      ctx.body = openapi;
      return;
    }
    if (ctx.method === 'GET' && ctx.path === '/asyncapi.json') {
      ctx.state.operationId = 'asyncapi';
      ctx.type = 'application/json';
      ctx.body = asyncapi;
      return;
    }
    // Stripe's callback: signed by Stripe, not by an API key, and never metered.
    if (ctx.method === 'POST' && ctx.path === STRIPE_WEBHOOK_PATH && ctx.state.services.stripeWebhook) {
      await ctx.state.services.stripeWebhook(ctx);
      return;
    }
    await next();
  });
  app.use(router.routes());
  // The rendered reference of both documents; public like them. After the router, so it sees
  // only paths no route matched and adds nothing to an API request.
  app.use(docsPage());
  return app;
}
