// The retry rules of spec 7.7, built into the client's fetch:
//   429            wait as Retry-After says (exponential backoff without it), then again
//   502, 503, 504  exponential backoff with jitter
//   408, 500       once, after a backoff
//   anything else  never (400, 401, 402, 403, 404, ... and no answer at all)
// Every rule can be tuned or turned off, per client and per call.
import { parseRetryAfter } from './errors.ts';

export interface BackoffOptions {
  /** Retries after the first attempt. */
  maxRetries: number;
  /** First delay; doubled for each retry. */
  baseDelayMs: number;
  /** No single delay is longer than this. */
  maxDelayMs: number;
}

export interface RetryPolicy {
  /** 429 rate_limited: honour Retry-After. */
  rateLimited: false | (BackoffOptions & { /** A Retry-After longer than this is not waited for: the 429 is returned. */ maxRetryAfterMs: number });
  /** 502, 503, 504: exponential backoff with jitter. */
  unavailable: false | BackoffOptions;
  /** 408 and 500: once. */
  once: false | Omit<BackoffOptions, 'maxRetries'>;
  /** Told before each wait (for logs and metrics). */
  onRetry?: (info: RetryInfo) => void;
  /** Random number in [0, 1) for jitter (tests make it fixed). */
  random?: () => number;
}

export interface RetryInfo {
  status: number;
  retry: number;
  delayMs: number;
  request: Request;
}

/** Per-client or per-call settings: `false` turns retrying off; a partial policy overrides. */
export type RetryOptions =
  | false
  | ({ [K in 'rateLimited' | 'unavailable' | 'once']?: false | Partial<Exclude<RetryPolicy[K], false>> } & Pick<RetryPolicy, 'onRetry' | 'random'>);

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  rateLimited: { maxRetries: 3, baseDelayMs: 1_000, maxDelayMs: 60_000, maxRetryAfterMs: 60_000 },
  unavailable: { maxRetries: 4, baseDelayMs: 250, maxDelayMs: 8_000 },
  once: { baseDelayMs: 250, maxDelayMs: 250 },
};

const OFF: RetryPolicy = { rateLimited: false, unavailable: false, once: false };

/** Applies `options` on top of `base`. */
export function mergeRetry(base: RetryPolicy, options: RetryOptions | undefined): RetryPolicy {
  if (options === undefined) return base;
  if (options === false) return OFF;
  const part = <K extends 'rateLimited' | 'unavailable' | 'once'>(k: K): RetryPolicy[K] => {
    const o = options[k];
    if (o === undefined) return base[k];
    if (o === false) return false as RetryPolicy[K];
    return { ...(base[k] || DEFAULT_RETRY_POLICY[k]), ...o } as RetryPolicy[K];
  };
  return {
    rateLimited: part('rateLimited'),
    unavailable: part('unavailable'),
    once: part('once'),
    onRetry: options.onRetry ?? base.onRetry,
    random: options.random ?? base.random,
  };
}

/** Exponential backoff with "equal jitter": half the step fixed, half random. */
export function backoffDelay(retry: number, o: Pick<BackoffOptions, 'baseDelayMs' | 'maxDelayMs'>, random: () => number = Math.random): number {
  const step = Math.min(o.maxDelayMs, o.baseDelayMs * 2 ** retry);
  return Math.round(step / 2 + (random() * step) / 2);
}

/** How long to wait before retrying this answer, or null for "do not retry". */
export function retryDelay(status: number, retryAfter: string | null, retry: number, policy: RetryPolicy): number | null {
  const random = policy.random ?? Math.random;
  if (status === 429) {
    const p = policy.rateLimited;
    if (!p || retry >= p.maxRetries) return null;
    const asked = parseRetryAfter(retryAfter);
    if (asked === null) return backoffDelay(retry, p, random);
    return asked > p.maxRetryAfterMs ? null : asked;
  }
  if (status === 502 || status === 503 || status === 504) {
    const p = policy.unavailable;
    if (!p || retry >= p.maxRetries) return null;
    return backoffDelay(retry, p, random);
  }
  if (status === 408 || status === 500) {
    const p = policy.once;
    if (!p || retry >= 1) return null;
    return backoffDelay(0, p, random);
  }
  return null;
}

/** Retries an answer got before it was returned (read by the error mapping). */
export const RETRIES = new WeakMap<Response, number>();

function sleep(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A fetch for openapi-fetch that applies `policy`; the request is cloned for each attempt. */
export function retryingFetch(base: (input: Request) => Promise<Response>, policy: RetryPolicy): (input: Request) => Promise<Response> {
  return async (request) => {
    for (let retry = 0; ; retry++) {
      const response = await base(request.clone());
      const delay = retryDelay(response.status, response.headers.get('retry-after'), retry, policy);
      if (delay === null) {
        RETRIES.set(response, retry);
        return response;
      }
      policy.onRetry?.({ status: response.status, retry: retry + 1, delayMs: delay, request });
      await response.body?.cancel().catch(() => {});
      await sleep(delay, request.signal);
    }
  };
}
