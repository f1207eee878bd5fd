// `npm run ops -- scrapers:sessions` (issue 23): what a worker's report says of its browser and
// its browser-made sessions, read back from the run's PostgreSQL as an operator reads it, from
// the command line. The worker's side is the real reporter fed by the real figures function,
// over a real session pool whose maker the test drives: sessions made, a refusal, then a make
// that fails, which the command must name as the reason none can be made.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createDb } from '../../db/connection.ts';
import { createLogger } from '../../src/logger.ts';
import { startBrowserReports } from '../../src/scrapers/browser-reports.ts';
import { scraperFigures } from '../../src/scrapers/scraper-metrics.ts';
import { createClearancePool } from '../../src/scrapers/clearance-pool.ts';
import { ScrapeFailure } from '../../src/scrapers/types.ts';
import { databaseUrl, runTs } from '../support/harness.ts';
import { uniqueTaskQueue } from '../support/temporal.ts';

const db = createDb({ connectionString: databaseUrl(), poolMax: 3 });
afterAll(() => db.destroy());

describe('ops scrapers:sessions', () => {
  it("shows each worker's page loads and sessions, and why none can be made", async () => {
    let visits = 0;
    let failWith: ScrapeFailure | null = null;
    const pool = createClearancePool<{ id: string }>({
      size: 2,
      makeTimeoutMs: 1_000,
      expiresAt: () => null,
      make: async () => {
        visits++;
        if (failWith) throw failWith;
        return { id: randomUUID() };
      },
    });
    const first = await pool.acquire();
    for (let i = 0; i < 9; i++) await pool.acquire();
    // The refusal's renewal fails; with the other slot also dropped, no session is left.
    failWith = new ScrapeFailure('malformed', 'pf_01: the challenge left no session token: the challenge page may have changed');
    pool.refused(first);
    await new Promise((r) => setTimeout(r, 50));
    const other = await pool.acquire().catch(() => null);
    if (other) pool.refused(other);

    const browser = { stats: () => ({ launches: 1, browsers: 1, openPages: 1, peakOpenPages: 2, visits }) };
    const taskQueue = uniqueTaskQueue('scrapes');
    const reporter = startBrowserReports({ db, taskQueue, chromiumPath: process.execPath, log: createLogger('silent'), figures: scraperFigures({ browser, clearances: { pf_01: pool } }) });
    try {
      await expect.poll(() => db('scrape_worker_browsers').where({ task_queue: taskQueue }).first('scrapers'), { timeout: 15_000 }).toBeTruthy();
      const env = { ...process.env, DATABASE_URL: databaseUrl(), LOG_LEVEL: 'silent' };
      const out = await runTs('src/ops/cli.ts', ['scrapers:sessions', '--platform', 'pf_01'], env);
      expect(out.code, out.stderr).toBe(0);
      const mine = (JSON.parse(out.stdout) as { task_queue: string }[]).find((w) => w.task_queue === taskQueue);
      expect(mine).toMatchObject({
        chromium_found: true,
        browser: { page_loads: visits, launches: 1, open_pages: 1 },
        sessions: {
          pf_01: {
            size: 2,
            ready: 0,
            made: 2,
            refused: 2,
            failed: 1,
            polls: 11,
            requests_per_session: 6,
            unavailable_because: expect.stringContaining('the challenge page may have changed'),
          },
        },
      });
    } finally {
      await reporter.stop();
      await pool.close();
    }
  }, 120_000);
});
