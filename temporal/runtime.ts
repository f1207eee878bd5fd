// Temporal inside `npm start`: the frontend (TEMPORAL_ADDRESS, else a dev server under DATA_DIR on
// a CLI binary provisioned once per machine), a client for the service, and, with RUN_WORKER,
// the workers for both task queues and the monitor relay in the same process. Kept here so src/main.ts stays short.
import type { Client } from '@temporalio/client';
import type { Registry } from 'prom-client';
import type { Config } from '../src/config.ts';
import type { ActivityDeps } from '../activities/index.ts';
import type { Logger } from '../src/logger.ts';
import { resolveTemporalCli } from './binary.ts';
import { connectTemporal, openTemporal } from './client.ts';
import { startDevServer } from './dev-server.ts';
import { ensureSearchAttributes } from './search-attributes.ts';
import { installSdkLogging } from './sdk-logging.ts';
import { ensureStripeSchedules } from '../src/billing/stripe/schedules.ts';
import { taskQueues } from './task-queues.ts';
import { WORKFLOWS_PATH, clientOnWorkers, startWorkers } from './worker.ts';
import { roleSides, warnOnBroadRights, type WorkerRole } from './worker-roles.ts';
import { createDb } from '../db/connection.ts';
import { countStatements } from '../db/statement-metrics.ts';
import { startServiceSignalRelay } from '../src/accounts/service-signals.ts';
import { startServiceSweep } from '../src/accounts/service-state.ts';
import { incidentRuleOf, startIncidentWatch } from '../src/monitors/platform-incidents.ts';
import { trackingServiceSignals } from '../src/market-data/tracking-lifecycle.ts';
import { memberServiceHooks, memberServiceSignals, startMembershipRelay } from '../src/monitors/membership.ts';
import { deliveryServiceHooks } from '../src/webhooks/parking.ts';
import { DEFAULT_SCHEDULE_MS, retryScheduleSpanMs } from '../src/webhooks/retry-schedule.ts';
import { startMonitorRelay } from '../src/monitors/relay.ts';
import { startDispatcher } from '../src/webhooks/dispatcher.ts';

/** Activity slots on the monitors queue: every shard poller's activity holds one for its whole run. */
const MONITOR_ACTIVITY_SLOTS = 1_000;

export { WORKFLOWS_PATH };

export interface TemporalRuntime {
  address: string;
  /** The dev server's Web UI; null when TEMPORAL_ADDRESS points elsewhere. */
  uiUrl: string | null;
  client: Client;
  /** Settles once the server has answered (at once for the dev server; TEMPORAL_ADDRESS's may be down at start). */
  reachable: Promise<void>;
  stop(): Promise<void>;
}

export async function startTemporal(config: Config, log: Logger, opts: { signal?: AbortSignal } = {}): Promise<TemporalRuntime> {
  const tlog = log.child({ component: 'temporal' });
  // Before anything can create the SDK's runtime with its default (stderr) logging.
  installSdkLogging(tlog);
  const address = config.TEMPORAL_ADDRESS;
  if (address) {
    // Someone else's server (docker-compose's) may be down as this process starts: the gateway
    // starts anyway and serves what does not need Temporal; calls made meanwhile fail within
    // their deadlines (a prompt 502/503), and the wait is logged once (temporal/client.ts).
    const opened = openTemporal({ address, namespace: config.TEMPORAL_NAMESPACE, waitFor: { log: tlog, signal: opts.signal } });
    return { address, uiUrl: null, client: opened.client, reachable: opened.reachable, stop: opened.close };
  }
  const binary = await resolveTemporalCli({
    cliPath: config.TEMPORAL_CLI_PATH,
    onProgress: (msg) => tlog.info(msg),
    signal: opts.signal,
  });
  const server = await startDevServer({
    binary,
    dataDir: config.dataDir,
    port: config.TEMPORAL_PORT,
    uiPort: config.TEMPORAL_UI_PORT,
    namespace: config.TEMPORAL_NAMESPACE,
    log: tlog,
  });
  let connected;
  try {
    connected = await connectTemporal({ address: server.address, namespace: config.TEMPORAL_NAMESPACE });
  } catch (err) {
    await server.stop();
    throw err;
  }
  return {
    address: server.address,
    uiUrl: server.uiUrl,
    client: connected.client,
    reachable: Promise.resolve(),
    stop: async () => {
      await connected.close();
      await server.stop();
    },
  };
}

/**
 * What a worker process runs, by role (temporal/worker-roles.ts; `all` unless told). The scrape
 * side: the scrapes and monitors queues' workers with the activities' shared resources (scrapers,
 * a database pool, the pollers' membership LISTEN and metrics), the membership relay that turns
 * watchlist changes into shard poller members (src/monitors/membership.ts), the service sweep
 * beside it, and the monitor relay that keeps the per-item monitors in step (src/monitors/relay.ts).
 * The delivery side: the webhooks and billing queues' workers, the Stripe schedules and the
 * webhook dispatcher.
 * `client` runs over the workers' own connection: a gateway in the same process starts scrapes
 * with it eagerly (TemporalScrapeRunner.startOnLocalWorkers).
 */
export async function startLocalWorkers(
  config: Config,
  log: Logger,
  address: string,
  opts: { connectionString: string; registry: Registry; shutdownGraceMs?: number; role?: WorkerRole; signal?: AbortSignal },
): Promise<{ stop(): Promise<void>; client: Client }> {
  const role = opts.role ?? 'all';
  const sides = roleSides(role);
  const wlog = log.child({ component: 'worker', role });
  // Loaded only by processes that run workers: the scrapers pull in crawlee and playwright. A
  // delivery worker loads its own activities only, and so never the scrapers or the browser.
  const createActivities = sides.scrape
    ? async (deps: ActivityDeps) => (await import('../activities/index.ts')).createActivities({ ...deps, role: sides.deliver ? 'all' : 'scrape' })
    : async (deps: ActivityDeps) => ({ ...(await import('../activities/delivery.ts')).createDeliveryActivities(deps), handBack: () => {}, close: async () => {} });
  const db = createDb({ connectionString: opts.connectionString, poolMax: 10, applicationName: 'worker', statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS });
  countStatements(db, opts.registry);
  const undo: { name: string; run: () => Promise<unknown> }[] = [{ name: 'database', run: () => db.destroy() }];
  const unwind = async () => {
    // Timed, as npm start's own steps are: a slow stop says where it waited.
    const steps: Record<string, number> = {};
    for (const u of undo.reverse()) {
      const t0 = performance.now();
      await u.run().catch((err: unknown) => wlog.warn({ err, step: u.name }, 'error while stopping the worker'));
      steps[u.name] = Math.round(performance.now() - t0);
    }
    wlog.info({ steps }, 'worker stopped');
  };
  try {
    // A server that is down as the worker starts is waited for (logged once), as it would be later.
    const temporal = await connectTemporal({ address, namespace: config.TEMPORAL_NAMESPACE, waitFor: { log: wlog, signal: opts.signal } });
    undo.push({ name: 'temporal client', run: () => temporal.close() });
    // A TEMPORAL_ADDRESS server (docker-compose's) gets the search attributes from the first worker.
    await ensureSearchAttributes(temporal.connection, config.TEMPORAL_NAMESPACE, wlog);
    if (role === 'scrape') await warnOnBroadRights(db, wlog);
    const { activities, handBack, webhookAttempts, close } = await createActivities({ config, log: wlog, db, connectionString: opts.connectionString, registry: opts.registry });
    undo.push({ name: 'activities', run: close });
    const queues = taskQueues(config);
    const workers = await startWorkers({
      connection: { address },
      namespace: config.TEMPORAL_NAMESPACE,
      queues: [
        ...(sides.scrape
          ? [
              { taskQueue: queues.scrapes, workflowsPath: WORKFLOWS_PATH, activities, maxConcurrentActivityTaskExecutions: config.SCRAPE_CONCURRENCY },
              // Every shard poll is a long-running activity on this queue: room for all of them.
              { taskQueue: queues.monitors, workflowsPath: WORKFLOWS_PATH, activities, maxConcurrentActivityTaskExecutions: MONITOR_ACTIVITY_SLOTS },
            ]
          : []),
        ...(sides.deliver ? [{ taskQueue: queues.webhooks, workflowsPath: WORKFLOWS_PATH, activities, maxConcurrentActivityTaskExecutions: config.WEBHOOK_CONCURRENCY }] : []),
        ...(sides.deliver && config.BILLING_PROVIDER === 'stripe' ? [{ taskQueue: queues.billing, workflowsPath: WORKFLOWS_PATH, activities, maxConcurrentActivityTaskExecutions: 4 }] : []),
      ],
      log: wlog,
      shutdownGraceMs: opts.shutdownGraceMs,
      onShutdown: handBack,
    });
    undo.push({ name: 'workers', run: () => workers.stop() });
    // The scrape side's feeders: they start shard pollers and monitors on the monitors queue.
    if (sides.scrape) {
      const relays = {
        connectionString: opts.connectionString,
        db,
        client: temporal.client,
        taskQueue: queues.monitors,
        shardsPerPlatform: config.MONITOR_SHARDS_PER_PLATFORM,
        log: wlog,
      };
      const membership = startMembershipRelay(relays);
      undo.push({ name: 'membership relay', run: () => membership.stop() });
      // Beside the membership relay: its hooks take a lapsed account's members out and put them
      // back, in the database only. What Temporal must be told of each change (pollers to start,
      // trackings to wake) goes through the signal relay, after the change has committed.
      const signalRelay = startServiceSignalRelay({
        db,
        signals: [memberServiceSignals(relays), trackingServiceSignals({ db, client: temporal.client })],
        log: wlog,
        registry: opts.registry,
      });
      undo.push({ name: 'service signal relay', run: () => signalRelay.stop() });
      const serviceSweep = startServiceSweep({
        db,
        hooks: [memberServiceHooks(relays), deliveryServiceHooks({ expireAfterMs: retryScheduleSpanMs(config.WEBHOOK_RETRY_SCHEDULE_MS ?? DEFAULT_SCHEDULE_MS) })],
        everyMs: config.SERVICE_SWEEP_MS,
        log: wlog,
        onChange: () => signalRelay.kick(),
      });
      undo.push({ name: 'service sweep', run: () => serviceSweep.stop() });
      const relay = startMonitorRelay(relays);
      undo.push({ name: 'monitor relay', run: () => relay.stop() });
      const incidents = startIncidentWatch({
        db,
        rule: incidentRuleOf(config),
        everyMs: config.MONITOR_INCIDENT_CHECK_MS,
        log: wlog,
        registry: opts.registry,
      });
      undo.push({ name: 'platform incident watch', run: () => incidents.stop() });
    }
    if (sides.deliver && config.BILLING_PROVIDER === 'stripe') {
      await ensureStripeSchedules(temporal.client, {
        taskQueue: queues.billing,
        reconcileEveryMs: config.STRIPE_RECONCILE_INTERVAL_MS,
        meterSyncEveryMs: config.STRIPE_METER_SYNC_INTERVAL_MS,
        log: wlog,
      });
    }
    const local = clientOnWorkers(workers, config.TEMPORAL_NAMESPACE);
    // Without the webhook key nothing here can open a webhook's secrets: deliveries wait in the
    // outbox for a worker that can. Stopped before the workers (undo runs in reverse).
    if (webhookAttempts) {
      const dispatcher = startDispatcher({ db, connectionString: opts.connectionString, client: temporal.client, attempts: webhookAttempts, taskQueue: queues.webhooks, log: wlog });
      undo.push({ name: 'webhook dispatcher', run: () => dispatcher.stop() });
    }
    return { stop: unwind, client: local };
  } catch (err) {
    await unwind();
    throw err;
  }
}
