// Each proxy's figures per platform in /metrics (issue 27): requests sent through it, blocks met,
// refusals through it charged to their events instead (issue 36),
// time spent cooling down, whether it is healthy now, and each platform's budget (the healthy
// proxies' requests per second). Read from the exit pools' own counters at scrape time
// (prom-client's collect), so a poll does no metrics work of its own. Proxies are named by label
// (scheme://host:port): a proxy's credentials never reach a metric.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { ExitPools } from './exit-pool.ts';

export function registerProxyMetrics(registry: Registry, exits: ExitPools): void {
  const registers = [registry];
  const seen = new Map<string, number>();
  const proxied = () => exits.all().filter((pool) => pool.proxied);
  /** Brings a counter up to `total` (the pools only ever count up). */
  const catchUp = (counter: Counter<string>, labels: { platform: string; proxy: string }, kind: string, total: number) => {
    const key = `${kind}:${labels.platform}:${labels.proxy}`;
    const before = seen.get(key) ?? 0;
    if (total > before) counter.inc(labels, total - before);
    seen.set(key, total);
  };
  const perProxy = (name: string, help: string, read: (e: { requests: number; blocks: number; target_refusals: number; cooling_ms: number }) => number) =>
    new Counter({
      name,
      help,
      labelNames: ['platform', 'proxy'],
      registers,
      collect() {
        for (const pool of proxied()) for (const e of pool.stats().exits) catchUp(this, { platform: pool.platform, proxy: e.exit }, name, read(e));
      },
    });
  perProxy('scrape_proxy_requests_total', 'Requests sent to the platform through the proxy', (e) => e.requests);
  perProxy('scrape_proxy_blocks_total', 'Times the proxy was found at fault and set aside (refusals of events that pass elsewhere, or refused again right after a cool-down)', (e) => e.blocks);
  perProxy('scrape_proxy_target_refusals_total', 'Refusals through the proxy charged to the event asked for, not to the proxy (issue 36)', (e) => e.target_refusals);
  perProxy('scrape_proxy_cooling_seconds_total', 'Time the proxy spent cooling down after blocks (no request of the platform went through it)', (e) => e.cooling_ms / 1000);
  new Gauge({
    name: 'scrape_proxy_healthy',
    help: '1 while the proxy may send requests to the platform, 0 while it cools down',
    labelNames: ['platform', 'proxy'],
    registers,
    collect() {
      for (const pool of proxied()) for (const e of pool.stats().exits) this.set({ platform: pool.platform, proxy: e.exit }, e.healthy ? 1 : 0);
    },
  });
  new Gauge({
    name: 'scrape_proxy_budget_rps',
    help: "The platform's request budget now: its healthy proxies times SCRAPE_RPS_PER_PROXY",
    labelNames: ['platform'],
    registers,
    collect() {
      for (const pool of proxied()) this.set({ platform: pool.platform }, pool.budgetRps());
    },
  });
}
