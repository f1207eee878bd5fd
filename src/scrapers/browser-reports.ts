// Which scrape workers can launch their Chromium, kept in `scrape_worker_browsers` (issue 14),
// with the figures of their browser and browser-made clearances (issue 23) for the ops CLI.
// The browser platforms are degraded when a worker that serves the scrape task queue cannot: a
// scrape of theirs may land on it and fail. Only that worker can tell, since it is the process
// that launches Chromium; the gateway that answers GET /events/platforms is often another
// process on another machine, whose own CHROMIUM_PATH says nothing about the worker's. So each
// worker looks at its CHROMIUM_PATH and reports what it found, again every REPORT_MS (an
// operator who installs the browser sees it counted within that); the gateway reads fresh reports.
// Imported by the gateway too: nothing here loads playwright or crawlee.
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/connection.ts';
import type { Logger } from '../logger.ts';
import { BROWSER_PLATFORMS } from '../platform/registry.ts';
import { chromiumFix, chromiumFound } from './chromium.ts';
import type { ExitPoolStats } from './egress/exit-pool.ts';

const TABLE = 'scrape_worker_browsers';
/** How often a worker looks for its browser again and refreshes its report. */
export const REPORT_MS = 30_000;
/** A report older than this is a worker that crashed or lost the database: it no longer counts. */
export const FRESH_MS = 3 * REPORT_MS;
/** Reports of workers gone this long are deleted by whichever worker reports next. */
const PRUNE_AFTER_MS = 24 * 3600_000;
/** How long the gateway reuses an answer, and how long one read may take before it counts as unknown. */
const READ_CACHE_MS = 2_000;
const READ_DEADLINE_MS = 2_000;

/** What a worker's browser and its clearances have done, as `npm run ops -- scrapers:sessions` shows it. */
export interface ScraperFigures {
  browser: { page_loads: number; page_loads_per_minute: number | null; launches: number; open_pages: number };
  /** Clearance pool figures by platform (clearance-pool.ts's stats), under the ops CLI's own name. */
  sessions: Record<string, object>;
  /** Each proxied platform's exits (egress/exit-pool.ts's stats), for `npm run ops -- scrapers:proxies`. */
  proxies?: ExitPoolStats[];
}

export interface BrowserReporter {
  /** Stops reporting and withdraws this worker's report. */
  stop(): Promise<void>;
}

/**
 * A worker's reports for `taskQueue`, the first one at once. Prints the fix (warn) when the
 * browser is missing at start-up or goes missing later, and says so (info) when it turns up.
 */
export function startBrowserReports(opts: { db: Db; taskQueue: string; chromiumPath: string; log: Logger; figures?: () => ScraperFigures }): BrowserReporter {
  const { db, taskQueue, chromiumPath, log } = opts;
  const worker = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  let found: boolean | null = null;
  const report = async (): Promise<void> => {
    const now = await chromiumFound(chromiumPath);
    if (now !== found) {
      if (!now) log.warn({ chromium_path: chromiumPath, platforms: BROWSER_PLATFORMS }, chromiumFix(chromiumPath));
      else if (found === false) log.info({ chromium_path: chromiumPath, platforms: BROWSER_PLATFORMS }, 'Chromium found: the browser platforms can be scraped again');
      found = now;
    }
    try {
      const scrapers = opts.figures ? JSON.stringify(opts.figures()) : null;
      await db(TABLE)
        .insert({ worker, task_queue: taskQueue, chromium_path: chromiumPath, chromium_found: now, reported_at: db.fn.now(), scrapers })
        .onConflict('worker')
        .merge(['chromium_found', 'reported_at', 'scrapers']);
      await db(TABLE).where('reported_at', '<', db.raw(`now() - interval '${PRUNE_AFTER_MS} milliseconds'`)).delete();
    } catch (err) {
      log.warn({ err }, 'could not report the browser; the next report tries again');
    }
  };
  let running = report();
  const timer = setInterval(() => {
    running = running.then(report);
  }, REPORT_MS);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await running;
      await db(TABLE)
        .where({ worker })
        .delete()
        .catch((err: unknown) => log.warn({ err }, 'could not withdraw the browser report; it expires on its own'));
    },
  };
}

/**
 * The gateway's side: does a worker serving `taskQueue` lack its browser? Reads fresh reports,
 * at most once per READ_CACHE_MS (concurrent callers share a read). No report (no worker yet, or
 * one that predates reports) and a read that fails or is late all answer false: the platforms
 * are only marked degraded on a worker's own word.
 */
export class BrowserReports {
  private last: { at: number; missing: Promise<boolean> } | null = null;

  constructor(
    private readonly db: Db,
    private readonly taskQueue: string,
  ) {}

  missing(onFailure?: (err: unknown) => void): Promise<boolean> {
    if (!this.last || Date.now() - this.last.at >= READ_CACHE_MS) this.last = { at: Date.now(), missing: this.read(onFailure) };
    return this.last.missing;
  }

  private async read(onFailure?: (err: unknown) => void): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`reading the browser reports took longer than ${READ_DEADLINE_MS} ms`)), READ_DEADLINE_MS);
    });
    try {
      const row = await Promise.race([
        this.db(TABLE)
          .where({ task_queue: this.taskQueue, chromium_found: false })
          .andWhere('reported_at', '>', this.db.raw(`now() - interval '${FRESH_MS} milliseconds'`))
          .first(this.db.raw('1 AS missing')),
        late,
      ]);
      return row !== undefined;
    } catch (err) {
      onFailure?.(err);
      return false;
    } finally {
      clearTimeout(timer);
    }
  }
}
