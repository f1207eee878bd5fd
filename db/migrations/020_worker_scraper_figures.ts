// Issue 23: each scrape worker's report (scrape_worker_browsers, src/scrapers/browser-reports.ts)
// also carries its browser's and its browser-made sessions' figures, so `npm run ops --
// scrapers:sessions` can say, from any machine, how many sessions each worker holds, how often
// its Chromium loads pages, and why no session can be made when none can.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('scrape_worker_browsers', (t) => {
    t.jsonb('scrapers').nullable().comment('browser page loads and session pool figures at reported_at (null: a worker that predates them)');
  });
}
