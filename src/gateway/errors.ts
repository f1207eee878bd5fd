// The gateway's error envelope (spec 7.1): `{error: {code, message}}`, one code-to-status map.
import { ApiError } from './api-error.ts';

export const GATEWAY_ERRORS = {
  unauthenticated: 401,
  invalid_credentials: 401,
  forbidden: 403,
  limit_reached: 402,
  no_subscription: 402,
  no_billing_account: 402,
  plan_unavailable: 402,
  payment_required: 402,
  invalid_parameter: 400,
  rate_limited: 429,
  too_many_connections: 429,
  not_found: 404,
  service_unavailable: 502,
} as const;

export type GatewayErrorCode = keyof typeof GATEWAY_ERRORS;

const DEFAULT_MESSAGES: Record<GatewayErrorCode, string> = {
  unauthenticated: 'an API key is required in the apikey header',
  invalid_credentials: 'the API key was rejected',
  forbidden: 'this API key is not granted this API',
  limit_reached: 'credits used have reached the plan hard cap',
  no_subscription: 'no active or trialing subscription',
  no_billing_account: 'this API key has no billing account',
  plan_unavailable: 'the plan is misconfigured; contact support',
  payment_required: 'billing denied this request',
  invalid_parameter: 'a quantity-billed parameter is out of range or malformed',
  rate_limited: 'rate limit exceeded; retry after the window resets',
  too_many_connections: 'too many open stream connections; close one before opening another',
  not_found: 'no such route',
  service_unavailable: 'upstream service unavailable',
};

/**
 * The gateway's own refusals and failures. Never billable (spec 7.7): one thrown after a paid
 * request was admitted (a route's own rate limit, a backend found down) has its credits released.
 */
export class GatewayError extends ApiError {
  readonly status: number;
  override readonly billable = false;
  constructor(
    readonly code: GatewayErrorCode,
    message: string = DEFAULT_MESSAGES[code],
  ) {
    super(message);
    this.status = GATEWAY_ERRORS[code];
  }
  body(): unknown {
    return { error: { code: this.code, message: this.message } };
  }
}
