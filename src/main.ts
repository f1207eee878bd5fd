// `npm start`: the whole service on embedded defaults. PostgreSQL (DATABASE_URL or embedded),
// migrations, the demo account on first start, Temporal (TEMPORAL_ADDRESS or a dev server) and
// its workers, the platform simulator on SIM_PORT, the gateway on PORT and metrics on METRICS_PORT. Ctrl-C stops everything
// cleanly; data persists under DATA_DIR.
import { mkdir } from 'node:fs/promises';
import type { Server } from 'node:http';
import path from 'node:path';
import { APIS } from './apis/index.ts';
import { ensureDemoAccount } from './accounts/demo.ts';
import { ensureDemoCatalog } from './market-data/seed/seed.ts';
import { loadConfigOrExit, marketplaceBaseUrls, simulatorCaFile } from './config.ts';
import { createGateway } from './gateway/app.ts';
import { createLogger } from './logger.ts';
import { canConnect } from '../db/embedded.ts';
import { openDatabase } from './runtime/database.ts';
import { assertPortFree, namedListenError } from './runtime/ports.ts';
import { startHousekeeping } from './runtime/housekeeping.ts';
import { closeServices, createRequestPool, createServices } from './runtime/services.ts';
import { leftoverDevServer } from '../temporal/dev-server.ts';
import { startLocalWorkers, startTemporal } from '../temporal/runtime.ts';
import { TemporalScrapeRunner } from './apis/live-availability/scrape-runs.ts';
import { TemporalEventTracker } from './market-data/tracking-service.ts';
import { startSimulator } from './simulator/server.ts';
import { ensureWebhookKey } from './webhooks/secret-box.ts';
import { forwardStreamUpgrades } from './stream/forward.ts';
import { STREAM_PATH } from './stream/protocol.ts';
import { startStreamNode } from './stream/start.ts';

/**
 * Longer than any proxy's idle keep-alive to us (nginx keeps upstream connections 60 s): Node's
 * default 5 s closed connections nginx was about to reuse, and a POST or PATCH sent on one in that
 * instant came back 502 (the rehearsal: "upstream prematurely closed connection"); nginx retries
 * only idempotent requests.
 */
const KEEP_ALIVE_MS = 65_000;

function listen(app: ReturnType<typeof createGateway>, port: number, host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(port, host);
    server.keepAliveTimeout = KEEP_ALIVE_MS;
    // Must exceed the keep-alive, or a request on a kept connection can be cut off by it.
    server.headersTimeout = KEEP_ALIVE_MS + 1_000;
    server.once('listening', () => resolve(server));
    server.once('error', (err) => reject(namedListenError(err, port, 'PORT')));
  });
}

/**
 * The ports this start will bind, each with its setting. All are checked before anything starts:
 * a busy one is named with whoever holds it at once, rather than after PostgreSQL and Temporal
 * have come up and gone down again. (Each bind still reports a port lost after this check.)
 */
function portsToBind(config: ReturnType<typeof loadConfigOrExit>): { port: number; variable: string; host: string }[] {
  const ports = [
    { port: config.PORT, variable: 'PORT', host: config.HOST },
    { port: config.METRICS_PORT, variable: 'METRICS_PORT', host: config.HOST },
  ];
  if (!config.DATABASE_URL) ports.push({ port: config.EMBEDDED_PG_PORT, variable: 'EMBEDDED_PG_PORT', host: '127.0.0.1' });
  if (!config.TEMPORAL_ADDRESS) {
    ports.push({ port: config.TEMPORAL_PORT, variable: 'TEMPORAL_PORT', host: '127.0.0.1' });
    ports.push({ port: config.TEMPORAL_UI_PORT, variable: 'TEMPORAL_UI_PORT', host: '127.0.0.1' });
  }
  if (config.RUN_SIMULATOR) ports.push({ port: config.SIM_PORT, variable: 'SIM_PORT', host: '127.0.0.1' });
  if (config.RUN_STREAM) ports.push({ port: config.STREAM_PORT, variable: 'STREAM_PORT', host: config.HOST });
  return ports;
}

/** In-flight requests get this long to finish on Ctrl-C; then their connections are closed. */
const DRAIN_MS = 5_000;
/** How long a start-up failure waits for the signal that may have caused it (see below). */
const SIGNAL_GRACE_MS = 300;
/** If stopping takes longer than this, something hangs: exit anyway, non-zero. */
const STOP_DEADLINE_MS = 15_000;

async function main(): Promise<void> {
  const loaded = loadConfigOrExit();
  // Webhook URLs and secrets are sealed at rest; without a key in the environment, one is kept
  // in DATA_DIR (made on first start) so data sealed by an earlier run still opens.
  const webhookKey = await ensureWebhookKey(loaded.WEBHOOK_SECRET_KEY, loaded.dataDir);
  const config = { ...loaded, WEBHOOK_SECRET_KEY: webhookKey.key };
  const log = createLogger(config.LOG_LEVEL);
  if (webhookKey.created) log.info({ file: webhookKey.file }, 'created the webhook encryption key');
  const started = performance.now();

  // What to undo on the way out, newest first. Signal handlers are in place from the start: a
  // Ctrl-C during start-up (an embedded server initialising) lets the step under way finish,
  // starts nothing more, and undoes what was started (in-process steps that wait on those
  // servers are not waited out: unlessStopped).
  const cleanups: { name: string; run: () => Promise<void> }[] = [];
  let stopping = false;
  let exitCode = 0;
  /** Settles once the local workers have stopped (see the 'workers' and 'services' steps). */
  let workersStopped: Promise<void> = Promise.resolve();
  let startup: Promise<unknown> = Promise.resolve();
  // Cuts short the one start-up step that can take minutes: the first build of the Temporal CLI.
  const aborted = new AbortController();
  const stop = async (reason: string, code: number) => {
    if (stopping) return;
    stopping = true;
    aborted.abort(new Error(`stopped (${reason})`));
    log.info({ reason }, 'stopping');
    // Not unref'd: should a step hang on a promise that never settles, the process must not
    // drift to a silent exit 0 with nothing left to run, but fail loudly.
    setTimeout(() => {
      log.error({ ms: STOP_DEADLINE_MS }, 'could not stop in time; exiting');
      process.exit(1);
    }, STOP_DEADLINE_MS);
    exitCode = code;
    const stopStarted = performance.now();
    await startup;
    // How long each step took, in the last line: a slow stop says where it waited.
    const steps: Record<string, number> = {};
    for (const c of cleanups.reverse()) {
      const t0 = performance.now();
      try {
        await c.run();
      } catch (err) {
        log.error({ err, step: c.name }, 'error while stopping');
        exitCode ||= 1;
      }
      steps[c.name] = Math.round(performance.now() - t0);
    }
    log.info({ ms: Math.round(performance.now() - stopStarted), steps }, 'stopped');
    process.exit(exitCode);
  };
  /**
   * An in-process start-up step that a stop does not wait out: a terminal's Ctrl-C stops the
   * embedded PostgreSQL and Temporal servers at the same moment (one process group), and the
   * stream's LISTEN connection or the worker would retry them for seconds, or for ever. What the
   * step brings up after all is undone at once; the process exits anyway. Steps that start
   * servers of their own (PostgreSQL, Temporal) are waited for, so none is left behind.
   */
  const unlessStopped = <T>(step: Promise<T>, undo: (started: T) => Promise<unknown>): Promise<T> =>
    Promise.race([step, whenAborted(aborted.signal)]).catch((err: unknown) => {
      if (aborted.signal.aborted) void step.then(undo).catch(() => {});
      throw err;
    });
  process.on('SIGINT', () => void stop('SIGINT', 0));
  process.on('SIGTERM', () => void stop('SIGTERM', 0));

  startup = (async () => {
    // An embedded PostgreSQL left running by an earlier start holds its port and is reused, so
    // that port is only checked when nothing answers there (db/embedded.ts decides). A Temporal
    // dev server a killed run left on this DATA_DIR holds its ports until the launcher stops it
    // (temporal/dev-server.ts): those are not taken either.
    const leftover = config.TEMPORAL_ADDRESS ? null : await leftoverDevServer(config.dataDir);
    for (const p of portsToBind(config)) {
      if (p.variable === 'EMBEDDED_PG_PORT' && (await canConnect(p.port))) continue;
      if (leftover !== null && (p.variable === 'TEMPORAL_PORT' || p.variable === 'TEMPORAL_UI_PORT')) continue;
      await assertPortFree(p.port, p.variable, p.host);
    }
    const database = await openDatabase(config, (msg) => log.info(msg), {
      applicationName: 'gateway',
      log: (level, msg) => log.warn({ source: 'knex', level }, msg),
    });
    cleanups.push({ name: 'database', run: () => database.close() });
    if (stopping) return;
    log.info({ embedded: database.embedded, cluster: database.clusterDir ?? undefined }, 'database ready');
    // Not always DATA_DIR/postgres (as root it may be elsewhere: docs/operations.md): say where the data is.
    if (database.clusterDir) console.log(`\n  Embedded PostgreSQL data: ${database.clusterDir}\n`);

    if (config.DEMO_ACCOUNT) {
      const demo = await ensureDemoAccount(database.db, config.dataDir);
      if (demo.created) {
        console.log(`\n  Demo account created. Its API key (shown once, also saved in ${demo.keyFile}):\n\n    ${demo.key}\n`);
      } else {
        console.log(`\n  Demo account: its key was printed at first start and saved in ${demo.keyFile}\n`);
      }
      // A small catalog so the first search finds something; only ever into an empty catalog.
      const catalog = await ensureDemoCatalog(database.db);
      if (catalog.created) console.log(`  Demo catalog seeded: ${catalog.events} events (npm run seed -- --events <n> --append adds more)\n`);
    }
    if (stopping) return;

    // Stopped after the gateway (cleanups run newest first): requests in flight may still start
    // workflows.
    const temporal = await startTemporal(config, log, { signal: aborted.signal });
    cleanups.push({ name: 'temporal', run: () => temporal.stop() });
    // A TEMPORAL_ADDRESS server down at start is waited for while the API serves; one that answers
    // but refuses the namespace is a configuration error, and stops the process.
    temporal.reachable.catch((err: unknown) => {
      if (!stopping) {
        console.error('failed to start:', err instanceof Error ? err.message : err);
        void stop('Temporal refused the namespace', 1);
      }
    });
    if (temporal.uiUrl) console.log(`  Temporal Web UI: ${temporal.uiUrl}\n`);
    if (stopping) return;

    if (config.RUN_SIMULATOR) {
      // Its CA where the scrapers look for it by default (config.ts, scrapeCaFile), before the
      // workers below build their first client.
      const caFile = simulatorCaFile(config);
      await mkdir(path.dirname(caFile), { recursive: true });
      const sim = await startSimulator({
        port: config.SIM_PORT,
        host: '127.0.0.1',
        driftMs: config.SIM_DRIFT_MS,
        pf01SessionTtlMs: config.SIM_PF01_SESSION_TTL_MS,
        walls: config.SIM_WALLS ? 'on' : 'off',
        caFile,
      }).catch((err: unknown) => {
        throw namedListenError(err, config.SIM_PORT, 'SIM_PORT');
      });
      cleanups.push({ name: 'simulator', run: () => sim.close() });
      console.log(`  Platform simulator (the scrapers' default target): ${sim.httpsUrl}/_sim/events (its CA: ${caFile}; bot walls ${config.SIM_WALLS ? 'on' : 'off'})\n`);
    }
    if (stopping) return;

    const services = {
      ...createServices(config, database.db, createRequestPool(config, database.connectionString), log),
      scrapes: new TemporalScrapeRunner(temporal.client, { taskQueue: config.SCRAPE_TASK_QUEUE, timeoutMs: config.SCRAPE_TIMEOUT_MS, browserReports: database.db }),
      tracking: new TemporalEventTracker(database.db, temporal.client, marketplaceBaseUrls(config), {
        taskQueue: config.MONITOR_TASK_QUEUE,
        scrapeQueue: config.SCRAPE_TASK_QUEUE,
        intervalMs: config.TRACK_INTERVAL_MS,
      }),
    };
    cleanups.push({
      name: 'services',
      run: async () => {
        // The first step after the gateway's drain that the activities still need around them
        // (the simulator, Temporal and the database after it): the workers' stop ends here.
        await workersStopped;
        await closeServices(services);
      },
    });
    const app = createGateway(services, APIS);
    const server = await listen(app, config.PORT, config.HOST);
    cleanups.push({ name: 'gateway', run: () => drain(server) });
    const metricsServer = await services.metrics.listen(config.METRICS_PORT, config.HOST);
    cleanups.push({ name: 'metrics', run: () => drain(metricsServer) });
    const stopHousekeeping = startHousekeeping(services);
    cleanups.push({ name: 'housekeeping', run: () => stopHousekeeping() });
    if (stopping) return;
    log.info(
      { port: config.PORT, metrics_port: config.METRICS_PORT, ms: Math.round(performance.now() - started) },
      `gateway listening on http://localhost:${config.PORT} (OpenAPI at /openapi.json, rendered at /docs)`,
    );

    // The real-time stream (uWebSockets.js) on STREAM_PORT, and on the gateway's port through
    // the upgrade forwarder. Stopped before the gateway: its connections close with 1001 first.
    if (config.RUN_STREAM) {
      const stream = await unlessStopped(
        startStreamNode({
          config,
          db: database.db,
          connectionString: database.connectionString,
          log,
          registry: services.metrics.registry,
          keys: services.keys,
          limiter: services.limiter,
        }),
        (s) => s.close(),
      );
      const forwarder = forwardStreamUpgrades(server, { port: stream.server.port, trustProxy: config.TRUST_PROXY, log });
      cleanups.push({
        name: 'stream',
        run: async () => {
          await stream.close();
          forwarder.close();
        },
      });
      log.info({ port: stream.server.port }, `stream on ws://localhost:${config.PORT}${STREAM_PATH} (AsyncAPI at /asyncapi.json)`);
    }
    if (stopping) return;

    // Last, as loading the scrapers and bundling the workflow code take seconds and the API does
    // not need them to answer: workflows started meanwhile wait on their task queue. Stopped
    // first, while the server and the database their activities use are still up.
    if (config.RUN_WORKER) {
      const workers = await unlessStopped(
        startLocalWorkers(config, log, temporal.address, {
          connectionString: database.connectionString,
          registry: services.metrics.registry,
          // Ctrl-C should be quick: a poll in flight is simply done again at the next start
          // (production's worker keeps 5 s).
          shutdownGraceMs: 1_500,
          // A TEMPORAL_ADDRESS server still down is waited for; a stop cuts the wait short.
          signal: aborted.signal,
        }),
        (w) => w.stop(),
      );
      // The gateway then hands new scrapes straight to this process's worker (eager start).
      services.scrapes.startOnLocalWorkers(workers.client);
      cleanups.push({
        name: 'workers',
        run: async () => {
          services.scrapes.startOnLocalWorkers(null);
          // Not awaited here: waiting on the activities in flight (up to the grace period, longer
          // when a terminal's Ctrl-C has already stopped the dev server they report to) and
          // draining the gateway's clients (up to DRAIN_MS) are independent waits, and one after
          // the other they outlasted a 10 s stop. The Temporal step waits for this one.
          workersStopped = workers.stop().catch((err: unknown) => {
            log.error({ err, step: 'workers' }, 'error while stopping');
            exitCode ||= 1;
          });
        },
      });
      log.info({ ms: Math.round(performance.now() - started) }, 'worker ready');
    }
  })().then(
    () => null,
    (err: unknown) => err ?? new Error('start-up failed'),
  );
  const failure = await startup;
  // A terminal's Ctrl-C reaches the embedded servers and this process at once: a step talking to
  // them (the worker registering search attributes, a LISTEN) can fail on their shutdown before
  // our own SIGINT handler has run. Give that signal a moment before calling it a failure.
  if (failure && !stopping) await new Promise((r) => setTimeout(r, SIGNAL_GRACE_MS));
  // A step cut short by a stop already under way is not a start-up failure.
  if (failure && !stopping) {
    console.error('failed to start:', failure instanceof Error ? failure.message : failure);
    await stop('start-up failed', 1);
  }
}

/** Rejects with the signal's reason once it is aborted; never settles otherwise. */
function whenAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

/** Stops accepting, lets requests in flight finish (up to DRAIN_MS), then closes what is left. */
async function drain(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), DRAIN_MS)));
  if ((await Promise.race([closed, late])) === 'late') {
    server.closeAllConnections();
    await closed;
  }
  clearTimeout(timer);
}

main().catch((err) => {
  console.error('failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});
