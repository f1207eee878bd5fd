// The scrape workers' reports on their Chromium (src/scrapers/browser-reports.ts), against the
// run's PostgreSQL: what a worker finds at its CHROMIUM_PATH is what a gateway reading its task
// queue's reports sees; a stopped worker withdraws its report, a stale one (a crashed worker) no
// longer counts, and another queue's reports are not this one's. The fix is logged only when the
// browser is missing, and once.
import { randomUUID } from 'node:crypto';
import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createDb } from '../../db/connection.ts';
import { createLogger } from '../../src/logger.ts';
import { chromiumFound } from '../../src/scrapers/chromium.ts';
import { BrowserReports, FRESH_MS, startBrowserReports } from '../../src/scrapers/browser-reports.ts';
import { databaseUrl } from '../support/harness.ts';
import { uniqueTaskQueue } from '../support/temporal.ts';

const db = createDb({ connectionString: databaseUrl(), poolMax: 3 });
afterAll(() => db.destroy());

const MISSING = `/nonexistent-${randomUUID().slice(0, 8)}/chromium`;
/** A file that exists and may be executed: as far as the reports go, a browser. */
const PRESENT = process.execPath;

function capturedLog(): { log: ReturnType<typeof createLogger>; lines: { level: number; msg: string }[] } {
  const lines: { level: number; msg: string }[] = [];
  return { log: createLogger('info', { write: (l: string) => void lines.push(JSON.parse(l)) }), lines };
}

/** For the reporter's first write: generous, over as soon as it is there. */
const POLL = { timeout: 15_000 };

/** A fresh reader each time: a reader reuses its answer for a moment. */
const missingOn = (taskQueue: string) => new BrowserReports(db, taskQueue).missing();

describe('browser reports', () => {
  it('a worker without its browser makes its queue report it missing, logs the fix once, and withdraws it on stop', async () => {
    const taskQueue = uniqueTaskQueue('scrapes');
    const { log, lines } = capturedLog();
    const reporter = startBrowserReports({ db, taskQueue, chromiumPath: MISSING, log });
    await expect.poll(() => missingOn(taskQueue), POLL).toBe(true);
    expect(await missingOn(uniqueTaskQueue('scrapes'))).toBe(false);
    expect(lines.filter((l) => l.msg.includes('apt-get install -y chromium'))).toEqual([expect.objectContaining({ level: 40, msg: expect.stringContaining(MISSING) })]);
    await reporter.stop();
    expect(await missingOn(taskQueue)).toBe(false);
  });

  it('a worker with its browser reports nothing missing and logs nothing', async () => {
    const taskQueue = uniqueTaskQueue('scrapes');
    const { log, lines } = capturedLog();
    const reporter = startBrowserReports({ db, taskQueue, chromiumPath: PRESENT, log });
    try {
      await expect.poll(() => db('scrape_worker_browsers').where({ task_queue: taskQueue }).first('chromium_found'), POLL).toEqual({ chromium_found: true });
      expect(await missingOn(taskQueue)).toBe(false);
      expect(lines).toEqual([]);
    } finally {
      await reporter.stop();
    }
  });

  it('one worker without its browser among several is enough: a scrape may land on it', async () => {
    const taskQueue = uniqueTaskQueue('scrapes');
    const silent = createLogger('silent');
    const reporters = [PRESENT, MISSING, PRESENT].map((chromiumPath) => startBrowserReports({ db, taskQueue, chromiumPath, log: silent }));
    try {
      await expect.poll(() => missingOn(taskQueue), POLL).toBe(true);
    } finally {
      await Promise.all(reporters.map((r) => r.stop()));
    }
  });

  it('a stale report, a worker that crashed, no longer counts', async () => {
    const taskQueue = uniqueTaskQueue('scrapes');
    await db('scrape_worker_browsers').insert({
      worker: `crashed:${randomUUID()}`,
      task_queue: taskQueue,
      chromium_path: MISSING,
      chromium_found: false,
      reported_at: new Date(Date.now() - FRESH_MS - 5_000),
    });
    expect(await missingOn(taskQueue)).toBe(false);
  });

  it('a reader whose database fails answers not missing, and says why', async () => {
    const down = createDb({ connectionString: 'postgres://postgres@127.0.0.1:1/none', poolMax: 1, log: () => {} });
    try {
      const failures: unknown[] = [];
      expect(await new BrowserReports(down, 'scrapes').missing((err) => failures.push(err))).toBe(false);
      expect(failures).toHaveLength(1);
    } finally {
      await down.destroy();
    }
  });
});

describe('chromiumFound', () => {
  it('wants a file this process may execute', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'tm-chromium-'));
    const plain = path.join(dir, 'chromium');
    await writeFile(plain, '#!/bin/sh\n');
    await chmod(plain, 0o644);
    expect(await chromiumFound(MISSING)).toBe(false);
    expect(await chromiumFound(dir)).toBe(false);
    // Root may execute a file without any x bit only if one is set somewhere: none is here.
    expect(await chromiumFound(plain)).toBe(false);
    await chmod(plain, 0o755);
    expect(await chromiumFound(plain)).toBe(true);
  });
});
