// Prometheus metrics, served on a separate internal port so they are never public.
import http from 'node:http';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { namedListenError } from '../runtime/ports.ts';

export class Metrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'gateway_requests_total',
    help: 'Requests answered by the gateway',
    labelNames: ['operation', 'status'] as const,
    registers: [this.registry],
  });
  readonly duration = new Histogram({
    name: 'gateway_request_duration_seconds',
    help: 'Time from request to response',
    labelNames: ['operation'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 65],
    registers: [this.registry],
  });
  readonly credits = new Counter({
    name: 'gateway_credits_charged_total',
    help: 'Credits captured for served paid requests',
    labelNames: ['api'] as const,
    registers: [this.registry],
  });
  readonly denials = new Counter({
    name: 'gateway_denials_total',
    help: 'Requests refused by the gateway, by error code',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });

  constructor(collectDefaults = true) {
    if (collectDefaults) collectDefaultMetrics({ register: this.registry });
  }

  /** Starts the internal /metrics server. */
  listen(port: number, host: string): Promise<http.Server> {
    const server = http.createServer((req, res) => {
      if (req.url !== '/metrics') {
        res.writeHead(404).end();
        return;
      }
      this.registry.metrics().then(
        (body) => res.writeHead(200, { 'Content-Type': this.registry.contentType }).end(body),
        () => res.writeHead(500).end(),
      );
    });
    return new Promise((resolve, reject) => {
      server.once('error', (err) => reject(namedListenError(err, port, 'METRICS_PORT')));
      server.listen(port, host, () => resolve(server));
    });
  }
}
