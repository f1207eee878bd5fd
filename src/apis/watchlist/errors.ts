// Watchlist envelope (spec 7.4): `{error}` for validation and lookups; `{detail}` for a body
// that is not JSON at all. 5xx carry a fixed message, never the underlying error.
import { ApiError, classifyFailure, type ApiFailureRenderer } from '../../gateway/api-error.ts';

export class WatchlistError extends ApiError {
  constructor(
    readonly status: number,
    message: string,
    private readonly field: 'error' | 'detail' = 'error',
  ) {
    super(message);
  }
  body(): unknown {
    return { [this.field]: this.message };
  }
}

export const notFound = () => new WatchlistError(404, 'no watchlist item with that id');

export const watchlistFailures: ApiFailureRenderer = {
  fromUnexpected(err) {
    switch (classifyFailure(err)) {
      case 'unavailable':
        return new WatchlistError(502, 'upstream unavailable');
      case 'timeout':
        return new WatchlistError(504, 'upstream timed out');
      default:
        return new WatchlistError(500, 'internal error');
    }
  },
};
