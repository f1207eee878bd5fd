// Runs the Temporal server as docker-compose does: go.temporal.io/server (server-binary.ts) on
// PostgreSQL, with deploy/temporal/production.yaml, its schema applied by deploy/temporal/
// setup-schema.sh and the namespace registered by deploy/temporal/create-namespace.sh, the same
// files compose's services use. Its four services (frontend, history, matching, worker) run in
// one process, as compose runs them, or one process each, so that each can be killed on its own
// (the rehearsal). Every port is reserved on the loopback; nothing listens elsewhere.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { diesWithThisProcess } from '../src/runtime/parent-death.ts';
import { acceptsConnections, reservePort } from '../src/runtime/ports.ts';
import { isRunning } from './processes.ts';
import type { TemporalServerBinaries } from './server-binary.ts';

/** deploy/temporal: the static config, the dynamic config and the two setup scripts. */
export const TEMPORAL_DEPLOY_DIR = fileURLToPath(new URL('../deploy/temporal/', import.meta.url));
/** `--env production` loads `production.yaml` from the config folder. */
export const TEMPORAL_CONFIG_ENV = 'production';
export const TEMPORAL_SERVICES = ['frontend', 'history', 'matching', 'worker'] as const;
export type TemporalService = (typeof TEMPORAL_SERVICES)[number];

/** Where the server keeps its state: the role that owns both databases, and their names. */
export interface TemporalDatabase {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  visibilityDatabase: string;
}

export interface TemporalPorts {
  grpc: Record<TemporalService, number>;
  membership: Record<TemporalService, number>;
  frontendHttp: number;
}

const LOOPBACK = '127.0.0.1';

/**
 * The server keeps each host's ports in `cluster_membership` as SMALLINT: a port above 32767
 * stops its membership heartbeat (`value "61928" is out of range for type smallint`), and the
 * process with it.
 */
const HIGHEST_PORT = 32_767;

/** Nine ports on the loopback, reserved (src/runtime/ports.ts) so no other start takes them. */
export async function reserveTemporalPorts(): Promise<TemporalPorts> {
  const reserve = () => reservePort({ highest: HIGHEST_PORT });
  const grpc = {} as Record<TemporalService, number>;
  const membership = {} as Record<TemporalService, number>;
  for (const s of TEMPORAL_SERVICES) {
    grpc[s] = await reserve();
    membership[s] = await reserve();
  }
  return { grpc, membership, frontendHttp: await reserve() };
}

/** The variables production.yaml reads, for a server on the loopback. */
export function serverEnvironment(db: TemporalDatabase, ports: TemporalPorts, extra: { metricsAddress?: string } = {}): Record<string, string> {
  const env: Record<string, string> = {
    ...dbEnv(db),
    TEMPORAL_BIND_ON_IP: LOOPBACK,
    TEMPORAL_BROADCAST_ADDRESS: LOOPBACK,
    TEMPORAL_FRONTEND_HTTP_PORT: String(ports.frontendHttp),
    TEMPORAL_DYNAMIC_CONFIG_FILE: path.join(TEMPORAL_DEPLOY_DIR, 'dynamic-config.yaml'),
    TEMPORAL_LOG_LEVEL: 'warn',
  };
  for (const s of TEMPORAL_SERVICES) {
    env[`TEMPORAL_${s.toUpperCase()}_PORT`] = String(ports.grpc[s]);
    env[`TEMPORAL_${s.toUpperCase()}_MEMBERSHIP_PORT`] = String(ports.membership[s]);
  }
  if (extra.metricsAddress) env.TEMPORAL_METRICS_ADDRESS = extra.metricsAddress;
  return env;
}

/** The server's arguments: compose's `temporal` service runs the same (with `start` alone). */
export function serverArgs(services: readonly TemporalService[] | 'all'): string[] {
  // `--root /`: the server joins root and config with path.Join, which would make an absolute
  // config folder relative under the default root `.`.
  return ['--root', '/', '--config', TEMPORAL_DEPLOY_DIR, '--env', TEMPORAL_CONFIG_ENV, '--allow-no-auth', 'start', ...(services === 'all' ? [] : services.flatMap((s) => ['--service', s]))];
}

/** setup-schema.sh with the built tool and the module's schema: both databases up to the server's version. */
export async function setUpTemporalSchema(binaries: TemporalServerBinaries, db: TemporalDatabase): Promise<string> {
  return runScript('setup-schema.sh', { TEMPORAL_SQL_TOOL: binaries.sqlTool, TEMPORAL_SCHEMA_DIR: binaries.schemaDir, ...dbEnv(db) });
}

/** create-namespace.sh with the project's Temporal CLI: waits for the frontend, registers, waits for it. */
export async function createTemporalNamespace(cli: string, address: string, namespace: string): Promise<string> {
  return runScript('create-namespace.sh', { TEMPORAL_CLI: cli, TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: namespace });
}

/** Where the database is, as production.yaml and setup-schema.sh both read it. */
function dbEnv(db: TemporalDatabase): Record<string, string> {
  return {
    TEMPORAL_DB_HOST: db.host,
    TEMPORAL_DB_PORT: String(db.port),
    TEMPORAL_DB_USER: db.user,
    TEMPORAL_DB_PASSWORD: db.password,
    TEMPORAL_DB_NAME: db.database,
    TEMPORAL_VISIBILITY_DB_NAME: db.visibilityDatabase,
  };
}

async function runScript(name: string, env: Record<string, string>): Promise<string> {
  const script = path.join(TEMPORAL_DEPLOY_DIR, name);
  try {
    const { stdout } = await promisify(execFile)('sh', [script], { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, timeout: 180_000 });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string };
    // The scripts never print the password (the tools read it from the environment).
    throw new Error(`deploy/temporal/${name} failed: ${(e.stderr || e.stdout || e.message).trim().split('\n').slice(-6).join(' | ')}`);
  }
}

export interface TemporalClusterOptions {
  binaries: TemporalServerBinaries;
  /** The Temporal CLI, which create-namespace.sh runs. */
  cli: string;
  db: TemporalDatabase;
  ports: TemporalPorts;
  /** `one-process`: as compose runs it. `per-service`: a process each, killed one at a time. */
  layout: 'one-process' | 'per-service';
  namespace: string;
  /** Every process's output is appended here (the server logs JSON lines). */
  logFile: string;
  onSpawn?: (pid: number) => void;
  metricsAddress?: string;
}

/** The server's processes, started, killed and started again on the same database and ports. */
export class TemporalCluster {
  private readonly children = new Map<string, ChildProcess>();
  readonly address: string;

  constructor(private readonly opts: TemporalClusterOptions) {
    this.address = `${LOOPBACK}:${opts.ports.grpc.frontend}`;
  }

  /** The process names: `all`, or each service's. */
  get processNames(): string[] {
    return this.opts.layout === 'one-process' ? ['all'] : [...TEMPORAL_SERVICES];
  }

  pid(name: string): number | null {
    const c = this.children.get(name);
    return c?.pid && c.exitCode === null && c.signalCode === null ? c.pid : null;
  }

  /** Schema, every process, then the namespace; resolves once the frontend answers for it. */
  async start(): Promise<number> {
    const started = Date.now();
    await setUpTemporalSchema(this.opts.binaries, this.opts.db);
    await this.startProcesses();
    await createTemporalNamespace(this.opts.cli, this.address, this.opts.namespace);
    return Date.now() - started;
  }

  /** Every process (after a kill of all), on the schema and namespace there already are. */
  async startProcesses(): Promise<number> {
    const started = Date.now();
    // One at a time: each process writes the cluster's metadata as it starts, and two doing it at
    // once make one of them exit (`SaveClusterMetadata encountered version mismatch`). History
    // first: the others look it up in the membership ring.
    for (const name of this.opts.layout === 'one-process' ? ['all'] : ['history', 'matching', 'frontend', 'worker']) {
      this.spawn(name);
      await this.waitForPorts([name], 60_000);
    }
    return Date.now() - started;
  }

  /** Starts one process again (after a kill) and waits until its gRPC port answers. */
  async startProcess(name: string): Promise<number> {
    const started = Date.now();
    this.spawn(name);
    await this.waitForPorts([name], 60_000);
    return Date.now() - started;
  }

  /** SIGKILL, as a crashed host; resolves once the process is gone. */
  async kill(name: string): Promise<void> {
    const pid = this.pid(name);
    if (!pid) throw new Error(`the Temporal ${name} process is not running`);
    process.kill(pid, 'SIGKILL');
    while (isRunning(pid)) await new Promise((r) => setTimeout(r, 50));
  }

  /** SIGTERM to every process, SIGKILL after 10 s. */
  async stop(): Promise<void> {
    await Promise.all(
      [...this.children.values()].map(async (c) => {
        if (!c.pid || c.exitCode !== null || c.signalCode !== null) return;
        const pid = c.pid;
        c.kill('SIGTERM');
        const deadline = Date.now() + 10_000;
        while (isRunning(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
        if (isRunning(pid)) c.kill('SIGKILL');
      }),
    );
    this.children.clear();
  }

  private spawn(name: string): void {
    const services = name === 'all' ? 'all' : [name as TemporalService];
    const out = fs.openSync(this.opts.logFile, 'a');
    const command = diesWithThisProcess(this.opts.binaries.server, serverArgs(services));
    const child = spawn(command.file, command.args, {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...serverEnvironment(this.opts.db, this.opts.ports, { metricsAddress: this.opts.metricsAddress }) },
      stdio: ['ignore', out, out],
    });
    fs.closeSync(out);
    child.on('error', () => {});
    this.children.set(name, child);
    if (child.pid) this.opts.onSpawn?.(child.pid);
  }

  private async waitForPorts(names: string[], timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    // The worker service serves no gRPC (it runs the server's own system workflows): its ring
    // membership port is the one it listens on.
    const portOf = (s: TemporalService) => (s === 'worker' ? this.opts.ports.membership[s] : this.opts.ports.grpc[s]);
    const ports = names.flatMap((n) => (n === 'all' ? TEMPORAL_SERVICES.map(portOf) : [portOf(n as TemporalService)]));
    for (const port of ports) {
      for (;;) {
        const dead = names.find((n) => !this.pid(n));
        if (dead) throw new Error(`the Temporal ${dead} process exited as it started: ${tail(this.opts.logFile)}`);
        if (await acceptsConnections(port, LOOPBACK, 1_000)) break;
        if (Date.now() > deadline) throw new Error(`the Temporal server's port ${port} is not listening after ${timeoutMs / 1000} s: ${tail(this.opts.logFile)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
}

/** The last lines the server wrote, for a failure message. */
function tail(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').trim().split('\n').slice(-3).join(' | ').slice(-1500);
  } catch {
    return '(no output)';
  }
}
