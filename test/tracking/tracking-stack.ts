// The whole event-tracking path for a test file, all real (test/support/worker-stack.ts sets up
// the scratch database, simulator, worker and gateway, as for the monitors): the worker on a
// unique monitors queue scrapes the simulator's marketplaces A and B, and the gateway's
// POST /svc/data/events/add starts trackEvent workflows there. TRACK_INTERVAL_MS is short so a
// tick comes every few hundred milliseconds.
import type { TrackableMarketplace } from '../../src/market-data/tracking-ref.ts';
import { TemporalEventTracker } from '../../src/market-data/tracking-service.ts';
import type { Simulator } from '../../src/simulator/server.ts';
import { call, newAccount, type Reply } from '../support/harness.ts';
import { uniqueTaskQueue } from '../support/temporal.ts';
import { useWorkerStack, type WorkerStack } from '../support/worker-stack.ts';

import { eventually } from '../support/harness.ts';
import { putEvent } from '../support/simulator.ts';

export { eventually };

export interface TrackingStack extends WorkerStack {
  /** An API key of a fresh account (all APIs, generous rate limit). */
  key: string;
  /** POST /svc/data/events/add through the gateway. */
  add(body: unknown): Promise<Reply>;
  /** Sets a marketplace event exactly through the simulator's control API. */
  put(marketplace: 'marketplace_a' | 'marketplace_b' | 'marketplace_c', id: string, body: unknown): Promise<void>;
  /** The event's tracked_events row, if it has one. */
  record(marketplace: TrackableMarketplace, id: string): Promise<TrackedRow | undefined>;
  /** Waits until the tracking is active and has written at least `scrapes` ticks; returns its row. */
  scraped(marketplace: TrackableMarketplace, id: string, scrapes?: number): Promise<TrackedRow>;
}

/** A tracked_events row as the database driver returns it (tests read its columns freely). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- raw row of a knex query
export type TrackedRow = Record<string, any>;

const marketplaceUrls = (sim: Simulator) => ({ marketplace_a: sim.marketplaceUrls.marketplace_a, marketplace_b: sim.marketplaceUrls.marketplace_b });

export function useTrackingStack(
  opts: { intervalMs?: number; worker?: 'in-process' | 'child-process'; ticksPerRun?: number; /** Worker settings on top (TRACKING_*). */ env?: Record<string, string> } = {},
): TrackingStack {
  return useWorkerStack<TrackingStack>({
    database: 'tm_tracking',
    env: {
      TRACK_INTERVAL_MS: String(opts.intervalMs ?? 300),
      SCRAPE_TASK_QUEUE: uniqueTaskQueue('scrapes'),
      MONITOR_TASK_QUEUE: uniqueTaskQueue('tracking'),
      BROWSER_PAGES: '1',
      ...opts.env,
    },
    worker: opts.worker,
    // As in production: trackings on the monitors queue, their ticks on the scrapes queue.
    queues: (config) => [config.MONITOR_TASK_QUEUE, config.SCRAPE_TASK_QUEUE],
    activities: ({ sim }) => ({ marketplaceBaseUrls: marketplaceUrls(sim) }),
    childEnv: ({ config, sim }) => ({
      ...opts.env,
      TRACK_INTERVAL_MS: String(config.TRACK_INTERVAL_MS),
      MARKETPLACE_A_BASE_URL: marketplaceUrls(sim).marketplace_a,
      MARKETPLACE_B_BASE_URL: marketplaceUrls(sim).marketplace_b,
    }),
    services: ({ db, client, sim, config }) => ({
      tracking: new TemporalEventTracker(db, client, marketplaceUrls(sim), {
        taskQueue: config.MONITOR_TASK_QUEUE,
        scrapeQueue: config.SCRAPE_TASK_QUEUE,
        intervalMs: config.TRACK_INTERVAL_MS,
        ticksPerRun: opts.ticksPerRun,
      }),
    }),
    build: async (stack) => {
      const { sim, gateway } = stack;
      const { key } = await newAccount(stack.db);
      const record = (marketplace: TrackableMarketplace, id: string): Promise<TrackedRow | undefined> =>
        stack.db('tracked_events').where({ marketplace, external_id: id }).first();
      return {
        ...stack,
        key,
        add: (body) => call(gateway.url, 'POST', '/svc/data/events/add', { key, body }),
        put: (marketplace, id, body) => putEvent(sim, marketplace, id, body),
        record,
        // 90 s: after a worker SIGKILL the run waits out its workflow task's time-out and the new
        // worker's start; under a full parallel run that once took past 45 s.
        scraped: (marketplace, id, scrapes = 1) =>
          eventually(async () => {
            const r = await record(marketplace, id);
            return r && r.status === 'active' && r.scrape_count >= scrapes ? r : undefined;
          }, 90_000),
      };
    },
  });
}
