// Account API envelope (spec 7.5): `{detail}`.
import { ApiError, type ApiFailureRenderer } from '../../gateway/api-error.ts';

export type AccountErrorDetail = 'billing_unavailable' | 'bad_plan_pricing' | 'internal_error';

export class AccountError extends ApiError {
  constructor(
    readonly status: number,
    readonly detail: AccountErrorDetail,
  ) {
    super(detail);
  }
  body(): unknown {
    return { detail: this.detail };
  }
}

export const accountFailures: ApiFailureRenderer = {
  fromUnexpected: () => new AccountError(500, 'internal_error'),
};
