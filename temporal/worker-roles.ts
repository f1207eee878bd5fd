// What a worker process runs, by WORKER_ROLE (issue 25: the browser holds no secrets).
// - `scrape`: the scrapes and monitors task queues (on-demand scrapes, shard pollers, item
//   monitors, event tracking), the browser, and the relays and the service sweep that feed the
//   pollers. It refuses to start with a secret in its environment, which Chromium would inherit.
// - `deliver`: the webhooks and billing task queues and the webhook dispatcher; it holds
//   WEBHOOK_SECRET_KEY and the Stripe keys, and never loads the scrapers or Chromium.
// - `all`: both in one process (`npm start`, and the default of `npm run worker`).
import type { Knex } from 'knex';
import type { Config } from '../src/config.ts';
import type { Logger } from '../src/logger.ts';
import { taskQueues } from './task-queues.ts';

export type WorkerRole = Config['WORKER_ROLE'];

export interface RoleSides {
  /** Scrapes, monitors, tracking: the browser's side. */
  scrape: boolean;
  /** Webhooks and Stripe billing: the secrets' side. */
  deliver: boolean;
}

export function roleSides(role: WorkerRole): RoleSides {
  return { scrape: role !== 'deliver', deliver: role !== 'scrape' };
}

/** The task queues a worker of `role` serves (billing only with BILLING_PROVIDER=stripe). */
export function roleQueues(
  role: WorkerRole,
  config: Pick<Config, 'SCRAPE_TASK_QUEUE' | 'MONITOR_TASK_QUEUE' | 'WEBHOOK_TASK_QUEUE' | 'BILLING_TASK_QUEUE' | 'BILLING_PROVIDER'>,
): string[] {
  const queues = taskQueues(config);
  const sides = roleSides(role);
  return [
    ...(sides.scrape ? [queues.scrapes, queues.monitors] : []),
    ...(sides.deliver ? [queues.webhooks, ...(config.BILLING_PROVIDER === 'stripe' ? [queues.billing] : [])] : []),
  ];
}

/** Secrets the scrape worker's process (and so its Chromium, which inherits its environment) must not hold. */
export const SCRAPE_WORKER_REFUSES = ['WEBHOOK_SECRET_KEY', 'STRIPE_SECRET_KEY', 'STRIPE_WEBHOOK_SECRET'] as const;

/**
 * Why a worker of `role` must not start with this environment, or null. A scrape worker given a
 * secret is a deployment mistake (a shared env block): refused rather than ignored, since an
 * ignored variable would still be in the environment the browser inherits.
 */
export function refusal(role: WorkerRole, env: Record<string, string | undefined>): string | null {
  if (role !== 'scrape') return null;
  const held = SCRAPE_WORKER_REFUSES.filter((name) => env[name]);
  if (held.length === 0) return null;
  return `WORKER_ROLE=scrape runs the browser and must not hold ${held.join(', ')}: remove ${held.length > 1 ? 'them' : 'it'} from this worker's environment (the delivery worker, WORKER_ROLE=deliver, holds the secrets)`;
}

/**
 * Warns when a scrape worker's database role can read API keys (a superuser, or the tables'
 * owner): it runs, but not with "only the rights it needs" (SCRAPER_DB_ROLE, db/scraper-grants.ts).
 */
export async function warnOnBroadRights(db: Knex, log: Logger): Promise<void> {
  const { rows } = (await db.raw(
    `SELECT current_user AS role, coalesce(has_table_privilege(current_user, to_regclass('public.api_keys'), 'SELECT'), false) AS reads_keys`,
  )) as { rows: { role: string; reads_keys: boolean }[] };
  if (rows[0]?.reads_keys) {
    log.warn(
      { db_role: rows[0].role },
      'the scrape worker’s database role can read api_keys: give it a role of its own with only the scrape worker’s rights (SCRAPER_DB_ROLE; docs/operations.md#database-roles)',
    );
  }
}
