// `npm run ops -- scrapers:proxies`: each proxied platform's proxies as the scrape workers see
// them (their 30 s reports, browser-reports.ts): requests, blocks, cooling-down time and health
// per proxy, summed over workers (a proxy is healthy only where every worker finds it so), and the
// platform's budget against what its watched targets need (targets ÷ MONITOR_INTERVAL_MS). When
// the need is larger, it says that budget ran out, with the figures: polls then stretch (every
// target's interval alike among accounts of one size, fair-share.ts) instead of pushing any
// address past its rate.
import type { Db } from '../../db/connection.ts';
import { FRESH_MS, type ScraperFigures } from '../scrapers/browser-reports.ts';
import type { ExitPoolStats } from '../scrapers/egress/exit-pool.ts';

export interface ProxyRow {
  proxy: string;
  healthy: boolean;
  /** The latest end of a cool-down any worker reports. */
  cooling_until: string | null;
  requests: number;
  blocks: number;
  cooling_s: number;
  last_block: { at: string; reason: string } | null;
}

export interface PlatformProxies {
  platform: string;
  workers: number;
  proxies: number;
  healthy: number;
  rps_per_proxy: number;
  /** Requests per second the healthy proxies may send: healthy × rps_per_proxy. */
  budget_rps: number;
  /** Requests per second the watched targets need: one poll each per MONITOR_INTERVAL_MS. */
  needed_rps: number;
  watched_targets: number;
  /** Why polls are slower than their interval, or null when the budget covers them. */
  budget_ran_out: string | null;
  by_proxy: ProxyRow[];
}

function merge(reports: ExitPoolStats[]): ProxyRow[] {
  const rows = new Map<string, ProxyRow>();
  for (const report of reports) {
    for (const e of report.exits) {
      const row = rows.get(e.exit) ?? { proxy: e.exit, healthy: true, cooling_until: null, requests: 0, blocks: 0, cooling_s: 0, last_block: null };
      row.healthy &&= e.healthy;
      if (e.cooling_until && (!row.cooling_until || e.cooling_until > row.cooling_until)) row.cooling_until = e.cooling_until;
      row.requests += e.requests;
      row.blocks += e.blocks;
      row.cooling_s = Math.round((row.cooling_s + e.cooling_ms / 1000) * 10) / 10;
      if (e.last_block && (!row.last_block || e.last_block.at > row.last_block.at)) row.last_block = e.last_block;
      rows.set(e.exit, row);
    }
  }
  return [...rows.values()];
}

export async function platformProxies(db: Db, opts: { intervalMs: number; platform?: string }): Promise<PlatformProxies[]> {
  const reports = (await db('scrape_worker_browsers')
    .where('reported_at', '>', db.raw(`now() - interval '${FRESH_MS} milliseconds'`))
    .select('scrapers')) as { scrapers: ScraperFigures | null }[];
  const byPlatform = new Map<string, ExitPoolStats[]>();
  for (const r of reports) {
    for (const pool of r.scrapers?.proxies ?? []) {
      if (opts.platform && pool.platform !== opts.platform) continue;
      byPlatform.set(pool.platform, [...(byPlatform.get(pool.platform) ?? []), pool]);
    }
  }
  const platforms = [...byPlatform.keys()].sort();
  const counts = platforms.length
    ? ((await db('monitor_members as m')
        .leftJoin('monitor_target_status as s', 's.target', 'm.target')
        .whereIn('m.platform', platforms)
        .whereNull('s.retired_at')
        .groupBy('m.platform')
        .select('m.platform', db.raw('count(DISTINCT m.target)::int AS targets'))) as { platform: string; targets: number }[])
    : [];
  return platforms.map((platform) => {
    const pools = byPlatform.get(platform)!;
    const rows = merge(pools);
    const rpsPerProxy = pools[0]!.rps_per_exit;
    const healthy = rows.filter((r) => r.healthy).length;
    const budget = healthy * rpsPerProxy;
    const targets = counts.find((c) => c.platform === platform)?.targets ?? 0;
    const needed = Math.round((targets / (opts.intervalMs / 1000)) * 100) / 100;
    const cooling = rows.length - healthy;
    return {
      platform,
      workers: pools.length,
      proxies: rows.length,
      healthy,
      rps_per_proxy: rpsPerProxy,
      budget_rps: budget,
      needed_rps: needed,
      watched_targets: targets,
      budget_ran_out:
        needed > budget
          ? `${platform}'s proxy budget ran out: its ${targets} targets need ${needed} requests/s, and ${healthy} healthy of ${rows.length} proxies × ${rpsPerProxy} (SCRAPE_RPS_PER_PROXY) give ${budget}` +
            `${cooling ? ` (${cooling} cooling down after blocks)` : ''}; every target is polled less often until proxies are added or come back (alike for accounts of the same size; a small account keeps its fair share)`
          : null,
      by_proxy: rows,
    };
  });
}
