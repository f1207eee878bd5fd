// First middleware: gives each request its id (X-Request-Id, in every log line), its logger
// and the services, and writes one access-log line and the request metrics when it ends.
import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import { KEY_PREFIX } from './keys.ts';
import type { RequestState, Services } from './request-state.ts';

const CLIENT_ID_SHAPE = /^[\x21-\x7e]{1,128}$/;
/** Anything that carries an API key: a client that sends its key as its request id must not get it logged. */
const CONTAINS_KEY = new RegExp(`${KEY_PREFIX}[0-9A-Za-z]{8,}`);
const KEYS = new RegExp(CONTAINS_KEY.source, 'g');

function loggableClientId(value: string): boolean {
  return CLIENT_ID_SHAPE.test(value) && !CONTAINS_KEY.test(value);
}

export function requestContext(services: Services): Middleware<RequestState> {
  return async (ctx, next) => {
    const started = performance.now();
    const requestId = randomUUID();
    const clientRequestId = ctx.get('x-request-id');
    ctx.state.requestId = requestId;
    ctx.state.services = services;
    ctx.state.log = services.log.child({
      request_id: requestId,
      ...(loggableClientId(clientRequestId) ? { client_request_id: clientRequestId } : {}),
    });
    ctx.set('X-Request-Id', requestId);
    try {
      await next();
    } finally {
      const seconds = (performance.now() - started) / 1000;
      const operation = ctx.state.operationId ?? 'unmatched';
      services.metrics.requests.inc({ operation, status: String(ctx.status) });
      services.metrics.duration.observe({ operation }, seconds);
      const p = ctx.state.principal;
      ctx.state.log.info(
        {
          method: ctx.method,
          path: ctx.path.replace(KEYS, '[redacted]'),
          status: ctx.status,
          ms: Math.round(seconds * 1e4) / 10,
          operation,
          key_id: p?.keyId,
          account_id: p?.accountId,
          credits: ctx.state.credits,
        },
        'request',
      );
    }
  };
}
