// Errors as values: every non-2xx answer becomes an ApiError carrying the HTTP status, which API
// answered, the machine code of that API's envelope (spec 7.1 to 7.5), the message, the
// X-Request-Id the gateway set, and the body as the OpenAPI document types it.
import type { components } from './generated/openapi.ts';

/** The response header the gateway sets on every answer (quote it in support requests). */
export const REQUEST_ID_HEADER = 'x-request-id';

/**
 * Gateway envelope codes (spec 7.1). The document types `error.code` as a string, so the known
 * values are listed here; an unknown one still comes through as a string.
 */
export type GatewayErrorCode =
  | 'unauthenticated'
  | 'invalid_credentials'
  | 'forbidden'
  | 'limit_reached'
  | 'no_subscription'
  | 'no_billing_account'
  | 'plan_unavailable'
  | 'payment_required'
  | 'invalid_parameter'
  | 'rate_limited'
  | 'not_found'
  | 'service_unavailable'
  | (string & {});

/** Market Data codes (spec 7.2), as the document enumerates them. */
export type MarketDataErrorCode = components['schemas']['MarketDataError']['code'];

/**
 * Live Availability and Watchlist bodies carry only text (`{detail}`, `{error}`); their machine
 * code is the status (spec 7.3, 7.4), named here so callers can switch on one field.
 */
export const LIVE_AVAILABILITY_CODES = {
  400: 'invalid_request',
  404: 'event_not_found',
  408: 'scrape_timeout',
  413: 'body_too_large',
  500: 'scrape_failed',
} as const;
export type LiveAvailabilityErrorCode = (typeof LIVE_AVAILABILITY_CODES)[keyof typeof LIVE_AVAILABILITY_CODES] | `http_${number}`;

export const WATCHLIST_CODES = {
  400: 'invalid_input',
  404: 'not_found',
  413: 'body_too_large',
  500: 'internal_error',
  502: 'upstream_unavailable',
  504: 'upstream_timeout',
} as const;
export type WatchlistErrorCode = (typeof WATCHLIST_CODES)[keyof typeof WATCHLIST_CODES] | 'invalid_json' | `http_${number}`;

/** Account (spec 7.5): `detail` is the code. */
export type AccountErrorCode = 'billing_unavailable' | 'bad_plan_pricing' | 'internal_error' | (string & {});

export type ApiErrorKind =
  | { api: 'gateway'; code: GatewayErrorCode }
  | { api: 'market_data'; code: MarketDataErrorCode }
  | { api: 'live_availability'; code: LiveAvailabilityErrorCode }
  | { api: 'watchlist'; code: WatchlistErrorCode }
  | { api: 'account'; code: AccountErrorCode }
  /** No HTTP answer at all (connection refused, reset, aborted): status 0. */
  | { api: 'network'; code: 'network_error' | 'aborted' }
  /** An answer in none of the envelopes (e.g. a proxy's HTML page). */
  | { api: 'unknown'; code: `http_${number}` };

export type ApiErrorInit<Body> = ApiErrorKind & {
  status: number;
  message: string;
  requestId: string | null;
  /** Milliseconds from Retry-After, when the answer carried one. */
  retryAfterMs: number | null;
  body: Body | undefined;
  /** Retries the client made before giving up with this answer. */
  retries: number;
  cause?: unknown;
};

/** A failed call. An Error, so `throw` works too (see `orThrow`), but returned as a value. */
export class ApiError<Body = unknown> extends Error {
  readonly status: number;
  readonly api: ApiErrorKind['api'];
  readonly code: ApiErrorKind['code'];
  readonly requestId: string | null;
  readonly retryAfterMs: number | null;
  readonly body: Body | undefined;
  readonly retries: number;

  constructor(init: ApiErrorInit<Body>) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'ApiError';
    this.status = init.status;
    this.api = init.api;
    this.code = init.code;
    this.requestId = init.requestId;
    this.retryAfterMs = init.retryAfterMs;
    this.body = init.body;
    this.retries = init.retries;
  }

  /** Narrows on the API and its code, e.g. `err.is('gateway', 'rate_limited')`. */
  is<A extends ApiErrorKind['api']>(api: A, code?: Extract<ApiErrorKind, { api: A }>['code']): boolean {
    return this.api === api && (code === undefined || this.code === code);
  }
}

/** Which API a path belongs to (spec 4), for envelopes that do not say it themselves. */
export function apiOfPath(pathname: string): 'market_data' | 'live_availability' | 'watchlist' | 'account' | 'unknown' {
  if (pathname.startsWith('/svc/data/')) return 'market_data';
  if (pathname.startsWith('/events/')) return 'live_availability';
  // The account's webhooks answer under the Watchlist API's envelope.
  if (pathname === '/watchlist' || pathname.startsWith('/watchlist/') || pathname === '/webhooks' || pathname.startsWith('/webhooks/')) return 'watchlist';
  if (pathname === '/usage') return 'account';
  return 'unknown';
}

/** Retry-After as milliseconds: delta-seconds or an HTTP date (RFC 9110 10.2.3). */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (value === null || value.trim() === '') return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Reads an error answer into an ApiError, by the envelope's shape first and the path second. */
export function errorFromResponse<Body>(response: Response, body: unknown, retries = 0): ApiError<Body> {
  const status = response.status;
  const common = {
    status,
    requestId: response.headers.get(REQUEST_ID_HEADER),
    retryAfterMs: parseRetryAfter(response.headers.get('retry-after')),
    body: body as Body | undefined,
    retries,
  };
  // 7.1: {error: {code, message}}, from the gateway whatever the API.
  if (isObject(body) && isObject(body.error) && typeof body.error.code === 'string') {
    return new ApiError({ ...common, api: 'gateway', code: body.error.code, message: String(body.error.message ?? body.error.code) });
  }
  // 7.2: {status: 'error', code, message}.
  if (isObject(body) && body.status === 'error' && typeof body.code === 'string') {
    return new ApiError({ ...common, api: 'market_data', code: body.code as MarketDataErrorCode, message: String(body.message ?? body.code) });
  }
  const api = apiOfPath(new URL(response.url || 'http://x/').pathname);
  const text = isObject(body) ? (typeof body.detail === 'string' ? body.detail : typeof body.error === 'string' ? body.error : null) : null;
  const byStatus = <T extends Record<number, string>>(table: T) => (table[status as keyof T] as string | undefined) ?? `http_${status}`;
  if (text !== null) {
    switch (api) {
      case 'account':
        return new ApiError({ ...common, api, code: text, message: text });
      case 'live_availability':
        return new ApiError({ ...common, api, code: byStatus(LIVE_AVAILABILITY_CODES) as LiveAvailabilityErrorCode, message: text });
      case 'watchlist': {
        // `{detail}` on the watchlist is the JSON parser's refusal, before validation (7.4).
        const code = isObject(body) && typeof body.detail === 'string' && status === 400 ? 'invalid_json' : byStatus(WATCHLIST_CODES);
        return new ApiError({ ...common, api, code: code as WatchlistErrorCode, message: text });
      }
      default:
        break;
    }
  }
  return new ApiError({ ...common, api: 'unknown', code: `http_${status}`, message: text ?? `HTTP ${status}` });
}

/** A call that got no HTTP answer. */
export function networkError<Body>(cause: unknown, retries = 0): ApiError<Body> {
  const aborted = isObject(cause) && (cause.name === 'AbortError' || cause.name === 'TimeoutError');
  return new ApiError<Body>({
    status: 0,
    api: 'network',
    code: aborted ? 'aborted' : 'network_error',
    message: cause instanceof Error ? cause.message : String(cause),
    requestId: null,
    retryAfterMs: null,
    body: undefined,
    retries,
    cause,
  });
}
