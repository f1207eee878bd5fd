// The compose stack as processes on this machine: PostgreSQL (the machine's scratch database when
// DATABASE_URL is set, else an embedded cluster of the run's own that can be restarted), a
// Temporal dev server on a persisted SQLite file (SIGKILL and a start on the same file and port
// keep its workflows), Toxiproxy in front of both for every app process, the simulator and the
// webhook receivers in this process, two gateways, two stream nodes and two workers started
// from the image's entry points, and nginx in front. Every process is its own process group,
// registered with the lifecycle (and its janitor) as it starts, so a kill takes its helpers
// with it and nothing outlives the run.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
// Not `pg`: the functions below name their Postgres handle so.
import type { Lifecycle } from '../bench/monitors/lifecycle.ts';
import { isChromium, processTable, treePids } from '../bench/monitors/proc.ts';
import { sleep } from '../bench/monitors/support.ts';
import { createDb, type Db } from '../db/connection.ts';
import { startEmbeddedPostgres, type EmbeddedHandle } from '../db/embedded.ts';
import { migrateLatest } from '../db/migrations/index.ts';
import { loginFromUrl, setUpRoles } from '../db/roles.ts';
import { applyScraperGrants } from '../db/scraper-grants.ts';
import { createScratchDatabase } from '../db/scratch.ts';
import { createLogger, type Logger } from '../src/logger.ts';
import { reservePort } from '../src/runtime/ports.ts';
import { startSimulator, type Simulator } from '../src/simulator/server.ts';
import { newWebhookKey } from '../src/webhooks/secret-box.ts';
import { resolveTemporalCli } from '../temporal/binary.ts';
import { startDevServer, type DevServer } from '../temporal/dev-server.ts';
import { createTemporalDatabases } from '../temporal/databases.ts';
import { isRunning, processState } from '../temporal/processes.ts';
import { reserveTemporalPorts, TemporalCluster } from '../temporal/production-server.ts';
import { resolveTemporalServer, TEMPORAL_SERVER_VERSION } from '../temporal/server-binary.ts';
import type { RehearsalConfig } from './config.ts';
import { Nginx } from './nginx.ts';
import { resolveToxiproxy, startToxiproxy, type Toxiproxy } from './toxiproxy.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
// The monitors bench's watchdog: a child whose stdin (our pipe) closes kills itself, so a
// rehearsal killed without its cleanup leaves no process polling a dropped database.
const WATCHDOG = fileURLToPath(new URL('../bench/monitors/worker-watchdog.mjs', import.meta.url));
const NAMESPACE = 'default';
const SCRAPER_ROLE = 'ticket_market_scraper';

export type NodeKind = 'gateway' | 'stream' | 'worker';

export type LaunchOutcome = { ready: true; ms: number } | { ready: false; ms: number; why: string };

/** One app process (gateway, stream node, worker): spawned, awaited until it serves, killed, paused. */
export class NodeProcess {
  private child: ChildProcess | null = null;
  private exitedPromise: Promise<void> = Promise.resolve();
  private expected = true;
  /** Exits nobody asked for: when, and how. */
  readonly unexpectedExits: { at: number; how: string }[] = [];
  incarnations = 0;

  constructor(
    readonly name: string,
    readonly kind: NodeKind,
    /** WORKER_ROLE for a worker. */
    readonly role: string | null,
    private readonly script: string,
    readonly env: NodeJS.ProcessEnv,
    /** Answers 200 once the process serves (the gateway's /openapi.json, the others' /metrics). */
    private readonly readyUrl: string,
    readonly logFile: string,
    private readonly onSpawn: (pid: number) => void,
  ) {}

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Spawns it and waits until it serves, exits or the time runs out; never throws for those. */
  async launch(timeoutMs = 180_000): Promise<LaunchOutcome> {
    const started = Date.now();
    const out = fs.openSync(this.logFile, 'a');
    const child = spawn(process.execPath, ['--import', 'tsx', '--import', WATCHDOG, this.script], {
      cwd: ROOT,
      env: this.env,
      stdio: ['pipe', out, out],
      detached: true,
    });
    fs.closeSync(out);
    child.stdin!.on('error', () => {});
    this.child = child;
    this.incarnations++;
    this.expected = false;
    this.exitedPromise = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        if (!this.expected) this.unexpectedExits.push({ at: Date.now(), how: signal ?? `exit ${code}` });
        resolve();
      }),
    );
    if (child.pid) this.onSpawn(child.pid);
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        this.expected = true;
        return { ready: false, ms: Date.now() - started, why: `exited (${child.signalCode ?? `code ${child.exitCode}`}): ${this.tail(3)}` };
      }
      try {
        const res = await fetch(this.readyUrl, { signal: AbortSignal.timeout(1_000) });
        await res.arrayBuffer();
        if (res.status === 200) return { ready: true, ms: Date.now() - started };
      } catch {
        // not serving yet
      }
      if (Date.now() - started > timeoutMs) return { ready: false, ms: Date.now() - started, why: `not serving after ${timeoutMs / 1000} s: ${this.tail(3)}` };
      await sleep(100);
    }
  }

  /** launch(), or an error naming the process and its last output. */
  async start(timeoutMs?: number): Promise<number> {
    const r = await this.launch(timeoutMs);
    if (!r.ready) {
      await this.kill();
      throw new Error(`${this.name} did not start: ${r.why}`);
    }
    return r.ms;
  }

  /** SIGKILL to its process group (node, tsx's esbuild), and to any Chromium it launched. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    this.expected = true;
    const table = processTable();
    const browsers = treePids(child.pid!, table).filter((p) => p !== child.pid && isChromium(table.get(p)?.name ?? ''));
    signalGroup(child.pid!, 'SIGKILL');
    // A stopped process dies of SIGKILL too, but only once the kernel delivers it: no SIGCONT needed.
    for (const pid of browsers) signalPid(pid, 'SIGKILL');
    await this.exitedPromise;
  }

  /** SIGTERM (the process drains and exits), SIGKILL after 20 s. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    this.expected = true;
    signalGroup(child.pid!, 'SIGCONT');
    signalGroup(child.pid!, 'SIGTERM');
    const timer = setTimeout(() => signalGroup(child.pid!, 'SIGKILL'), 20_000);
    await this.exitedPromise;
    clearTimeout(timer);
    signalGroup(child.pid!, 'SIGKILL');
  }

  /** SIGSTOP / SIGCONT to the whole group. */
  signal(signal: 'SIGSTOP' | 'SIGCONT'): void {
    if (this.child?.pid && this.running) signalGroup(this.child.pid, signal);
  }

  /**
   * Until every process of its group (node and tsx's helpers; Chromium has a group of its own) is
   * in `state` by /proc (`T`: stopped), at most `ms`: whether a signal to the group took effect,
   * and what /proc said.
   */
  async waitForState(state: string, ms: number): Promise<{ ok: boolean; detail: string }> {
    const pid = this.child?.pid;
    if (!pid || !this.running) return { ok: false, detail: `${this.name} is not running` };
    const deadline = Date.now() + ms;
    for (;;) {
      const states = treePids(pid, processTable())
        .map((p) => [p, processState(p)] as const)
        .filter(([, st]) => st !== null && st.pgrp === pid)
        .map(([p, st]) => [p, st!.state] as const);
      const others = states.filter(([, st]) => st !== state);
      if (states.length > 0 && others.length === 0) return { ok: true, detail: `${states.length} processes in state ${state}` };
      if (Date.now() > deadline) return { ok: false, detail: `${others.map(([p, st]) => `pid ${p} in state ${st}`).join(', ') || 'no process found'}` };
      await sleep(20);
    }
  }

  /** The last lines of its log, for a failure message. */
  tail(lines: number): string {
    try {
      const fd = fs.openSync(this.logFile, 'r');
      const size = fs.fstatSync(fd).size;
      const buf = Buffer.alloc(Math.min(8192, size));
      fs.readSync(fd, buf, 0, buf.length, size - buf.length);
      fs.closeSync(fd);
      return buf
        .toString('utf8')
        .trim()
        .split('\n')
        .slice(-lines)
        .map((l) => {
          try {
            const j = JSON.parse(l) as { msg?: string; err?: { message?: string } };
            return `${j.msg ?? ''}${j.err?.message ? `: ${j.err.message}` : ''}`;
          } catch {
            return l;
          }
        })
        .join(' | ');
    } catch {
      return '(no output)';
    }
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  signalPid(-pid, signal);
}

function signalPid(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // gone already
  }
}

/** The service's database: where it is, as whom each process connects, and whether we may restart it. */
export interface Postgres {
  port: number;
  database: string;
  /** Direct connection strings (the proxies' upstream is the same server). */
  appUrl: string;
  scraperUrl: string;
  /** A role that may terminate the service's backends (the superuser, or DATABASE_URL's owner). */
  adminUrl: string;
  embedded: boolean;
  /** Temporal's role and databases (docker-compose's db-roles job makes the same). */
  temporal: { user: string; password: string; database: string; visibilityDatabase: string };
  /** Why a restart cannot be part of the rehearsal (null: it can). */
  restartSkipReason: string | null;
  /** Stops and starts the server on the same data and port; resolves with the ms it was down. */
  restart(): Promise<number>;
  close(): Promise<void>;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/;

/** The same connection string through another port on the loopback (a proxy). */
export function viaPort(url: string, port: number): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
}

async function startPostgres(root: string, progress: (m: string) => void, life: Lifecycle): Promise<Postgres> {
  if (process.env.DATABASE_URL) {
    const host = new URL(process.env.DATABASE_URL).hostname;
    if (!LOOPBACK.test(host)) throw new Error(`DATABASE_URL's host is ${host}: the rehearsal sends traffic to loopback addresses only; unset it to use an embedded PostgreSQL`);
    const scratch = await createScratchDatabase('tm_rehearsal');
    const database = new URL(scratch.url).pathname.slice(1);
    life.started({ db: { base: process.env.DATABASE_URL, name: database } });
    // Temporal's two databases beside it, owned by the same role (a shared server gets no new role).
    const temporalDbs = await createTemporalDatabases(process.env.DATABASE_URL, database, (name) => life.started({ db: { base: process.env.DATABASE_URL!, name } }));
    const owner = new URL(scratch.url);
    return {
      port: Number(new URL(scratch.url).port || 5432),
      database,
      appUrl: scratch.url,
      // One role for every process: making roles on a shared server would outlive the run.
      scraperUrl: scratch.url,
      adminUrl: scratch.url,
      embedded: false,
      temporal: { user: decodeURIComponent(owner.username), password: decodeURIComponent(owner.password), ...temporalDbs.names },
      restartSkipReason: "DATABASE_URL is set: the machine's PostgreSQL serves others too and is not the rehearsal's to restart",
      restart: async () => {
        throw new Error('not restartable');
      },
      close: async () => {
        await temporalDbs.drop();
        await scratch.drop();
      },
    };
  }
  const dataDir = path.join(root, 'pg');
  await fsp.mkdir(dataDir, { recursive: true });
  // As root the server runs as `postgres`, which must reach the cluster inside the run's directory.
  await fsp.chmod(dataDir, 0o755);
  const port = await reservePort();
  let handle: EmbeddedHandle = await startEmbeddedPostgres(dataDir, port, progress);
  const app = loginFromUrl(handle.connectionString, 'the embedded server');
  const scraper = { name: SCRAPER_ROLE, password: randomBytes(24).toString('hex') };
  const temporal = { user: 'temporal', password: randomBytes(24).toString('hex'), database: 'temporal', visibilityDatabase: 'temporal_visibility' };
  // Production's roles (docker-compose's db-roles and migrate jobs): the owner migrates, the scrape
  // worker gets only db/scraper-grants.ts, Temporal owns its two databases and nothing else.
  await setUpRoles(handle.superuserConnectionString, {
    app,
    scraper,
    temporal: { role: { name: temporal.user, password: temporal.password }, databases: [temporal.database, temporal.visibilityDatabase] },
  });
  const db = createDb({ connectionString: handle.connectionString, poolMax: 2, applicationName: 'rehearsal-migrate' });
  try {
    await migrateLatest(db);
    await applyScraperGrants(db, SCRAPER_ROLE);
  } finally {
    await db.destroy();
  }
  const scraperUrl = new URL(handle.connectionString);
  scraperUrl.username = SCRAPER_ROLE;
  scraperUrl.password = scraper.password;
  const pg: Postgres = {
    port,
    database: app.database,
    appUrl: handle.connectionString,
    scraperUrl: scraperUrl.toString(),
    adminUrl: handle.superuserConnectionString,
    embedded: true,
    temporal,
    restartSkipReason: null,
    restart: async () => {
      const down = Date.now();
      await handle.stop();
      handle = await startEmbeddedPostgres(dataDir, port, progress);
      return Date.now() - down;
    },
    close: () => handle.stop(),
  };
  return pg;
}

/**
 * Temporal as the rehearsal runs it: processes that can be killed one at a time (by name) or all
 * at once, and started again on the same state and ports.
 */
export interface TemporalPart {
  /** How the report names it. */
  readonly description: string;
  readonly address: string;
  /** What can be killed on its own: the server's services, or the dev server's one process. */
  readonly processNames: readonly string[];
  pid(name: string): number | null;
  start(): Promise<number>;
  /** SIGKILL of one process, or of all (as a crashed host); resolves once gone. */
  kill(name?: string): Promise<void>;
  /** Starts again what kill() took (one, or all); resolves once it listens. */
  restart(name?: string): Promise<number>;
  stop(): Promise<void>;
}

/** The Temporal dev server on a SQLite file in the run's directory, killed and started again on it. */
export class TemporalDevServer implements TemporalPart {
  private server: DevServer | null = null;
  readonly address: string;
  readonly description = 'the dev server (temporal server start-dev, the CLI) on a SQLite file';
  readonly processNames = ['dev-server'] as const;

  constructor(
    private readonly binary: string | null,
    private readonly dataDir: string,
    readonly port: number,
    private readonly log: Logger,
    private readonly onSpawn: (pid: number) => void,
  ) {
    this.address = `127.0.0.1:${port}`;
  }

  pid(): number | null {
    return this.server?.pid ?? null;
  }

  async start(): Promise<number> {
    const started = Date.now();
    this.server = await startDevServer({ binary: this.binary, dataDir: this.dataDir, port: this.port, uiPort: null, namespace: NAMESPACE, log: this.log, readyTimeoutMs: 60_000 });
    if (this.server.pid) this.onSpawn(this.server.pid);
    return Date.now() - started;
  }

  restart(): Promise<number> {
    return this.start();
  }

  /** SIGKILL, as a crashed host: nothing is flushed beyond what SQLite already has. */
  async kill(): Promise<void> {
    const pid = this.server?.pid;
    if (!pid) throw new Error('the Temporal dev server has no pid to kill (it runs through the SDK fallback)');
    signalPid(pid, 'SIGKILL');
    while (isRunning(pid)) await sleep(50);
    this.server = null;
  }

  async stop(): Promise<void> {
    await this.server?.stop();
    this.server = null;
  }
}

/**
 * go.temporal.io/server on the run's PostgreSQL, through its own Toxiproxy proxy (the database
 * cut), one process per service: docker-compose's Temporal with the same files
 * (temporal/production-server.ts).
 */
export class TemporalProductionServer implements TemporalPart {
  readonly description: string;

  constructor(
    private readonly cluster: TemporalCluster,
    /** Toxiproxy's proxy between the server and PostgreSQL. */
    readonly pgProxy: string,
  ) {
    this.description = `go.temporal.io/server ${TEMPORAL_SERVER_VERSION} on PostgreSQL (deploy/temporal/production.yaml), ${cluster.processNames.length === 1 ? 'its services in one process' : `one process per service (${cluster.processNames.join(', ')})`}`;
  }

  get address(): string {
    return this.cluster.address;
  }

  get processNames(): readonly string[] {
    return this.cluster.processNames;
  }

  pid(name: string): number | null {
    return this.cluster.pid(name);
  }

  start(): Promise<number> {
    return this.cluster.start();
  }

  async kill(name?: string): Promise<void> {
    for (const n of name ? [name] : [...this.cluster.processNames].reverse()) await this.cluster.kill(n);
  }

  restart(name?: string): Promise<number> {
    return name ? this.cluster.startProcess(name) : this.cluster.startProcesses();
  }

  stop(): Promise<void> {
    return this.cluster.stop();
  }
}

export interface ProxyPorts {
  pg: { name: string; port: number };
  temporal: { name: string; port: number } | null;
}

export interface Topology {
  root: string;
  pg: Postgres;
  temporal: TemporalPart;
  toxi: Toxiproxy;
  /** Each app process's proxies, by process name. */
  proxies: Map<string, ProxyPorts>;
  sim: Simulator;
  nginx: Nginx;
  gateways: NodeProcess[];
  streams: NodeProcess[];
  workers: NodeProcess[];
  /** The worker the scrape-side faults take (the first of role scrape, or of role all), and the delivery one. */
  scrapeWorker: NodeProcess;
  /** Every worker that polls: the scrape workers (or those of role all), which share the shards. */
  pollers: NodeProcess[];
  deliverWorker: NodeProcess;
  nodes: NodeProcess[];
  /** nginx's address: what every client uses. */
  publicUrl: string;
  /** The rehearsal's own connection, direct to PostgreSQL (the ground truth's reads). */
  db: Db;
  /** Logs of the app processes, nginx's and Temporal's, for the report's warnings. */
  logDir: string;
  webhookKey: string;
}

export async function startTopology(cfg: RehearsalConfig, life: Lifecycle, progress: (m: string) => void): Promise<Topology> {
  const root = await fsp.mkdtemp(path.join(os.tmpdir(), 'tm-rehearsal-'));
  await fsp.chmod(root, 0o755);
  life.started({ dir: root });
  life.onCleanup('run directory', () => (process.env.REHEARSAL_KEEP_DIR ? Promise.resolve() : fsp.rm(root, { recursive: true, force: true })));
  const logDir = path.join(root, 'logs');
  await fsp.mkdir(logDir);
  progress(`run directory ${root} (logs in ${logDir}${process.env.REHEARSAL_KEEP_DIR ? ', kept' : ', removed at the end unless REHEARSAL_KEEP_DIR=1'})`);

  progress('Toxiproxy: provisioning (go install on first use) and starting...');
  const toxiBinary = await resolveToxiproxy((m) => progress(`  toxiproxy: ${m}`));
  const toxi = await startToxiproxy(toxiBinary, (pid) => life.started({ group: { pid, match: toxiBinary } }));
  life.onCleanup('Toxiproxy', () => toxi.stop());

  progress(process.env.DATABASE_URL ? 'PostgreSQL: a scratch database on DATABASE_URL\'s server...' : 'PostgreSQL: an embedded cluster of the run\'s own (roles, migrations, scraper grants)...');
  const pg = await startPostgres(root, (m) => progress(`  postgres: ${m}`), life);
  life.onCleanup('PostgreSQL', () => pg.close());

  const temporalLog = path.join(logDir, 'temporal.log');
  const cli = await resolveTemporalCli({ onProgress: (m) => progress(`  temporal: ${m}`) });
  if (!cli) throw new Error('no Temporal CLI binary (npm run temporal:install): the rehearsal SIGKILLs the server by pid, which the SDK fallback hides');
  const onTemporalSpawn = (pid: number) => life.started({ process: { pid, match: root } });
  let temporal: TemporalPart;
  if (cfg.temporal === 'dev') {
    progress('Temporal: the dev server (the CLI) on a persisted SQLite file (REHEARSAL_TEMPORAL=dev)...');
    const log = createLogger('warn', fs.createWriteStream(temporalLog, { flags: 'a' }));
    temporal = new TemporalDevServer(cli, path.join(root, 'temporal-data'), await reservePort(), log, onTemporalSpawn);
  } else {
    progress(`Temporal: go.temporal.io/server ${TEMPORAL_SERVER_VERSION} on PostgreSQL, ${cfg.temporalLayout === 'per-service' ? 'one process per service' : 'one process'} (go install on first use)...`);
    const binaries = await resolveTemporalServer({ onProgress: (m) => progress(`  temporal: ${m}`) });
    if (!binaries) throw new Error('no Temporal server binary and no Go to build it (npm run temporal:install); REHEARSAL_TEMPORAL=dev runs on the dev server');
    const pgProxy = { name: 'temporal-pg', port: await reservePort() };
    await toxi.create({ name: pgProxy.name, listen: `127.0.0.1:${pgProxy.port}`, upstream: `127.0.0.1:${pg.port}` });
    const cluster = new TemporalCluster({
      binaries,
      cli,
      db: { host: '127.0.0.1', port: pgProxy.port, ...pg.temporal },
      ports: await reserveTemporalPorts(),
      layout: cfg.temporalLayout,
      namespace: NAMESPACE,
      logFile: temporalLog,
      onSpawn: onTemporalSpawn,
    });
    temporal = new TemporalProductionServer(cluster, pgProxy.name);
  }
  progress(`  Temporal ready in ${await temporal.start()} ms at ${temporal.address}: ${temporal.description}`);
  life.onCleanup('Temporal', () => temporal.stop());

  // In this process: the load's own ground truth reads it, and its request log is the poll record.
  const sim = await startSimulator({ host: '127.0.0.1', driftMs: 0, empty: true });
  life.onCleanup('simulator', () => sim.close());

  const db = createDb({ connectionString: pg.appUrl, poolMax: 4, applicationName: 'rehearsal' });
  life.onCleanup('rehearsal database connections', () => db.destroy());

  const webhookKey = newWebhookKey();
  const platformUrls = Object.fromEntries(Object.entries(sim.baseUrls).map(([p, url]) => [`${p.toUpperCase()}_BASE_URL`, url]));
  // What docker-compose's x-common-env gives every Node process, on loopback addresses.
  const common: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'production',
    LOG_LEVEL: 'info',
    TRUST_PROXY: 'true',
    DEMO_ACCOUNT: 'false',
    RUN_WORKER: 'false',
    RUN_SIMULATOR: 'false',
    HOST: '127.0.0.1',
    MONITOR_INTERVAL_MS: String(cfg.intervalMs),
    // Two polls a second per target's interval, twice over: the budget never decides the pace here.
    SCRAPE_RPS_PER_PLATFORM: `pf_03=${Math.max(20, Math.ceil((4 * cfg.targets * 1000) / cfg.intervalMs))}`,
    // The deliberately broken build (REHEARSAL_BREAK), whose run must fail its verdict.
    ...(cfg.breakWith === 'takeover-guard' ? { MONITOR_TAKEOVER_GUARD: 'false' } : {}),
    ...platformUrls,
  };
  // The secrets' side (x-service-env), local billing: the run has no Stripe.
  const service: NodeJS.ProcessEnv = {
    WEBHOOK_SECRET_KEY: webhookKey,
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    BILLING_PROVIDER: 'local',
    // Production's schedule waits 5 s, 30 s, 2 min, 10 min...: a delivery that failed all through a
    // 30 s receiver fault would arrive after the run. The same rule, on a shorter scale.
    WEBHOOK_RETRY_SCHEDULE_MS: '2000,5000,10000,20000,30000,60000',
  };

  const proxies = new Map<string, ProxyPorts>();
  const proxied = async (name: string, databaseUrl: string, withTemporal: boolean) => {
    const ports: ProxyPorts = { pg: { name: `${name}-pg`, port: await reservePort() }, temporal: withTemporal ? { name: `${name}-temporal`, port: await reservePort() } : null };
    await toxi.create({ name: ports.pg.name, listen: `127.0.0.1:${ports.pg.port}`, upstream: `127.0.0.1:${pg.port}` });
    if (ports.temporal) await toxi.create({ name: ports.temporal.name, listen: `127.0.0.1:${ports.temporal.port}`, upstream: temporal.address });
    proxies.set(name, ports);
    return { DATABASE_URL: viaPort(databaseUrl, ports.pg.port), ...(ports.temporal ? { TEMPORAL_ADDRESS: `127.0.0.1:${ports.temporal.port}` } : {}) };
  };
  const onSpawn = (pid: number) => life.started({ group: { pid, match: ROOT } });
  const node = (name: string, kind: NodeKind, role: string | null, script: string, env: NodeJS.ProcessEnv, readyUrl: string) => {
    const dataDir = path.join(root, `data-${name}`);
    fs.mkdirSync(dataDir);
    return new NodeProcess(name, kind, role, script, { ...env, DATA_DIR: dataDir }, readyUrl, path.join(logDir, `${name}.log`), onSpawn);
  };

  const gateways: NodeProcess[] = [];
  for (const i of [1, 2]) {
    const name = `gateway-${i}`;
    const port = await reservePort();
    const metrics = await reservePort();
    const env = { ...common, ...service, ...(await proxied(name, pg.appUrl, true)), PORT: String(port), METRICS_PORT: String(metrics), RUN_STREAM: 'false', RESERVATION_TIMEOUT_MS: '30000' };
    gateways.push(node(name, 'gateway', null, 'src/main.ts', env, `http://127.0.0.1:${port}/openapi.json`));
  }
  const streams: NodeProcess[] = [];
  for (const i of [1, 2]) {
    const name = `stream-${i}`;
    const port = await reservePort();
    const metrics = await reservePort();
    const env = { ...common, ...(await proxied(name, pg.appUrl, false)), STREAM_PORT: String(port), METRICS_PORT: String(metrics) };
    streams.push(node(name, 'stream', null, 'src/stream/main.ts', env, `http://127.0.0.1:${metrics}/metrics`));
  }
  const workers: NodeProcess[] = [];
  const roles: ('scrape' | 'deliver' | 'all')[] = cfg.workers === 'split' ? [...Array<'scrape'>(cfg.scrapeWorkers).fill('scrape'), 'deliver'] : ['all', 'all'];
  for (const [i, role] of roles.entries()) {
    const name = cfg.workers === 'all' ? `worker-${i + 1}` : role === 'scrape' && cfg.scrapeWorkers > 1 ? `scrape-worker-${i + 1}` : `${role}-worker`;
    const metrics = await reservePort();
    // The scrape worker holds no secret (it refuses to start with one) and connects as its own role.
    const secrets = role === 'scrape' ? {} : service;
    const env = { ...common, ...secrets, ...(await proxied(name, role === 'scrape' ? pg.scraperUrl : pg.appUrl, true)), WORKER_ROLE: role, METRICS_PORT: String(metrics) };
    workers.push(node(name, 'worker', role, 'temporal/worker-main.ts', env, `http://127.0.0.1:${metrics}/metrics`));
  }
  const nodes = [...workers, ...gateways, ...streams];
  for (const n of nodes) life.onCleanup(n.name, () => n.stop());
  progress(`starting ${nodes.map((n) => n.name).join(', ')} (node --import tsx <entry point>, each its own process group)...`);
  const t0 = Date.now();
  await Promise.all(nodes.map(async (n) => progress(`  ${n.name} serving in ${((await n.start()) / 1000).toFixed(1)} s (pid ${n.pid})`)));
  progress(`  all app processes serving ${((Date.now() - t0) / 1000).toFixed(1)} s after the first spawn`);

  const portOf = (n: NodeProcess, variable: 'PORT' | 'STREAM_PORT') => Number(n.env[variable]);
  const nginx = new Nginx(
    { dir: path.join(root, 'nginx'), port: await reservePort(), gateways: gateways.map((g) => portOf(g, 'PORT')), streams: streams.map((s) => portOf(s, 'STREAM_PORT')) },
    (pid) => life.started({ group: { pid, match: 'nginx' } }),
  );
  await nginx.writeConfig();
  await nginx.start();
  life.onCleanup('nginx', () => nginx.stop());
  progress(`nginx (${nginx.url}) in front of the gateways and stream nodes`);

  return {
    root,
    pg,
    temporal,
    toxi,
    proxies,
    sim,
    nginx,
    gateways,
    streams,
    workers,
    scrapeWorker: workers.find((w) => w.role === 'scrape') ?? workers[0]!,
    pollers: workers.filter((w) => w.role !== 'deliver'),
    deliverWorker: workers.find((w) => w.role === 'deliver') ?? workers[1]!,
    nodes,
    publicUrl: nginx.url,
    db,
    logDir,
    webhookKey,
  };
}
