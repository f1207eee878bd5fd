// The shard pollers' Prometheus metrics: polls by outcome, how late polls start against their
// schedule, how long they take, notifications written, targets polled and blocked, and targets
// retired (their event answered not-found too long). Served
// on METRICS_PORT by `npm start` and by `npm run worker`.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export type PollOutcome = 'unchanged' | 'changed' | 'blocked' | 'failed';

export class PollMetrics {
  readonly polls: Counter<'platform' | 'outcome'>;
  readonly lateness: Histogram<'platform'>;
  readonly duration: Histogram<'platform'>;
  readonly notifications: Counter;
  readonly targets: Gauge<'platform'>;
  readonly blocked: Gauge<'platform'>;
  readonly retired: Counter<'platform'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.polls = new Counter({ name: 'monitor_polls_total', help: 'Target polls by the shard pollers, by outcome', labelNames: ['platform', 'outcome'], registers });
    this.lateness = new Histogram({
      name: 'monitor_poll_lateness_seconds',
      help: 'How long after its scheduled time a poll started',
      labelNames: ['platform'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 2.5, 5, 7.5, 10, 30],
      registers,
    });
    this.duration = new Histogram({
      name: 'monitor_poll_duration_seconds',
      help: 'Scrape, compare and (on a change) write, per poll',
      labelNames: ['platform'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.notifications = new Counter({ name: 'monitor_notifications_total', help: 'Notifications written by the shard pollers', registers });
    this.targets = new Gauge({ name: 'monitor_targets', help: 'Targets polled by this process', labelNames: ['platform'], registers });
    this.blocked = new Gauge({ name: 'monitor_blocked_targets', help: 'Targets whose platform refused (429/403) and is being backed off', labelNames: ['platform'], registers });
    this.retired = new Counter({
      name: 'monitor_targets_retired_total',
      help: 'Targets retired because their event answered not-found for MONITOR_RETIRE_AFTER_MS',
      labelNames: ['platform'],
      registers,
    });
  }
}
