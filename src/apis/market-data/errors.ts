// Market Data envelope (spec 7.2): `{status: 'error', code, message}`, one code-to-status map.
import { ApiError, classifyFailure, type ApiFailureRenderer } from '../../gateway/api-error.ts';

export const MARKET_DATA_ERRORS = {
  INVALID_MARKETPLACE_A_ID: 400,
  INVALID_REQUEST: 400,
  MISSING_URL: 400,
  EVENT_NOT_FOUND: 404,
  ARTIST_NOT_FOUND: 404,
  BAD_UPSTREAM_REQUEST: 502,
  UPSTREAM_AUTH_FAILED: 502,
  EDGE_UPSTREAM_ERROR: 502,
  EDGE_UNAVAILABLE: 503,
  EDGE_TIMEOUT: 504,
  INTERNAL_ERROR: 500,
} as const;

export type MarketDataErrorCode = keyof typeof MARKET_DATA_ERRORS;

export class MarketDataError extends ApiError {
  readonly status: number;
  constructor(
    readonly code: MarketDataErrorCode,
    message: string,
  ) {
    super(message);
    this.status = MARKET_DATA_ERRORS[code];
  }
  body(): unknown {
    return { status: 'error', code: this.code, message: this.message };
  }
}

export const marketDataFailures: ApiFailureRenderer = {
  fromUnexpected(err) {
    switch (classifyFailure(err)) {
      case 'unavailable':
        return new MarketDataError('EDGE_UNAVAILABLE', 'data backend unreachable');
      case 'timeout':
        return new MarketDataError('EDGE_TIMEOUT', 'data backend exceeded its timeout');
      default:
        return new MarketDataError('INTERNAL_ERROR', 'internal error');
    }
  },
};
