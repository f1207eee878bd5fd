// Live Availability envelope (spec 7.3): `{detail}`.
import { ApiError, type ApiFailureRenderer } from '../../gateway/api-error.ts';

export class LiveAvailabilityError extends ApiError {
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(detail);
  }
  body(): unknown {
    return { detail: this.detail };
  }
}

export const liveAvailabilityFailures: ApiFailureRenderer = {
  fromUnexpected: () => new LiveAvailabilityError(500, 'unexpected error'),
};
