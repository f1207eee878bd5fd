// The real parts of a run, started in order and each registered for the cleanup as it starts:
// a scratch database (DATABASE_URL's server, else an embedded PostgreSQL), a fresh Temporal dev
// server (it registers the custom search attributes), the platform simulator in its own
// process, the worker as a child process (temporal/worker-main.ts, the production entry), and
// in this process the gateway serving the Watchlist API and a stream node. The worker gets the
// bench platform's request budget (SCRAPE_RPS_PER_PLATFORM), CHROMIUM_PATH, and BROWSER_SESSIONS
// when BENCH_BROWSER_SESSIONS is set; the simulator the pf_01 session lifetime. Other benches
// (bench:alerts, on every platform; bench:proxies, with its loopback proxies) adjust it through
// StackOptions; without them it is as above.
import { execFile } from 'node:child_process';
import { startBenchGateway } from '../support/gateway.ts';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import proto from '@temporalio/proto';
import { Registry } from 'prom-client';
import { loadConfig, type Config } from '../../src/config.ts';
import { chromiumFix, chromiumFound } from '../../src/scrapers/chromium.ts';
import { STREAM_PATH } from '../../src/stream/protocol.ts';
import { startStreamNode } from '../../src/stream/start.ts';
import { createDb, type Db } from '../../db/connection.ts';
import { createPool, type Pool } from '../../db/pool.ts';
import { createScratchDatabase } from '../../db/scratch.ts';
import { resolveTemporalCli } from '../../temporal/binary.ts';
import { connectTemporal, type TemporalClient } from '../../temporal/client.ts';
import { createTemporalDatabases } from '../../temporal/databases.ts';
import { startDevServer } from '../../temporal/dev-server.ts';
import { reserveTemporalPorts, TemporalCluster } from '../../temporal/production-server.ts';
import { resolveTemporalServer } from '../../temporal/server-binary.ts';
import { reservePort } from '../support/processes.ts';
import type { BenchConfig } from './config.ts';
import type { Lifecycle } from './lifecycle.ts';
import { Meter } from './meter.ts';
import { PgCpu } from './pg-cpu.ts';
import { shapeFor, type PlatformShape } from './platform.ts';
import { countingLogger, progress, startSimulatorProcess, type SimProcess } from './support.ts';
import { WorkerProcess } from './worker-process.ts';

const NAMESPACE = 'default';
const { TaskQueueType } = proto.temporal.api.enums.v1;

export interface Stack {
  config: Config;
  /** The platform every target is on, and its events' shape. */
  shape: PlatformShape;
  /** The Chromium the worker was given (CHROMIUM_PATH), and what `--version` says (null: not asked). */
  chromium: { path: string; version: string | null };
  /** BROWSER_SESSIONS as given to the worker (null: not set). */
  browserSessions: string | null;
  databaseUrl: string;
  /** The bench's own connections (application_name bench-monitors: not counted as the service's). */
  db: Db;
  pool: Pool;
  sim: SimProcess;
  temporal: TemporalClient;
  temporalPid: number | null;
  worker: WorkerProcess;
  /** The SCRAPE_RPS_PER_PLATFORM given to the worker. */
  rpsSetting: string;
  /** Pages the worker's browser keeps open at once (BROWSER_PAGES as the worker reads it). */
  browserPages: number;
  shards: number;
  gatewayUrl: string;
  streamUrl: string;
  pg: PgCpu | null;
  meter: Meter;
  logCounts: Map<string, number>;
  /** Workflow tasks waiting on the monitors queue (null when the server does not say). */
  monitorBacklog(): Promise<number | null>;
}

/** What another bench changes about the stack (bench:alerts); each field optional, none: bench:monitors' stack. */
export interface StackOptions {
  /** The scratch database's name prefix (default tm_bench_monitors). */
  databasePrefix?: string;
  /** SCRAPE_RPS_PER_PLATFORM for the worker (default `{bench platform}={bench.rps}`). */
  rpsSetting?: string;
  /** More environment for the worker and the in-process gateway's config (e.g. SCRAPE_TIMEOUT_MS). */
  env?: Record<string, string>;
  /** Chromium is required even when the bench platform does not need it (the worker polls pf_01 too). */
  browser?: boolean;
  /** The loopback proxies' process (BENCH_PROXIES, bench:proxies), measured apart; the caller started it and gives the worker its SCRAPE_PROXY_URLS in `env`. */
  proxiesPid?: number;
}

export async function startStack(bench: BenchConfig, life: Lifecycle, options: StackOptions = {}): Promise<Stack> {
  const { log, counts, line } = countingLogger();
  const shape = shapeFor(bench.platform);
  const needsBrowser = shape.browser || options.browser === true;
  // The worker's own default when CHROMIUM_PATH is not set (src/config.ts), named to the worker
  // either way so the report says which browser was measured.
  const chromiumPath = loadConfig(process.env).CHROMIUM_PATH;
  let chromiumVersion: string | null = null;
  if (needsBrowser) {
    if (!(await chromiumFound(chromiumPath))) throw new Error(`${chromiumFix(chromiumPath)} (${shape.browser ? `BENCH_PLATFORM=${shape.platform}` : 'pf_01'} is read with it)`);
    chromiumVersion = await new Promise<string | null>((resolve) =>
      execFile(chromiumPath, ['--version'], { timeout: 30_000 }, (err, stdout) => resolve(err ? null : stdout.trim() || null)),
    );
  }

  progress('creating a scratch database...');
  const scratch = await createScratchDatabase(options.databasePrefix ?? 'tm_bench_monitors');
  life.onCleanup('scratch database', () => scratch.drop());
  // On DATABASE_URL's server (an embedded one is this process's child and goes with it).
  if (process.env.DATABASE_URL) life.started({ db: { base: process.env.DATABASE_URL, name: new URL(scratch.url).pathname.slice(1) } });
  life.check();
  const db = createDb({ connectionString: scratch.url, poolMax: 4, applicationName: 'bench-monitors' });
  life.onCleanup('bench database connections', () => db.destroy());
  const pool = createPool({ connectionString: scratch.url, max: 4, applicationName: 'bench-monitors' });
  life.onCleanup('bench pool', () => pool.end());

  progress('starting the simulator (own process) and a Temporal dev server...');
  const sim = await startSimulatorProcess({ platform: shape.platform, pf01SessionTtlMs: bench.sessionTtlMs, walls: bench.walls });
  life.onCleanup('simulator', () => sim.stop());
  life.started({ process: { pid: sim.pid, match: 'simulator-main' } });
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-bench-monitors-'));
  life.onCleanup('Temporal data directory', () => fs.rm(dataDir, { recursive: true, force: true }));
  life.started({ dir: dataDir });
  const binary = await resolveTemporalCli({ onProgress: (m) => progress(`  temporal: ${m}`) });
  const server = bench.temporal === 'server' ? await startProductionTemporal(scratch.url, binary, dataDir, life) : await startDevServer({ binary, dataDir, port: 0, uiPort: 0, namespace: NAMESPACE, log });
  life.onCleanup(`Temporal ${bench.temporal === 'server' ? 'server' : 'dev server'}`, () => server.stop());
  if (server.pid) life.started({ process: { pid: server.pid, match: dataDir } });
  const temporal = await connectTemporal({ address: server.address, namespace: NAMESPACE });
  life.onCleanup('Temporal client', () => temporal.close());
  life.check();

  // Over HTTPS, the simulator's CA trusted by the worker's HTTP client and browser alike.
  const platformUrls = {
    ...Object.fromEntries(Object.entries(sim.baseUrls).map(([platform, url]) => [`${platform.toUpperCase()}_BASE_URL`, url])),
    SCRAPE_CA_FILE: sim.caFile,
  };
  const rpsSetting = options.rpsSetting ?? `${shape.platform}=${bench.rps}`;
  const browserSessions = bench.browserSessions === null ? null : String(bench.browserSessions);
  const metricsPort = await reservePort();
  const workerEnv: NodeJS.ProcessEnv = {
    ...process.env,
    ...platformUrls,
    DATABASE_URL: scratch.url,
    TEMPORAL_ADDRESS: server.address,
    TEMPORAL_NAMESPACE: NAMESPACE,
    MONITOR_INTERVAL_MS: String(bench.intervalMs),
    METRICS_PORT: String(metricsPort),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    SCRAPE_RPS_PER_PLATFORM: rpsSetting,
    CHROMIUM_PATH: chromiumPath,
    ...options.env,
  };
  // Only when asked for: otherwise the worker keeps its own default (and no stale value leaks in).
  if (browserSessions !== null) workerEnv.BROWSER_SESSIONS = browserSessions;
  else delete workerEnv.BROWSER_SESSIONS;
  const worker = new WorkerProcess(workerEnv, `http://127.0.0.1:${metricsPort}/metrics`, (l) => line(l, 'worker'), (pid) =>
    life.started({ group: { pid, match: 'worker-main' } }),
  );
  life.onCleanup('worker', () => worker.stop());
  progress(
    `starting the worker (child process: temporal/worker-main.ts, SCRAPE_RPS_PER_PLATFORM=${rpsSetting}, CHROMIUM_PATH=${chromiumPath}` +
      `${browserSessions !== null ? `, BROWSER_SESSIONS=${browserSessions}` : ''})...`,
  );
  const first = await worker.start();
  progress(`  worker ready in ${((first.readyAt - first.spawnedAt) / 1000).toFixed(1)} s (pid ${worker.pid})`);
  life.check();

  // The gateway and the stream node, in this process, on the scratch database.
  const config = loadConfig({
    ...process.env,
    ...platformUrls,
    DATABASE_URL: scratch.url,
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    STREAM_PORT: '0',
    UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: '1000000',
    MONITOR_INTERVAL_MS: String(bench.intervalMs),
    TEMPORAL_ADDRESS: server.address,
    TEMPORAL_NAMESPACE: NAMESPACE,
    ...options.env,
  });
  const { url: gatewayUrl, db: gatewayDb } = await startBenchGateway(config, scratch.url, log, life);
  const node = await startStreamNode({ config, db: gatewayDb, connectionString: scratch.url, log, registry: new Registry() });
  // Before the gateway's cleanup (registered earlier, run later): the node uses its database.
  life.onCleanup('stream node', () => node.close());
  const streamUrl = `ws://127.0.0.1:${node.server.port}${STREAM_PATH}`;

  const pg = new PgCpu(pool);
  const pgVisible = await pg.start();
  life.onCleanup('PostgreSQL sampler', async () => pg.stop());
  if (!pgVisible) progress('  PostgreSQL is not a process on this machine: its CPU is not measured (the per-poll and per-notification figures lack it)');

  const monitorBacklog = async () => {
    try {
      const res = await temporal.connection.workflowService.describeTaskQueue({
        namespace: NAMESPACE,
        taskQueue: { name: config.MONITOR_TASK_QUEUE },
        taskQueueType: TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        reportStats: true,
      });
      return Number(res.stats?.approximateBacklogCount ?? 0);
    } catch {
      return null;
    }
  };

  return {
    config,
    shape,
    chromium: { path: chromiumPath, version: chromiumVersion },
    browserSessions,
    browserPages: loadConfig(workerEnv).BROWSER_PAGES,
    databaseUrl: scratch.url,
    db,
    pool,
    sim,
    temporal,
    temporalPid: server.pid ?? null,
    worker,
    rpsSetting,
    shards: config.MONITOR_SHARDS_PER_PLATFORM,
    gatewayUrl,
    streamUrl,
    pg: pgVisible ? pg : null,
    meter: new Meter({ worker, temporalPid: server.pid ?? null, simPid: sim.pid, simHitsUrl: sim.hitsUrl, proxiesPid: options.proxiesPid ?? null, pg: pgVisible ? pg : null, pool }),
    logCounts: counts,
    monitorBacklog,
  };
}

/**
 * BENCH_TEMPORAL=server: go.temporal.io/server with deploy/temporal, its services in one process
 * as docker-compose runs them, on two databases beside the bench's scratch database (on the same
 * server, so PostgreSQL's CPU counts Temporal's persistence too). Its log goes to the data dir.
 */
async function startProductionTemporal(scratchUrl: string, cli: string | null, dataDir: string, life: Lifecycle): Promise<{ address: string; pid: number | undefined; stop(): Promise<void> }> {
  if (!cli) throw new Error('BENCH_TEMPORAL=server needs the Temporal CLI for its namespace (npm run temporal:install)');
  const binaries = await resolveTemporalServer({ onProgress: (m) => progress(`  temporal: ${m}`) });
  if (!binaries) throw new Error('no Temporal server binary and no Go to build it (npm run temporal:install)');
  const url = new URL(scratchUrl);
  const base = url.pathname.slice(1);
  const { names, drop } = await createTemporalDatabases(scratchUrl, base);
  life.onCleanup("Temporal's databases", drop);
  const cluster = new TemporalCluster({
    binaries,
    cli,
    db: { host: url.hostname, port: Number(url.port || 5432), user: decodeURIComponent(url.username), password: decodeURIComponent(url.password), ...names },
    ports: await reserveTemporalPorts(),
    layout: 'one-process',
    namespace: NAMESPACE,
    logFile: path.join(dataDir, 'temporal-server.log'),
  });
  const ms = await cluster.start();
  progress(`  Temporal server (go.temporal.io/server, one process, on PostgreSQL) ready in ${ms} ms at ${cluster.address}`);
  return { address: cluster.address, pid: cluster.pid('all') ?? undefined, stop: () => cluster.stop() };
}
