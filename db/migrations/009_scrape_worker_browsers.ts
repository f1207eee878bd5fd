// Issue 14 (first run without Chromium): each scrape worker process reports whether it can launch
// the Chromium at its CHROMIUM_PATH, so that a gateway, usually another process and often another
// machine, can mark the browser platforms degraded in GET /events/platforms from what the
// process that actually launches the browser found (src/scrapers/browser-reports.ts).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('scrape_worker_browsers', (t) => {
    t.text('worker').primary().comment('host:pid:nonce of the reporting worker process');
    t.text('task_queue').notNullable().comment('the scrape task queue the worker serves');
    t.text('chromium_path').notNullable();
    t.boolean('chromium_found').notNullable();
    t.timestamp('reported_at', { useTz: true }).notNullable().defaultTo(knex.fn.now()).comment('refreshed every 30 s; stale rows are a crashed worker');
  });
}
