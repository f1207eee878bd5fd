// The stream node's Prometheus metrics. Registered on the gateway's registry under `npm start`
// (one /metrics for the process) or on the stream process's own (`npm run stream`).
import { Counter, Gauge, type Registry } from 'prom-client';

export class StreamMetrics {
  readonly connections: Gauge;
  readonly messages: Counter<'type'>;
  readonly slowConsumerCloses: Counter;
  readonly closes: Counter<'code'>;
  readonly refusals: Counter<'status'>;
  readonly admissions: Counter<'path'>;
  readonly cursor: Gauge;

  constructor(readonly registry: Registry) {
    const registers = [registry];
    this.connections = new Gauge({ name: 'stream_connections', help: 'Open stream connections (replaying or live)', registers });
    this.messages = new Counter({
      name: 'stream_messages_sent_total',
      help: 'Messages handed to connections (one per connection a message reaches)',
      labelNames: ['type'] as const,
      registers,
    });
    this.slowConsumerCloses = new Counter({
      name: 'stream_slow_consumer_closes_total',
      help: 'Connections closed because their unsent buffer passed max_buffered_bytes',
      registers,
    });
    this.closes = new Counter({ name: 'stream_closes_total', help: 'Closed connections by close code', labelNames: ['code'] as const, registers });
    this.refusals = new Counter({
      name: 'stream_upgrade_refusals_total',
      help: 'Upgrade requests answered with an HTTP error instead of a WebSocket',
      labelNames: ['status'] as const,
      registers,
    });
    this.admissions = new Counter({
      name: 'stream_upgrades_admitted_total',
      help: "Upgrades admitted, by path: `spare` inside uWS's handler against a slot taken ahead, `batch` after the database's answer",
      labelNames: ['path'] as const,
      registers,
    });
    this.cursor = new Gauge({ name: 'stream_log_cursor', help: 'Highest notifications log id this node has published', registers });
  }
}
