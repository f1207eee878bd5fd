// `npm run ops -- scrapers:sessions`: what each running scrape worker's browser and browser-made
// clearances are doing (the command and its fields keep their old name, "sessions"), from the
// reports the workers write every 30 s (browser-reports.ts): page loads (in all and per minute),
// and per platform the clearances ready, made, renewed, refused and failed, requests per
// clearance, and why none can be made when that is so.
import type { Db } from '../../db/connection.ts';
import { FRESH_MS, type ScraperFigures } from '../scrapers/browser-reports.ts';
import type { ClearancePoolStats } from '../scrapers/types.ts';

export interface WorkerSessions {
  worker: string;
  task_queue: string;
  reported_at: string;
  chromium_found: boolean;
  browser: ScraperFigures['browser'] | null;
  sessions: Record<string, ClearancePoolStats & { requests_per_session: number | null; unavailable_because: string | null }>;
}

export async function workerSessions(db: Db, opts: { platform?: string } = {}): Promise<WorkerSessions[]> {
  const rows = (await db('scrape_worker_browsers')
    .where('reported_at', '>', db.raw(`now() - interval '${FRESH_MS} milliseconds'`))
    .orderBy('worker')
    .select('worker', 'task_queue', 'reported_at', 'chromium_found', 'scrapers')) as { worker: string; task_queue: string; reported_at: Date; chromium_found: boolean; scrapers: ScraperFigures | null }[];
  return rows.map((row) => {
    const sessions = Object.entries((row.scrapers?.sessions ?? {}) as Record<string, ClearancePoolStats>)
      .filter(([platform]) => !opts.platform || platform === opts.platform)
      .map(([platform, s]) => [
        platform,
        {
          ...s,
          requests_per_session: s.made > 0 ? Math.round(s.polls / s.made) : null,
          unavailable_because: s.lastError && s.ready === 0 ? `${s.lastError.message} (next try at ${s.lastError.retry_at})` : null,
        },
      ]);
    return {
      worker: row.worker,
      task_queue: row.task_queue,
      reported_at: row.reported_at.toISOString(),
      chromium_found: row.chromium_found,
      browser: row.scrapers?.browser ?? null,
      sessions: Object.fromEntries(sessions),
    };
  });
}
