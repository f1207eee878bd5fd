// The typed HTTP client: openapi-fetch over the types generated from /openapi.json, with the
// spec's retry rules in its fetch and every error answer turned into an ApiError value.
import createClient, { type FetchResponse, type MaybeOptionalInit } from 'openapi-fetch';
import type { HttpMethod, PathsWithMethod, RequiredKeysOf } from 'openapi-typescript-helpers';
import { errorFromResponse, networkError, type ApiError } from './errors.ts';
import type { paths } from './generated/openapi.ts';
import { DEFAULT_RETRY_POLICY, mergeRetry, retryingFetch, RETRIES, type RetryOptions } from './retry.ts';

export interface ClientOptions {
  /** The service's address, e.g. `https://api.example.com` (no trailing path). */
  baseUrl: string;
  /** Sent as the `apikey` header on every request. */
  apiKey: string;
  /** Retry rules (spec 7.7 by default); `false` turns retrying off for every call. */
  retry?: RetryOptions;
  /** A fetch to use instead of globalThis.fetch. */
  fetch?: (input: Request) => Promise<Response>;
  /** Extra headers on every request (e.g. your own X-Request-Id, logged by the service). */
  headers?: Record<string, string>;
}

/** Options every call takes besides the operation's own (params, body, headers, signal, ...). */
export interface CallOptions {
  /** This call's retry rules, over the client's; `false` for no retry. */
  retry?: RetryOptions;
}

/** What a call resolves to: `data` on 2xx, else `error` (never both). */
export type Result<R> = R extends { data: infer D; error?: never }
  ? { data: D; error?: undefined; response: Response }
  : R extends { error: infer E }
    ? { data?: undefined; error: ApiError<E>; response: Response | undefined }
    : never;

// A mapped alias of the generated interface: aliases get the implicit index signature openapi-fetch's
// helper types ask for.
type Paths = { [K in keyof paths]: paths[K] };
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the shape openapi-fetch's helpers constrain to
type PathsShape = Record<string, Partial<Record<HttpMethod, any>>>;
type InitParam<Init> = RequiredKeysOf<Init> extends never ? [(Init & CallOptions)?] : [Init & CallOptions];

export type Method<M extends HttpMethod, P extends PathsShape = Paths> = <Path extends PathsWithMethod<P, M>, Init extends MaybeOptionalInit<P[Path], M>>(
  url: Path,
  ...init: InitParam<Init>
) => Promise<Result<FetchResponse<P[Path][M], Init, 'application/json'>>>;

export interface TicketMarketClient {
  GET: Method<'get'>;
  POST: Method<'post'>;
  PATCH: Method<'patch'>;
  DELETE: Method<'delete'>;
  readonly options: Readonly<ClientOptions>;
}

export function createTicketMarketClient(options: ClientOptions): TicketMarketClient {
  const baseFetch = options.fetch ?? ((r: Request) => globalThis.fetch(r));
  const policy = mergeRetry(DEFAULT_RETRY_POLICY, options.retry);
  const inner = createClient<Paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { ...options.headers, apikey: options.apiKey },
  });

  const method = (name: 'GET' | 'POST' | 'PATCH' | 'DELETE') =>
    (async (url: string, init?: Record<string, unknown> & CallOptions) => {
      const { retry, ...rest } = init ?? {};
      const fetch = retryingFetch(baseFetch, mergeRetry(policy, retry));
      let r: { data?: unknown; error?: unknown; response: Response };
      try {
        // The generic signature is checked at the call site (Method<M>); here it is plain data.
        r = await (inner[name] as unknown as (u: string, i: object) => Promise<typeof r>)(url, { ...rest, fetch });
      } catch (err) {
        return { error: networkError(err), response: undefined };
      }
      if (r.response.ok) return { data: r.data, response: r.response };
      return { error: errorFromResponse(r.response, r.error, RETRIES.get(r.response) ?? 0), response: r.response };
    }) as never;

  return { GET: method('GET'), POST: method('POST'), PATCH: method('PATCH'), DELETE: method('DELETE'), options };
}

/** The data of a result, or its ApiError thrown: `const items = await orThrow(client.GET('/watchlist'))`. */
export async function orThrow<D>(result: Promise<{ data?: D; error?: ApiError<unknown>; response: Response | undefined }>): Promise<D> {
  const r = await result;
  if (r.error) throw r.error;
  return r.data as D;
}
