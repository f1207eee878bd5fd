// Renders every failure in the envelope of the API that was called: ApiErrors as they are,
// anything unexpected through that API's failure renderer (never leaking internals), and
// requests no route matched as the gateway's 404 not_found.
import type { Middleware } from 'koa';
import { ApiError, classifyFailure, type ApiFailureRenderer } from './api-error.ts';
import type { ApiName } from './catalog.ts';
import { GatewayError } from './errors.ts';
import type { RequestState } from './request-state.ts';

class GatewayInternalError extends ApiError {
  readonly status = 500;
  body(): unknown {
    return { error: { code: 'internal_error', message: 'internal error' } };
  }
}

export function errorBoundary(renderers: Partial<Record<ApiName, ApiFailureRenderer>>): Middleware<RequestState> {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body == null && !ctx.state.operationId) throw new GatewayError('not_found');
    } catch (err) {
      let rendered: ApiError;
      const renderer = ctx.state.api ? renderers[ctx.state.api] : undefined;
      if (err instanceof ApiError) {
        rendered = err;
      } else if (renderer) {
        rendered = renderer.fromUnexpected(err);
      } else {
        rendered = classifyFailure(err) === 'internal' ? new GatewayInternalError() : new GatewayError('service_unavailable');
      }
      if (rendered.status >= 500) ctx.state.log.error({ err }, 'request failed');
      if (err instanceof GatewayError) ctx.state.services.metrics.denials.inc({ code: err.code });
      ctx.status = rendered.status;
      ctx.body = rendered.body();
      ctx.set(rendered.headers);
    }
  };
}
