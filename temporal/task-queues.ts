// The worker's task queues. Scrapes (on-demand `scrapeEvent`, tracker ticks) are I/O and
// browser bound and bursty; monitors (`watchlistMonitor`, `shardPoller` and its long-running poll
// activities, `trackEvent`) are long-lived. Separate queues let each be scaled and throttled without the other.
import type { Config } from '../src/config.ts';

export interface TaskQueues {
  /** SCRAPE_TASK_QUEUE: scrape workflows and the activities that fetch platform pages. */
  scrapes: string;
  /** MONITOR_TASK_QUEUE: watchlist monitors, shard pollers and their poll loops, event tracking. */
  monitors: string;
  /** WEBHOOK_TASK_QUEUE: webhook deliveries, so a slow endpoint holds up nothing else. */
  webhooks: string;
  /** BILLING_TASK_QUEUE: Stripe billing's reconcile and meter sync; served only with BILLING_PROVIDER=stripe. */
  billing: string;
}

export function taskQueues(config: Pick<Config, 'SCRAPE_TASK_QUEUE' | 'MONITOR_TASK_QUEUE' | 'WEBHOOK_TASK_QUEUE' | 'BILLING_TASK_QUEUE'>): TaskQueues {
  return { scrapes: config.SCRAPE_TASK_QUEUE, monitors: config.MONITOR_TASK_QUEUE, webhooks: config.WEBHOOK_TASK_QUEUE, billing: config.BILLING_TASK_QUEUE };
}
