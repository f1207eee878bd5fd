// An open-loop load at a fixed rate with requests evenly spaced, for latency figures.
// autocannon's fixed rate (`overallRate`) lets each connection send its whole per-second quota
// back to back when a 1 s timer ticks, so 1,000 requests/s arrive as one burst at the start of
// each second, and its coordinated-omission correction then adds synthetic samples for every
// millisecond a response took. Both measure the burst, not the server: bare Koa showed a 55 ms
// p99 at 1,000 requests/s that way. Here request i is due at t0 + i/rate, and its latency runs
// from that due time (not from when it was sent), so a stalled server or a late generator is
// counted in full rather than hidden.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import type { LoadResult } from './load.ts';
import { percentile } from './percentiles.ts';

export interface PacedSpec {
  name: string;
  url: string;
  path: string;
  headersFor?: (n: number) => Record<string, string>;
  /** Requests per second, evenly spaced. */
  rate: number;
  durationSec: number;
  /** Upper bound on open connections (keep-alive); a request waits for one when all are busy. */
  connections: number;
}

export interface PacedResult extends LoadResult {
  p90ms: number;
  p999ms: number;
  maxms: number;
}

export async function runPaced(spec: PacedSpec): Promise<PacedResult> {
  const target = new URL(spec.path, spec.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: spec.connections });
  const total = Math.round(spec.rate * spec.durationSec);
  const interval = 1000 / spec.rate;
  const latencies: number[] = [];
  let non2xx = 0;
  let errors = 0;
  let sent = 0;
  let done = 0;
  const t0 = performance.now() + 5;

  await new Promise<void>((resolveAll) => {
    const send = (i: number) => {
      const due = t0 + i * interval;
      const req = http.request(
        { host: target.hostname, port: target.port, path: target.pathname + target.search, agent, headers: spec.headersFor?.(i) },
        (res) => {
          res.on('data', () => {});
          res.on('end', () => {
            latencies.push(performance.now() - due);
            if (res.statusCode! < 200 || res.statusCode! >= 300) non2xx++;
            if (++done === total) resolveAll();
          });
        },
      );
      req.on('error', () => {
        errors++;
        if (++done === total) resolveAll();
      });
      req.end();
    };
    // A 1 ms tick sends everything that has come due; the timer's own lateness shows up in the
    // latencies because they are measured from the due time.
    const tick = () => {
      const now = performance.now();
      while (sent < total && t0 + sent * interval <= now) send(sent++);
      if (sent < total) setTimeout(tick, Math.max(0, Math.min(1, t0 + sent * interval - now)));
    };
    setTimeout(tick, 5);
  });
  const elapsedMs = performance.now() - t0;
  agent.destroy();

  latencies.sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 100) / 100;
  return {
    name: spec.name,
    requestsPerSec: Math.round((total * 1000) / elapsedMs),
    p50ms: round(percentile(latencies, 50)),
    p90ms: round(percentile(latencies, 90)),
    p99ms: round(percentile(latencies, 99)),
    p999ms: round(percentile(latencies, 99.9)),
    maxms: round(latencies.at(-1) ?? 0),
    total,
    non2xx,
    errors,
  };
}
