// The worker's browser and clearance figures in /metrics (issue 23): page loads of the warm
// Chromium, and per platform the clearances made, renewed, refused and failed, the requests they
// served (polls per clearance is the ratio of the two) and how many are ready. Read from the pool's and the browser's own counters at scrape
// time (prom-client's collect), so the hot path of a poll does no metrics work of its own.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { BrowserPages } from './browser-pages.ts';
import type { ScraperFigures } from './browser-reports.ts';
import type { ClearancePool, ClearancePoolStats } from './types.ts';

export interface ScraperMetricsSources {
  browser: Pick<BrowserPages, 'stats'>;
  /** Clearance pools by platform key. */
  clearances: Record<string, Pick<ClearancePool<unknown>, 'stats'>>;
}

type ClearanceEvent = 'made' | 'renewed' | 'refused' | 'failed';
const EVENTS: readonly ClearanceEvent[] = ['made', 'renewed', 'refused', 'failed'];

/** Brings a counter up to `total` (the sources only ever count up). */
function catchUp(counter: Counter<string>, labels: Record<string, string>, last: Map<string, number>, key: string, total: number): void {
  const before = last.get(key) ?? 0;
  if (total > before) counter.inc(labels, total - before);
  last.set(key, total);
}

export function registerScraperMetrics(registry: Registry, sources: ScraperMetricsSources): void {
  const registers = [registry];
  const seen = new Map<string, number>();
  const readStats = (): [string, ClearancePoolStats][] => Object.entries(sources.clearances).map(([platform, pool]) => [platform, pool.stats()]);
  new Counter({
    name: 'browser_page_loads_total',
    help: 'Pages the warm Chromium loaded: on-demand scrapes without a ready clearance, and clearances being made',
    registers,
    collect() {
      catchUp(this, {}, seen, 'browser', sources.browser.stats().visits);
    },
  });
  new Counter({
    name: 'scrape_sessions_total',
    help: 'Browser-made clearances by what happened to them: made (renewals included), renewed, refused by the platform, failed to make',
    labelNames: ['platform', 'event'],
    registers,
    collect() {
      for (const [platform, stats] of readStats()) {
        for (const event of EVENTS) catchUp(this, { platform, event }, seen, `${platform}:${event}`, stats[event]);
      }
    },
  });
  new Counter({
    name: 'scrape_session_requests_total',
    // Polls per clearance: this over scrape_sessions_total{event="made"}.
    help: 'Scrapes served over HTTP with a browser-made clearance',
    labelNames: ['platform'],
    registers,
    collect() {
      for (const [platform, stats] of readStats()) catchUp(this, { platform }, seen, `${platform}:polls`, stats.polls);
    },
  });
  new Gauge({
    name: 'scrape_sessions_ready',
    help: 'Browser-made clearances usable now',
    labelNames: ['platform'],
    registers,
    collect() {
      for (const [platform, stats] of readStats()) this.set({ platform }, stats.ready);
    },
  });
  new Gauge({
    name: 'scrape_sessions_size',
    help: 'Browser-made clearances a worker keeps (BROWSER_SESSIONS)',
    labelNames: ['platform'],
    registers,
    collect() {
      for (const [platform, stats] of readStats()) this.set({ platform }, stats.size);
    },
  });
  new Gauge({
    name: 'scrape_session_unavailable',
    help: '1 while no clearance can be made (the pool backs off; see npm run ops -- scrapers:sessions for why)',
    labelNames: ['platform'],
    registers,
    collect() {
      for (const [platform, stats] of readStats()) this.set({ platform }, stats.lastError && stats.ready === 0 ? 1 : 0);
    },
  });
}

/**
 * The same figures for the worker's report to the ops CLI (browser-reports.ts): each call also
 * gives the page loads per minute since the previous call (null on the first).
 */
export function scraperFigures(sources: ScraperMetricsSources, now: () => number = Date.now): () => ScraperFigures {
  let last: { at: number; loads: number } | null = null;
  return () => {
    const browser = sources.browser.stats();
    const at = now();
    const perMinute = last && at > last.at ? Math.round(((browser.visits - last.loads) * 60_000) / (at - last.at)) : null;
    last = { at, loads: browser.visits };
    return {
      browser: { page_loads: browser.visits, page_loads_per_minute: perMinute, launches: browser.launches, open_pages: browser.openPages },
      // `sessions`: the ops CLI's field name (scrapers:sessions), kept as it was.
      sessions: Object.fromEntries(Object.entries(sources.clearances).map(([platform, pool]) => [platform, pool.stats()])),
    };
  };
}
