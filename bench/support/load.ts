// Runs one autocannon load and reduces it to the figures the benchmarks report.
import autocannon from 'autocannon';

export interface LoadResult {
  name: string;
  requestsPerSec: number;
  p50ms: number;
  p99ms: number;
  total: number;
  non2xx: number;
  errors: number;
}

export interface LoadSpec {
  name: string;
  url: string;
  method?: 'GET' | 'POST';
  path: string;
  /** Headers for the nth request (lets a run rotate over many API keys). */
  headersFor?: (n: number) => Record<string, string>;
  connections: number;
  durationSec: number;
  /** Fixed offered load (requests/s over all connections); unset: as fast as answers come. */
  rate?: number;
}

export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  let n = 0;
  const result = await autocannon({
    url: spec.url,
    connections: spec.connections,
    duration: spec.durationSec,
    ...(spec.rate ? { overallRate: spec.rate } : {}),
    requests: [
      {
        method: spec.method ?? 'GET',
        path: spec.path,
        setupRequest: (req) => ({ ...req, headers: { ...req.headers, ...spec.headersFor?.(n++) } }),
      },
    ],
  });
  return {
    name: spec.name,
    requestsPerSec: Math.round(result.requests.average),
    p50ms: result.latency.p50,
    p99ms: result.latency.p99,
    total: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}
