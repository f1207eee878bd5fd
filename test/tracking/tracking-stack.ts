// The whole event-tracking path for a test file, all real (test/support/worker-stack.ts sets up
// the scratch database, simulator, worker and gateway, as for the monitors): the worker on a
// unique monitors queue scrapes the simulator's marketplaces A and B, and the gateway's
// POST /svc/data/events/add starts trackEvent workflows there. TRACK_INTERVAL_MS is short so a
// tick comes every few hundred milliseconds.
import { TemporalEventTracker } from '../../src/market-data/tracking-service.ts';
import type { Simulator } from '../../src/simulator/server.ts';
import { call, newAccount, type Reply } from '../support/harness.ts';
import { uniqueTaskQueue } from '../support/temporal.ts';
import { useWorkerStack, type WorkerStack } from '../support/worker-stack.ts';

export { eventually } from '../support/monitor-stack.ts';

export interface TrackingStack extends WorkerStack {
  /** An API key of a fresh account (all APIs, generous rate limit). */
  key: string;
  /** POST /svc/data/events/add through the gateway. */
  add(body: unknown): Promise<Reply>;
  /** Sets a marketplace event exactly through the simulator's control API. */
  put(marketplace: 'marketplace_a' | 'marketplace_b' | 'marketplace_c', id: string, body: unknown): Promise<void>;
}

const marketplaceUrls = (sim: Simulator) => ({ marketplace_a: sim.marketplaceUrls.marketplace_a, marketplace_b: sim.marketplaceUrls.marketplace_b });

/** A marketplace A id no other test (in this run's shared Temporal namespace) uses. */
export function randomAId(): string {
  return `E-${1 + Math.floor(Math.random() * 9e11)}`;
}

/** A marketplace B id no other test uses. */
export function randomBId(): string {
  return `T${Math.random().toString(36).slice(2, 12).toUpperCase()}${Date.now().toString(36).toUpperCase()}`.slice(0, 20);
}

export function useTrackingStack(opts: { intervalMs?: number; worker?: 'in-process' | 'child-process'; ticksPerRun?: number } = {}): TrackingStack {
  return useWorkerStack<TrackingStack>({
    database: 'tm_tracking',
    env: {
      TRACK_INTERVAL_MS: String(opts.intervalMs ?? 300),
      SCRAPE_TASK_QUEUE: uniqueTaskQueue('scrapes'),
      MONITOR_TASK_QUEUE: uniqueTaskQueue('tracking'),
      BROWSER_PAGES: '1',
    },
    worker: opts.worker,
    queues: (config) => [config.MONITOR_TASK_QUEUE],
    activities: ({ sim }) => ({ marketplaceBaseUrls: marketplaceUrls(sim) }),
    childEnv: ({ config, sim }) => ({
      TRACK_INTERVAL_MS: String(config.TRACK_INTERVAL_MS),
      MARKETPLACE_A_BASE_URL: marketplaceUrls(sim).marketplace_a,
      MARKETPLACE_B_BASE_URL: marketplaceUrls(sim).marketplace_b,
    }),
    services: ({ db, client, sim, config }) => ({
      tracking: new TemporalEventTracker(db, client, marketplaceUrls(sim), {
        taskQueue: config.MONITOR_TASK_QUEUE,
        intervalMs: config.TRACK_INTERVAL_MS,
        ticksPerRun: opts.ticksPerRun,
      }),
    }),
    build: async (stack) => {
      const { sim, gateway } = stack;
      const { key } = await newAccount(stack.db);
      return {
        ...stack,
        key,
        add: (body) => call(gateway.url, 'POST', '/svc/data/events/add', { key, body }),
        put: async (marketplace, id, body) => {
          const res = await fetch(`${sim.url}/_sim/${marketplace}/events/${encodeURIComponent(id)}`, {
            method: 'PUT',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
          if (res.status !== 200) throw new Error(`simulator PUT ${marketplace}/${id}: ${res.status} ${await res.text()}`);
        },
      };
    },
  });
}
