// The one error type every API throws: a status and that API's envelope. Each API module
// subclasses it; the error boundary renders whatever it catches through `body()`.
export abstract class ApiError extends Error {
  abstract readonly status: number;
  /** Response headers to send with the error (e.g. Retry-After). */
  headers: Record<string, string> = {};
  /**
   * Whether a paid request answered with this error is billed when its status would be (2xx-4xx;
   * a 5xx never is). Spec 7.7 bills a 4xx of the called API itself, never a denied or
   * rate-limited request: the gateway's own refusals (GatewayError) are not billable.
   */
  readonly billable: boolean = true;
  abstract body(): unknown;
}

/** How an unexpected failure reached us, so each API can map it to its own 5xx row. */
export type FailureKind = 'unavailable' | 'timeout' | 'internal';

const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EHOSTUNREACH', 'ETIMEDOUT', 'EPIPE']);

/** Classifies a thrown error from PostgreSQL, the pool or the network. */
export function classifyFailure(err: unknown): FailureKind {
  const e = err as { code?: string; message?: string; name?: string } | null;
  const code = e?.code;
  if (code === '57014') return 'timeout'; // statement_timeout: query_canceled
  if (code && (UNREACHABLE_CODES.has(code) || code.startsWith('08') || code === '57P01' || code === '57P03')) {
    return 'unavailable';
  }
  const msg = e?.message ?? '';
  if (e?.name === 'KnexTimeoutError' || /Connection terminated|connect ECONNREFUSED|timeout exceeded when trying to connect/i.test(msg)) {
    return 'unavailable';
  }
  return 'internal';
}

/** Maps unexpected failures of one API to that API's envelope. */
export interface ApiFailureRenderer {
  fromUnexpected(err: unknown): ApiError;
}
