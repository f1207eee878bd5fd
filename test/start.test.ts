// `npm start` on a fresh machine: embedded PostgreSQL under DATA_DIR (no DATABASE_URL),
// migrations, the demo account and key printed once, the gateway and metrics listening,
// the Temporal dev server and workers, Ctrl-C stopping everything (no server process left
// behind) with exit 0, data kept between runs, and the admin CLI working against the same data
// directory whether the service runs or not.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createDb } from '../db/connection.ts';
import { createScratchDatabase } from '../db/scratch.ts';
import { ensureDemoAccount } from '../src/accounts/demo.ts';
import { PROJECT_ROOT, call, databaseUrl, runTs } from './support/harness.ts';
import { canConnect } from '../db/embedded.ts';
import { SHARED_ROOT } from '../db/postgres-user.ts';
import { createLogger } from '../src/logger.ts';
import { resolveTemporalCli } from '../temporal/binary.ts';
import { devServerFiles, startDevServer } from '../temporal/dev-server.ts';
import { commandLine, isRunning } from '../temporal/processes.ts';
import { temporalAddress, uniqueTaskQueue } from './support/temporal.ts';
import { reservePort } from '../src/runtime/ports.ts';

const READY = /gateway listening/;
/** The workers start after the gateway answers; tests that stop the service wait for them too. */
const WORKERS_READY = /"msg":"worker ready"/;



async function waitUntil(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return check();
}

/** Temporal dev servers still running on this data directory (there must be none after a stop). */
async function temporalServersOn(dataDir: string): Promise<number[]> {
  const db = devServerFiles(dataDir).db;
  const pids = (await fs.readdir('/proc')).filter((d) => /^\d+$/.test(d)).map(Number);
  return pids.filter((pid) => pid !== process.pid && isRunning(pid) && commandLine(pid).includes(db));
}

/** Stops a dev server a failed test left behind, found through its pid file. */
async function killLeftoverTemporal(dataDir: string): Promise<void> {
  for (const pid of await temporalServersOn(dataDir)) process.kill(pid, 'SIGKILL');
}

/** Stops an embedded PostgreSQL a failed test left behind, found through its pid file (DATA_DIR/postgres may be a link). */
async function stopLeftoverPostgres(dataDir: string): Promise<void> {
  const pid = await fs
    .readFile(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8')
    .then((t) => Number(t.split('\n')[0]))
    .catch(() => 0);
  if (pid <= 0) return;
  try {
    process.kill(pid, 'SIGQUIT');
  } catch {
    // not running
  }
}

/** One `npm start` process, in its own process group like a terminal's foreground job. */
class Service {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(env: NodeJS.ProcessEnv) {
    this.child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: PROJECT_ROOT,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout!.setEncoding('utf8').on('data', (d: string) => (this.stdout += d));
    this.child.stderr!.setEncoding('utf8').on('data', (d: string) => (this.stderr += d));
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  /** Resolves when stdout matches, rejects if the process exits first or the time runs out. */
  async waitFor(pattern: RegExp, timeoutMs: number): Promise<void> {
    let exited = false;
    void this.exited.then(() => (exited = true));
    const deadline = Date.now() + timeoutMs;
    while (!pattern.test(this.stdout)) {
      if (exited) throw new Error(`service exited before ${pattern}:\n${this.stdout}\n${this.stderr}`);
      if (Date.now() > deadline) throw new Error(`no ${pattern} within ${timeoutMs} ms:\n${this.stdout}\n${this.stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Ctrl-C: SIGINT to the whole process group, as a terminal sends it. */
  interrupt(): void {
    process.kill(-this.child.pid!, 'SIGINT');
  }

  kill(): void {
    try {
      process.kill(-this.child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/**
 * How long a clean stop may take before the test calls it hung: past the service's own
 * STOP_DEADLINE_MS (15 s), after which it exits 1 by itself, so a hang still fails the test (exit
 * code 1, or 'timeout'), while a clean stop slowed by a loaded machine (the gateway's drain is up
 * to 5 s, then Temporal and PostgreSQL stop) is not taken for one.
 */
const STOP_MS = 20_000;

async function exitWithin(svc: Service, ms: number) {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), ms)));
  const result = await Promise.race([svc.exited, timeout]);
  clearTimeout(timer);
  return result;
}

describe('npm start on embedded defaults', () => {
  let dataDir: string;
  let ports: { pg: number; http: number; metrics: number; temporal: number; temporalUi: number };
  let env: NodeJS.ProcessEnv;
  const running: Service[] = [];

  function start(extra: NodeJS.ProcessEnv = {}): Service {
    const svc = new Service({ ...env, ...extra });
    running.push(svc);
    return svc;
  }

  const base = () => `http://127.0.0.1:${ports.http}`;

  /** After a stop: PostgreSQL and the Temporal dev server are both gone. */
  async function expectAllStopped(ms = 15_000): Promise<void> {
    expect(await waitUntil(async () => !(await canConnect(ports.pg)), ms)).toBe(true);
    expect(await canConnect(ports.temporal)).toBe(false);
    expect(await canConnect(ports.temporalUi)).toBe(false);
    expect(await temporalServersOn(dataDir)).toEqual([]);
  }

  beforeAll(async () => {
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-start-'));
    // We run as root: the embedded server runs as the `postgres` user and must reach the directory.
    await fs.chmod(dataDir, 0o755);
    ports = { pg: await reservePort(), http: await reservePort(), metrics: await reservePort(), temporal: await reservePort(), temporalUi: await reservePort() };
    env = { ...process.env };
    // A fresh machine: no DATABASE_URL, nothing else configured but where and on which ports.
    for (const k of ['DATABASE_URL', 'PORT', 'METRICS_PORT', 'EMBEDDED_PG_PORT', 'DATA_DIR', 'HOST', 'DEMO_ACCOUNT', 'LOG_LEVEL']) delete env[k];
    for (const k of Object.keys(env)) if (k.startsWith('TEMPORAL_') && k !== 'TEMPORAL_CLI_PATH') delete env[k];
    Object.assign(env, {
      DATA_DIR: dataDir,
      EMBEDDED_PG_PORT: String(ports.pg),
      PORT: String(ports.http),
      METRICS_PORT: String(ports.metrics),
      HOST: '127.0.0.1',
      TEMPORAL_PORT: String(ports.temporal),
      TEMPORAL_UI_PORT: String(ports.temporalUi),
      SIM_PORT: String(await reservePort()),
      STREAM_PORT: String(await reservePort()),
    });
  });

  // A failed test must not leave its service holding the ports for the next ones.
  afterEach(async () => {
    for (const svc of running.splice(0)) {
      if (svc.child.exitCode !== null || svc.child.signalCode !== null) continue;
      svc.kill();
      await svc.exited;
    }
  });

  afterAll(async () => {
    for (const svc of running) svc.kill();
    await killLeftoverTemporal(dataDir);
    await stopLeftoverPostgres(dataDir);
    await fs.rm(dataDir, { recursive: true, force: true });
  });

  let demoKey = '';
  let itemId = 0;
  let cliKey = '';

  it('first start: initialises, prints the demo key once, serves the API and metrics; Ctrl-C exits 0 and stops PostgreSQL', async () => {
    const t0 = Date.now();
    const svc = start();
    await svc.waitFor(READY, 90_000);
    const readyMs = Date.now() - t0;
    expect(readyMs).toBeLessThan(60_000); // initdb included
    await svc.waitFor(WORKERS_READY, 60_000);

    const printed = svc.stdout.match(/^\s+(tmk_[A-Za-z0-9_-]+)\s*$/m);
    expect(printed, svc.stdout).not.toBeNull();
    demoKey = printed![1]!;
    const keyFile = path.join(dataDir, 'demo-api-key');
    expect((await fs.readFile(keyFile, 'utf8')).trim()).toBe(demoKey);
    expect((await fs.stat(keyFile)).mode & 0o777).toBe(0o600);
    // Printed exactly once, never in a log line.
    expect(svc.stdout.split(demoKey).length - 1).toBe(1);
    expect(svc.stderr).not.toContain(demoKey);

    // Temporal: a dev server persisted under DATA_DIR, its Web UI announced, the workers running.
    expect(svc.stdout).toContain(`Temporal Web UI: http://localhost:${ports.temporalUi}`);
    expect(svc.stdout).toMatch(/"msg":"Temporal workers running"/);
    expect(await canConnect(ports.temporal)).toBe(true);
    expect((await fetch(`http://127.0.0.1:${ports.temporalUi}/`)).status).toBe(200);
    expect(await temporalServersOn(dataDir)).toHaveLength(1);
    await fs.stat(devServerFiles(dataDir).db);

    const usage = await call(base(), 'GET', '/usage', { key: demoKey });
    expect(usage.status, usage.text).toBe(200);
    expect(usage.body).toMatchObject({ status: 'active', usage_status: 'ok' });

    // The stream on the gateway's port (forwarded to the uWS node): the item's creation arrives.
    const stream = new WebSocket(`${base().replace('http:', 'ws:')}/svc/notifications/subscribe`, { headers: { apikey: demoKey } });
    const received: { type: string; op?: string; item_id?: number }[] = [];
    stream.on('message', (m) => received.push(JSON.parse(m.toString())));
    await new Promise((resolve, reject) => stream.once('open', resolve).once('error', reject));
    expect(await waitUntil(async () => received.some((m) => m.type === 'live'), 30_000)).toBe(true);

    const created = await call(base(), 'POST', '/watchlist', { key: demoKey, body: { website: 'pf_05', event: '424242', region: 'it' } });
    expect(created.status, created.text).toBe(201);
    itemId = created.body.id;
    expect(itemId).toBeGreaterThan(0);
    expect(await waitUntil(async () => received.some((m) => m.type === 'watchlist' && m.op === 'create' && m.item_id === itemId), 30_000)).toBe(true);
    stream.close();

    // Live Availability end to end on the embedded parts: the gateway, a scrapeEvent run on the
    // in-process worker, and the simulator's demo event for pf_03.
    const scraped = await call(base(), 'POST', '/events/scrape', {
      key: demoKey,
      body: { platform: 'pf_03', event_id: 'https://pf03.example/e/summer-open-air-4411', region: 'US' },
    });
    expect(scraped.status, scraped.text).toBe(200);
    expect(scraped.body).toMatchObject({ success: true, platform: 'pf_03', region: 'us', sections_type: 'OfferSections', error: null });
    expect(scraped.body.total_stock).toBeGreaterThan(0);

    const metrics = await fetch(`http://127.0.0.1:${ports.metrics}/metrics`);
    expect(metrics.status).toBe(200);
    const text = await metrics.text();
    expect(text).toContain('gateway_requests_total');
    expect(text).toMatch(/operation="getUsage"/);
    // Metrics are not served on the public port.
    expect((await fetch(`${base()}/metrics`)).status).toBe(404);
    expect(await canConnect(ports.pg)).toBe(true);

    svc.interrupt();
    const result = await exitWithin(svc, STOP_MS);
    expect(result, svc.stdout + svc.stderr).toEqual({ code: 0, signal: null });
    expect(svc.stdout).toMatch(/"msg":"stopped"/);
    // Ctrl-C reaches the dev server too; whatever it says while stopping is not an error.
    expect(svc.stdout).not.toMatch(/"level":50/);
    await expectAllStopped();
    expect(await canConnect(ports.http)).toBe(false);
    expect(await canConnect(ports.metrics)).toBe(false);
    await expect(fs.stat(path.join(dataDir, 'postgres', 'postmaster.pid'))).rejects.toThrow();
  }, 120_000);

  it('admin CLI while the service is stopped: starts the embedded server itself and stops it again', async () => {
    expect(await canConnect(ports.pg)).toBe(false);
    const plans = await runTs('src/admin/cli.ts', ['plans:list'], env);
    expect(plans.code, plans.stderr).toBe(0);
    expect(JSON.parse(plans.stdout).map((p: { id: string }) => p.id)).toContain('free');

    const acct = await runTs('src/admin/cli.ts', ['accounts:create', '--plan', 'free'], env);
    expect(acct.code, acct.stderr).toBe(0);
    const { account_id } = JSON.parse(acct.stdout);
    const key = await runTs('src/admin/cli.ts', ['keys:create', '--account', String(account_id), '--apis', 'watchlist'], env);
    expect(key.code, key.stderr).toBe(0);
    cliKey = JSON.parse(key.stdout).key;
    expect(cliKey).toMatch(/^tmk_/);

    expect(await waitUntil(async () => !(await canConnect(ports.pg)), 15_000)).toBe(true);
    await expect(fs.stat(path.join(dataDir, 'postgres', 'postmaster.pid'))).rejects.toThrow();
  }, 90_000);

  it('admin CLI interrupted while it runs its own embedded server: the server is stopped too', async () => {
    expect(await canConnect(ports.pg)).toBe(false);
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/admin/cli.ts', 'plans:list'], { cwd: PROJECT_ROOT, env, stdio: 'ignore' });
    let done = false;
    const exited = new Promise<number | null>((r) =>
      child.once('exit', (code) => {
        done = true;
        r(code);
      }),
    );
    // Interrupt it (only it, not its process group) as soon as its server accepts connections;
    // on a fast run it may finish first, which must leave the server stopped just the same.
    expect(await waitUntil(async () => done || (await canConnect(ports.pg)), 30_000)).toBe(true);
    child.kill('SIGINT');
    const code = await exited;
    expect([0, 130]).toContain(code); // 0 if it had already finished
    expect(await waitUntil(async () => !(await canConnect(ports.pg)), 15_000)).toBe(true);
  }, 60_000);

  it('second start on the same DATA_DIR: no new demo key, earlier data still there; the CLI joins the running server', async () => {
    const t0 = Date.now();
    const svc = start();
    await svc.waitFor(READY, 60_000);
    expect(Date.now() - t0).toBeLessThan(30_000);
    await svc.waitFor(WORKERS_READY, 60_000);
    expect(svc.stdout).not.toMatch(/tmk_/);
    expect(svc.stdout).toContain('demo-api-key');

    // The demo key and the watchlist item from the first run.
    const list = await call(base(), 'GET', '/watchlist', { key: demoKey });
    expect(list.status, list.text).toBe(200);
    expect(list.body.map((i: { id: number }) => i.id)).toEqual([itemId]);
    // The key the CLI made while the service was stopped.
    expect((await call(base(), 'GET', '/watchlist', { key: cliKey })).status).toBe(200);

    // The CLI against the running service's data directory: joins the server, leaves it up.
    const acct = await runTs('src/admin/cli.ts', ['accounts:create', '--plan', 'starter'], env);
    expect(acct.code, acct.stderr).toBe(0);
    const { account_id } = JSON.parse(acct.stdout);
    const key = await runTs('src/admin/cli.ts', ['keys:create', '--account', String(account_id)], env);
    expect(key.code, key.stderr).toBe(0);
    const usage = await call(base(), 'GET', '/usage', { key: JSON.parse(key.stdout).key });
    expect(usage.status).toBe(200);
    expect(usage.body.plan).toBe('starter');
    const set = await runTs('src/admin/cli.ts', ['usage:set', '--account', String(account_id), '--used', '21000'], env);
    expect(set.code, set.stderr).toBe(0);
    const after = await call(base(), 'GET', '/usage', { key: JSON.parse(key.stdout).key });
    expect(after.body.credits).toMatchObject({ used: 21_000, overage: 1_000 });
    // The service still has its database after the CLI exited.
    expect(await canConnect(ports.pg)).toBe(true);
    expect((await call(base(), 'GET', '/usage', { key: demoKey })).status).toBe(200);

    svc.interrupt();
    expect(await exitWithin(svc, STOP_MS), svc.stdout + svc.stderr).toEqual({ code: 0, signal: null });
    await expectAllStopped();
  }, 120_000);

  it('Ctrl-C with a client mid-request: the gateway drains for a bounded time, everything stops, exit 0', async () => {
    const svc = start();
    await svc.waitFor(READY, 60_000);
    await svc.waitFor(WORKERS_READY, 60_000);
    // A client that has sent half a request: the server must not wait for it forever, and the
    // exit must still be the service's own clean one.
    const sock = net.connect({ host: '127.0.0.1', port: ports.http });
    await new Promise((r) => sock.once('connect', r));
    sock.write('GET /usage HTTP/1.1\r\nHost: localhost\r\n');
    const sockClosed = new Promise((r) => sock.once('close', r));
    sock.on('error', () => {});
    await new Promise((r) => setTimeout(r, 200));
    svc.interrupt();
    expect(await exitWithin(svc, STOP_MS), svc.stdout + svc.stderr).toEqual({ code: 0, signal: null });
    expect(svc.stdout).toMatch(/"msg":"stopped"/);
    await sockClosed;
    await expectAllStopped();
  }, 90_000);

  it('Ctrl-C while the workers are still starting: stops at once, exit 0, no start-up failure reported', async () => {
    const svc = start();
    await svc.waitFor(READY, 60_000);
    expect(svc.stdout).not.toMatch(WORKERS_READY); // bundling the workflow code takes seconds
    const t0 = Date.now();
    svc.interrupt();
    expect(await exitWithin(svc, STOP_MS), svc.stdout + svc.stderr).toEqual({ code: 0, signal: null });
    // Before, the worker retried the stopped Temporal server for ~10 s and then reported it.
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(svc.stderr + svc.stdout).not.toMatch(/failed to start/);
    await expectAllStopped();
  }, 90_000);

  it('SIGTERM stops it cleanly too', async () => {
    const svc = start();
    await svc.waitFor(READY, 60_000);
    await svc.waitFor(WORKERS_READY, 60_000);
    process.kill(svc.child.pid!, 'SIGTERM');
    expect(await exitWithin(svc, STOP_MS), svc.stdout + svc.stderr).toEqual({ code: 0, signal: null });
    await expectAllStopped();
  }, 90_000);

  it('killed outright (SIGKILL to the service alone, as the OOM killer or a native crash): its Temporal dev server goes with it; the next start works and owns the PostgreSQL left behind', async () => {
    const killed = start();
    await killed.waitFor(READY, 60_000);
    await killed.waitFor(WORKERS_READY, 60_000);
    expect(await temporalServersOn(dataDir)).toHaveLength(1);
    // The service's node process only, not its process group: nothing of ours runs to stop the others.
    process.kill(killed.child.pid!, 'SIGKILL');
    await killed.exited;
    // Before, the dev server stayed, and the next start refused: "port (TEMPORAL_PORT) is already in use".
    expect(await waitUntil(async () => (await temporalServersOn(dataDir)).length === 0, 15_000)).toBe(true);
    const next = start();
    await next.waitFor(READY, 60_000);
    await next.waitFor(WORKERS_READY, 60_000);
    expect((await fetch(`${base()}/openapi.json`)).status).toBe(200);
    next.interrupt();
    expect(await exitWithin(next, STOP_MS), next.stdout + next.stderr).toEqual({ code: 0, signal: null });
    // The embedded PostgreSQL the killed run left was stopped and started again by the next one,
    // which then stopped it as its own (joined, it would have been left running).
    expect(next.stdout + next.stderr).toMatch(/stopping the embedded PostgreSQL a killed run left behind/);
    await expectAllStopped();
  }, 180_000);

  it('a Temporal dev server a killed run left on DATA_DIR (an older version, or no setpriv) holds its ports: the next start stops it and starts', async () => {
    // What a killed run without the parent-death signal left: a server on this DATA_DIR and its
    // ports, its pid file naming a starter that is gone.
    const binary = await resolveTemporalCli({ cliPath: process.env.TEMPORAL_CLI_PATH || undefined });
    const left = await startDevServer({ binary, dataDir, port: ports.temporal, uiPort: ports.temporalUi, namespace: 'default', log: createLogger('silent') });
    const gone = spawn('true');
    await new Promise((resolve) => gone.once('exit', resolve));
    const files = devServerFiles(dataDir);
    await fs.writeFile(files.pidFile, JSON.stringify({ pid: left.pid, owner: gone.pid }));
    expect(await canConnect(ports.temporal)).toBe(true);
    const svc = start();
    // Before, the start refused: "port (TEMPORAL_PORT) is already in use by pid ...".
    await svc.waitFor(READY, 60_000);
    await svc.waitFor(WORKERS_READY, 60_000);
    expect(svc.stdout).toMatch(/stopping a Temporal dev server left running by an earlier run/);
    expect(isRunning(left.pid!)).toBe(false);
    expect(await temporalServersOn(dataDir)).toHaveLength(1);
    svc.interrupt();
    expect(await exitWithin(svc, STOP_MS), svc.stdout + svc.stderr).toEqual({ code: 0, signal: null });
    await expectAllStopped();
  }, 180_000);

  it('a gateway port already in use: non-zero exit naming PORT and the process that holds it, before anything starts', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(ports.http, '127.0.0.1', () => r()));
    try {
      const svc = start();
      const result = await exitWithin(svc, 60_000);
      expect(result).not.toBe('timeout');
      expect((result as { code: number | null }).code).not.toBe(0);
      expect(svc.stderr).toContain(`failed to start: port ${ports.http} (PORT) is already in use by pid ${process.pid} (`);
      expect(svc.stderr).toContain('; set PORT to a free port');
      expect(svc.stdout + svc.stderr).not.toMatch(/EADDRINUSE|panic|database ready/);
      await expectAllStopped();
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  }, 90_000);

  it('a Temporal port already in use: non-zero exit naming TEMPORAL_PORT, and the embedded server is stopped', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(ports.temporal, '127.0.0.1', () => r()));
    try {
      const svc = start();
      const result = await exitWithin(svc, 60_000);
      expect(result).not.toBe('timeout');
      expect((result as { code: number | null }).code).not.toBe(0);
      expect(svc.stderr).toContain(`port ${ports.temporal} (TEMPORAL_PORT) is already in use`);
      expect(svc.stdout).not.toMatch(READY);
      expect(await waitUntil(async () => !(await canConnect(ports.pg)), 15_000)).toBe(true);
      expect(await temporalServersOn(dataDir)).toEqual([]);
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  }, 90_000);

  it('a bad configuration (PORT=abc) exits non-zero with a message naming PORT', async () => {
    const svc = start({ PORT: 'abc' });
    const result = await exitWithin(svc, 30_000);
    expect(result).not.toBe('timeout');
    expect((result as { code: number | null }).code).not.toBe(0);
    expect(svc.stderr).toMatch(/PORT/);
    expect(svc.stdout).not.toMatch(READY);
    expect(await canConnect(ports.pg)).toBe(false);
  }, 60_000);
});

describe('npm start interrupted during its first start-up', () => {
  it('finishes initialising, stops everything, exits 0; the next start works', async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-start-int-'));
    await fs.chmod(dataDir, 0o755);
    const pg = await reservePort();
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const k of ['DATABASE_URL', 'LOG_LEVEL', 'DEMO_ACCOUNT', 'TEMPORAL_ADDRESS']) delete env[k];
    Object.assign(env, {
      DATA_DIR: dataDir,
      EMBEDDED_PG_PORT: String(pg),
      PORT: String(await reservePort()),
      METRICS_PORT: String(await reservePort()),
      HOST: '127.0.0.1',
      TEMPORAL_PORT: String(await reservePort()),
      TEMPORAL_UI_PORT: String(await reservePort()),
      SIM_PORT: String(await reservePort()),
      STREAM_PORT: String(await reservePort()),
    });
    const services: Service[] = [];
    try {
      const first = new Service(env);
      services.push(first);
      await first.waitFor(/initialising embedded PostgreSQL/, 30_000);
      process.kill(first.child.pid!, 'SIGINT'); // the service only, not its process group
      expect(await exitWithin(first, 20_000), first.stdout + first.stderr).toEqual({ code: 0, signal: null });
      expect(first.stdout).not.toMatch(READY);
      expect(await waitUntil(async () => !(await canConnect(pg)), 15_000)).toBe(true);

      const second = new Service(env);
      services.push(second);
      await second.waitFor(READY, 60_000);
      await second.waitFor(WORKERS_READY, 60_000);
      expect(second.stdout).toMatch(/tmk_|demo-api-key/);
      process.kill(second.child.pid!, 'SIGINT');
      expect(await exitWithin(second, STOP_MS)).toEqual({ code: 0, signal: null });
      expect(await waitUntil(async () => !(await canConnect(pg)), 15_000)).toBe(true);
      expect(await temporalServersOn(dataDir)).toEqual([]);
    } finally {
      for (const svc of services) svc.kill();
      await killLeftoverTemporal(dataDir);
      await stopLeftoverPostgres(dataDir);
      await fs.rm(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});

// As root the embedded server runs as user postgres, which cannot search a 0700 directory of
// root's (/root/app, a `mktemp -d`): its cluster is placed where it can, and found again.
describe.runIf(process.getuid?.() === 0)('npm start as root with DATA_DIR under a private (0700) directory', () => {
  it('starts and says where its data is; the admin CLI joins it; the data is there at the next start', async () => {
    const parent = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-start-private-'));
    const dataDir = path.join(parent, 'data');
    const pg = await reservePort();
    const http = await reservePort();
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const k of ['DATABASE_URL', 'LOG_LEVEL', 'DEMO_ACCOUNT']) delete env[k];
    // Only the database is in question: Temporal is the run's server, and nothing else is started.
    Object.assign(env, {
      DATA_DIR: dataDir,
      EMBEDDED_PG_PORT: String(pg),
      PORT: String(http),
      METRICS_PORT: String(await reservePort()),
      HOST: '127.0.0.1',
      TEMPORAL_ADDRESS: temporalAddress(),
      SCRAPE_TASK_QUEUE: uniqueTaskQueue('private-scrapes'),
      MONITOR_TASK_QUEUE: uniqueTaskQueue('private-monitors'),
      RUN_WORKER: 'false',
      RUN_SIMULATOR: 'false',
      RUN_STREAM: 'false',
    });
    const base = `http://127.0.0.1:${http}`;
    const services: Service[] = [];
    try {
      const first = new Service(env);
      services.push(first);
      await first.waitFor(READY, 90_000);
      const cluster = await fs.readlink(path.join(dataDir, 'postgres'));
      expect(path.dirname(cluster)).toBe(path.join(SHARED_ROOT, 'clusters'));
      expect(first.stdout).toContain(`Embedded PostgreSQL data: ${cluster}`);
      expect((await fs.stat(parent)).mode & 0o777).toBe(0o700);

      // The admin CLI, on the same DATA_DIR, finds the running server and joins it.
      const acct = await runTs('src/admin/cli.ts', ['accounts:create', '--plan', 'free'], env);
      expect(acct.code, acct.stderr).toBe(0);
      const made = await runTs('src/admin/cli.ts', ['keys:create', '--account', String(JSON.parse(acct.stdout).account_id)], env);
      expect(made.code, made.stderr).toBe(0);
      const key: string = JSON.parse(made.stdout).key;
      expect((await call(base, 'GET', '/usage', { key })).status).toBe(200);
      expect(await canConnect(pg)).toBe(true);

      first.interrupt();
      expect(await exitWithin(first, STOP_MS), first.stdout + first.stderr).toEqual({ code: 0, signal: null });
      expect(await waitUntil(async () => !(await canConnect(pg)), 15_000)).toBe(true);

      const second = new Service(env);
      services.push(second);
      await second.waitFor(READY, 60_000);
      expect(second.stdout).toContain(`Embedded PostgreSQL data: ${cluster}`);
      expect(second.stdout).not.toMatch(/tmk_/); // the demo account of the first start is there
      expect((await call(base, 'GET', '/usage', { key })).status).toBe(200);
      second.interrupt();
      expect(await exitWithin(second, STOP_MS), second.stdout + second.stderr).toEqual({ code: 0, signal: null });
    } finally {
      for (const svc of services) svc.kill();
      await stopLeftoverPostgres(dataDir);
      const cluster = await fs.readlink(path.join(dataDir, 'postgres')).catch(() => null);
      if (cluster) await fs.rm(cluster, { recursive: true, force: true });
      await fs.rm(parent, { recursive: true, force: true });
    }
  }, 180_000);
});

describe('npm start with DATABASE_URL and TEMPORAL_ADDRESS', () => {
  it('uses that database and that Temporal (no embedded servers) and stops cleanly with exit 0 on SIGINT and SIGTERM', async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-start-url-'));
    // A database of its own: in the run's shared one, this service's shard pollers would poll
    // every other test's watchlist items (a stop while pollers are busy: test/monitors/pollers).
    const scratch = await createScratchDatabase('tm_start_url', databaseUrl());
    try {
      for (const signal of ['SIGINT', 'SIGTERM'] as const) {
        const http = await reservePort();
        const env: NodeJS.ProcessEnv = { ...process.env };
        for (const k of ['PORT', 'METRICS_PORT', 'EMBEDDED_PG_PORT', 'HOST', 'LOG_LEVEL']) delete env[k];
        Object.assign(env, {
          DATABASE_URL: scratch.url,
          DATA_DIR: dataDir,
          DEMO_ACCOUNT: 'false',
          PORT: String(http),
          METRICS_PORT: String(await reservePort()),
          HOST: '127.0.0.1',
          // Temporal given from outside as well (the run's server): no dev server under DATA_DIR.
          TEMPORAL_ADDRESS: temporalAddress(),
          SCRAPE_TASK_QUEUE: uniqueTaskQueue('start-scrapes'),
          MONITOR_TASK_QUEUE: uniqueTaskQueue('start-monitors'),
          SIM_PORT: String(await reservePort()),
          STREAM_PORT: String(await reservePort()),
        });
        const svc = new Service(env);
        try {
          await svc.waitFor(READY, 30_000);
          await svc.waitFor(WORKERS_READY, 60_000);
          expect(svc.stdout).toMatch(/"embedded":false/);
          expect(svc.stdout).not.toMatch(/Temporal Web UI/);
          expect(svc.stdout).toMatch(/"msg":"Temporal workers running"/);
          expect((await call(`http://127.0.0.1:${http}`, 'GET', '/usage')).status).toBe(401);
          process.kill(svc.child.pid!, signal);
          expect(await exitWithin(svc, STOP_MS), svc.stdout + svc.stderr).toEqual({ code: 0, signal: null });
          expect(svc.stdout).toMatch(/"msg":"stopped"/);
        } finally {
          svc.kill();
        }
      }
      // Nothing under DATA_DIR but the webhook sealing key (WEBHOOK_SECRET_KEY unset) and the
      // simulator's CA certificate (its key never leaves memory): no embedded server, no demo key.
      expect(await fs.readdir(dataDir)).toEqual(['simulator', 'webhook-secret.key']);
      expect(await fs.readdir(path.join(dataDir, 'simulator'))).toEqual(['ca.pem']);
    } finally {
      await fs.rm(dataDir, { recursive: true, force: true });
      await scratch.drop();
    }
  }, 90_000);
});

describe('the demo account', () => {
  it('is created all or nothing, exactly once, even by concurrent first starts', async () => {
    const db = createDb({ connectionString: databaseUrl(), poolMax: 4 });
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-demo-'));
    try {
      // The key file cannot be written (its path is a directory): nothing may be left behind,
      // or every later start would say the key "was printed at first start".
      await fs.mkdir(path.join(dir, 'demo-api-key'));
      await expect(ensureDemoAccount(db, dir)).rejects.toThrow();
      expect(await db('accounts').where({ name: 'demo' })).toEqual([]);
      await fs.rm(path.join(dir, 'demo-api-key'), { recursive: true });

      const results = await Promise.all([ensureDemoAccount(db, dir), ensureDemoAccount(db, dir), ensureDemoAccount(db, dir)]);
      expect(results.filter((r) => r.created)).toHaveLength(1);
      const made = results.find((r) => r.created)!;
      expect(made.key).toMatch(/^tmk_/);
      expect((await fs.readFile(made.keyFile, 'utf8')).trim()).toBe(made.key);
      expect(await db('accounts').where({ name: 'demo' })).toHaveLength(1);
      expect(await fs.readdir(dir)).toEqual(['demo-api-key']);
      expect(await ensureDemoAccount(db, dir)).toEqual({ created: false, keyFile: made.keyFile });
    } finally {
      await db.destroy();
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
