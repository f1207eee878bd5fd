// Every workflow the worker registers (bundled by Temporal from this file).
export { scrapeEvent } from './scrape-event.ts';
export { shardPoller } from './shard-poller.ts';
export { trackEvent } from './track-event.ts';
export { watchlistMonitor } from './watchlist-monitor.ts';
export { webhookRetries } from './webhook-retries.ts';
export { stripeReconcile } from './stripe-reconcile.ts';
export { stripeMeterSync } from './stripe-meter-sync.ts';
