// Runs `temporal server start-dev` for `npm start` when no TEMPORAL_ADDRESS is given: state kept in
// SQLite under DATA_DIR so workflows survive restarts, output routed to our logger, and the
// process tied to ours (an exit hook, a pid file that lets the next start clean up after a
// SIGKILL). Without a CLI binary it falls back to @temporalio/testing's downloaded server.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { assertPortFree, portInUseMessage, releasePort, reservePort } from '../src/runtime/ports.ts';
import { commandLine, isRunning } from './processes.ts';
import { searchAttributeArgs } from './search-attributes.ts';
import { installSdkLogging, type Log } from './sdk-logging.ts';
import { diesWithThisProcess } from '../src/runtime/parent-death.ts';

export interface DevServerOptions {
  /** The temporal CLI (resolveTemporalCli); null falls back to the SDK's download. */
  binary: string | null;
  /** DATA_DIR: the server keeps its SQLite database in `<dataDir>/temporal/`. */
  dataDir: string;
  /** The gRPC frontend's port (TEMPORAL_PORT); 0 reserves one (src/runtime/ports.ts), read it from `address`. */
  port: number;
  /** The Web UI's port (TEMPORAL_UI_PORT), 0 to reserve one; null runs the server without it (`--headless`), as the test run does. */
  uiPort: number | null;
  namespace: string;
  log: Log;
  /** More `--dynamic-config-value KEY=VALUE` settings, such as a test run's higher poll limits. */
  dynamicConfig?: Record<string, string | number>;
  /** How long the frontend may take to answer after launch. */
  readyTimeoutMs?: number;
  /** How long SIGTERM is given before SIGKILL. */
  stopGraceMs?: number;
}

export interface DevServer {
  /** host:port of the gRPC frontend. */
  address: string;
  /** The Web UI, or null when the SDK fallback runs the server without it. */
  uiUrl: string | null;
  /** The server's pid (absent for the SDK fallback, which hides it). */
  pid?: number;
  stop(): Promise<void>;
}

const IP = '127.0.0.1';
const STDERR_LINES_KEPT = 20;
/**
 * Starts tried when a port the server binds was taken before it bound it. The CLI picks its
 * history, matching and worker ports itself (listen on 0, then close: the race of issue 35), and
 * a port-0 caller's own port is only as safe as its reservation: each such loss is worth another
 * start, never a panic handed to the user.
 */
const BIND_ATTEMPTS = 3;
/** How the server (Go's net package) reports a port it could not bind. */
const BIND_FAILURE = /listen tcp [^\s]*:(\d+): bind: address already in use/;

/** The server exited because `port` was taken when it came to bind it. */
class PortTaken extends Error {
  constructor(readonly port: number) {
    super(`port ${port} was taken before the Temporal server could bind it`);
  }
}

export function devServerFiles(dataDir: string) {
  const dir = path.join(dataDir, 'temporal');
  return { dir, db: path.join(dir, 'dev-server.sqlite'), pidFile: path.join(dir, 'dev-server.pid') };
}

/** Dev data: losing the last writes on a power cut is fine, waiting on fsync is not. */
const SQLITE_PRAGMAS = ['--sqlite-pragma', 'journal_mode=WAL', '--sqlite-pragma', 'synchronous=OFF'];

/**
 * Server settings the service relies on, given to every dev server (docker-compose's Temporal gets
 * the same from deploy/temporal/dynamic-config.yaml; test/deploy checks they agree).
 * matching.longPollExpirationInterval: a worker that freezes (SIGSTOP, a paused VM, a stalled
 * host) keeps its open task polls, and the server hands tasks to them until they expire, 1 min by
 * default: a shard poll retried after its 15 s heartbeat timeout went to the frozen worker up to
 * 4 times in a row, 31 to 74 s before the live worker got it (test/faults/paused-worker.test.ts).
 * At 10 s, the live worker gets it at the first retry.
 */
export const SERVICE_DYNAMIC_CONFIG: Readonly<Record<string, string>> = { 'matching.longPollExpirationInterval': '"10s"' };

/** The CLI's arguments. The search attributes are registered at every start (a no-op once there). */
export function devServerArgs(
  opts: Pick<DevServerOptions, 'port' | 'uiPort' | 'namespace' | 'dynamicConfig'> & { httpPort?: number; metricsPort?: number },
  dbFilename: string,
): string[] {
  return [
    'server',
    'start-dev',
    '--db-filename',
    dbFilename,
    '--ip',
    IP,
    '--port',
    String(opts.port),
    ...(opts.uiPort === null ? ['--headless'] : ['--ui-port', String(opts.uiPort)]),
    // Left to the CLI, these two are picked by listening on 0 and closing: reserved instead.
    ...(opts.httpPort ? ['--http-port', String(opts.httpPort)] : []),
    ...(opts.metricsPort ? ['--metrics-port', String(opts.metricsPort)] : []),
    '--namespace',
    opts.namespace,
    '--log-level',
    'warn',
    '--log-format',
    'json',
    ...storageAndConfigArgs(opts),
  ];
}

/** What both launchers pass: the SQLite pragmas, the search attributes, the dynamic config. */
function storageAndConfigArgs(opts: Pick<DevServerOptions, 'dynamicConfig'>): string[] {
  return [
    ...SQLITE_PRAGMAS,
    ...searchAttributeArgs(),
    ...Object.entries({ ...SERVICE_DYNAMIC_CONFIG, ...opts.dynamicConfig }).flatMap(([key, value]) => ['--dynamic-config-value', `${key}=${value}`]),
  ];
}

export async function startDevServer(opts: DevServerOptions): Promise<DevServer> {
  const files = devServerFiles(opts.dataDir);
  await fs.mkdir(files.dir, { recursive: true });
  // A previous run killed with SIGKILL cannot have stopped its server: stop it now, or it would
  // hold the ports and the SQLite file.
  await stopOrphan(files, opts.log, opts.stopGraceMs ?? 5_000);
  for (let attempt = 1; ; attempt++) {
    const reserved: number[] = [];
    const reserve = async () => {
      const port = await reservePort();
      reserved.push(port);
      return port;
    };
    const port = opts.port || (await reserve());
    const uiPort = opts.uiPort === 0 ? await reserve() : opts.uiPort;
    const release = () => reserved.forEach(releasePort);
    try {
      await assertPortFree(port, 'TEMPORAL_PORT', IP);
      if (uiPort !== null) await assertPortFree(uiPort, 'TEMPORAL_UI_PORT', IP);
      const server =
        opts.binary === null
          ? await startWithSdk({ ...opts, port, uiPort }, files.db)
          : await launch({ ...opts, port, uiPort, httpPort: await reserve(), metricsPort: await reserve() }, files, opts.binary);
      return { ...server, stop: () => server.stop().finally(release) };
    } catch (err) {
      release();
      if (!(err instanceof PortTaken)) throw err;
      // A port the user configured, taken between our check and the server's bind: say by whom.
      if (err.port === opts.port) throw new Error(`Temporal dev server did not start: ${portInUseMessage(err.port, 'TEMPORAL_PORT')}`);
      if (err.port === opts.uiPort) throw new Error(`Temporal dev server did not start: ${portInUseMessage(err.port, 'TEMPORAL_UI_PORT')}`);
      if (attempt >= BIND_ATTEMPTS) throw new Error(`Temporal dev server did not start: ${err.message}, ${attempt} times in a row`);
      opts.log.warn({ port: err.port, attempt }, `${err.message}; starting it again`);
    }
  }
}

/** One start of the CLI's server on the ports given; PortTaken when one of them was lost. */
async function launch(
  opts: DevServerOptions & { uiPort: number | null; httpPort: number; metricsPort: number },
  files: ReturnType<typeof devServerFiles>,
  binary: string,
): Promise<DevServer> {
  const started = performance.now();
  const args = devServerArgs(opts, files.db);
  // Same process group as ours (not detached): a Ctrl-C in the terminal reaches it too. And it
  // dies with us (parent-death.ts): killed, we must not leave it holding its port.
  const command = diesWithThisProcess(binary, args);
  const child = spawn(command.file, command.args, { stdio: ['ignore', 'pipe', 'pipe'], detached: false });
  let exited: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  let spawnError: Error | null = null;
  const exitedPromise = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = { code, signal };
      resolve();
    });
    // A binary that cannot be run emits 'error' and never 'exit'.
    child.once('error', (err) => {
      spawnError = err;
      if (child.pid === undefined) {
        exited = { code: null, signal: null };
        resolve();
      }
    });
  });
  const killOnExit = () => {
    // Only synchronous work is possible here. The server may then die of SIGPIPE (its output
    // pipes close with us) rather than finish its own shutdown; SQLite in WAL mode survives that.
    if (!exited) child.kill('SIGTERM');
  };
  process.on('exit', killOnExit);

  let stopping = false;
  const lastStderr: string[] = [];
  let ready = false;
  let portTaken: number | null = null;
  const outputClosed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const noteBindFailure = (line: string) => {
    const m = !ready && BIND_FAILURE.exec(line);
    if (m) portTaken ??= Number(m[1]);
  };
  pipeLines(child, 'stdout', (line) => {
    noteBindFailure(line);
    // A terminal's Ctrl-C reaches the server directly (same process group), before our own
    // ordered stop: from here on its complaints about clients are expected.
    if (line.startsWith('Stopping server')) stopping = true;
    opts.log.debug({ source: 'temporal-server' }, line);
  });
  void exitedPromise.then(() => {
    // Before ready, the start-up error reports it.
    if (ready && !stopping) opts.log.error({ pid: child.pid, ...(exited ?? {}) }, 'Temporal dev server exited unexpectedly');
  });
  pipeLines(child, 'stderr', (line) => {
    noteBindFailure(line);
    lastStderr.push(line);
    if (lastStderr.length > STDERR_LINES_KEPT) lastStderr.shift();
    // After a lost port the server panics: its trace adds nothing to our message.
    logServerLine(opts.log, line, stopping || (portTaken !== null && !BIND_FAILURE.test(line)));
  });

  let stopped: Promise<void> | null = null;
  const stop = () =>
    (stopped ??= (async () => {
      stopping = true;
      if (!exited) {
        child.kill('SIGTERM');
        const graceful = await Promise.race([exitedPromise.then(() => true), sleep(opts.stopGraceMs ?? 5_000).then(() => false)]);
        if (!graceful) {
          opts.log.warn({ pid: child.pid }, 'Temporal dev server did not stop in time; killing it');
          child.kill('SIGKILL');
          await exitedPromise;
        }
      }
      process.off('exit', killOnExit);
      await fs.rm(files.pidFile, { force: true });
    })());

  if (child.pid !== undefined) {
    await fs.writeFile(files.pidFile, JSON.stringify({ pid: child.pid, owner: process.pid }));
  }
  const address = `${IP}:${opts.port}`;
  try {
    await waitUntilServing(address, opts.namespace, opts.readyTimeoutMs ?? 30_000, () => {
      if (spawnError) return `could not run ${binary}: ${(spawnError as Error).message}`;
      if (exited) return `exited (${exited.signal ?? `code ${exited.code}`})`;
      return null;
    });
  } catch (err) {
    await stop();
    // 'exit' can come before the last of its output has been read.
    await Promise.race([outputClosed, sleep(1_000)]);
    // The server's own account of a lost port is a panic trace; ours names the port.
    if (portTaken !== null) throw new PortTaken(portTaken);
    const tail = lastStderr.length ? `\nlast server output:\n  ${lastStderr.join('\n  ')}` : '';
    throw new Error(`Temporal dev server did not start: ${(err as Error).message}${tail}`);
  }
  ready = true;
  const uiUrl = opts.uiPort === null ? null : `http://localhost:${opts.uiPort}`;
  opts.log.info(
    { address, ui: uiUrl, pid: child.pid, db: files.db, ms: Math.round(performance.now() - started) },
    'Temporal dev server ready',
  );
  return { address, uiUrl, pid: child.pid, stop };
}

/** Polls the frontend until the namespace answers; `failed` reports an early exit. */
async function waitUntilServing(address: string, namespace: string, timeoutMs: number, failed: () => string | null): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = 'no answer';
  while (Date.now() < deadline) {
    const why = failed();
    if (why) throw new Error(why);
    if (await canConnect(address)) {
      let connection: Connection | undefined;
      try {
        connection = await Connection.connect({ address, connectTimeout: 2_000 });
        await connection.withDeadline(Date.now() + 2_000, () => connection!.workflowService.describeNamespace({ namespace }));
        return;
      } catch (err) {
        lastError = (err as Error).message;
      } finally {
        await connection?.close();
      }
    }
    await sleep(100);
  }
  throw new Error(`no answer from ${address} within ${timeoutMs} ms (${lastError})`);
}

/** The SDK runs the server (downloaded on first use, which needs internet) and hides its pid. */
async function startWithSdk(opts: DevServerOptions, dbFilename: string): Promise<DevServer> {
  installSdkLogging(opts.log);
  opts.log.warn('no Temporal CLI binary; starting the dev server through @temporalio/testing (downloads it on first use)');
  let env: TestWorkflowEnvironment;
  try {
    env = await TestWorkflowEnvironment.createLocal({
      server: {
        executable: { type: 'cached-download' },
        dbFilename,
        ip: IP,
        port: opts.port,
        ui: opts.uiPort !== null,
        ...(opts.uiPort === null ? {} : { uiPort: opts.uiPort }),
        namespace: opts.namespace,
        log: { format: 'json', level: 'warn' },
        extraArgs: storageAndConfigArgs(opts),
      },
    });
  } catch (err) {
    throw new Error(
      `no Temporal CLI binary (see npm run temporal:install) and the SDK's download failed: ${(err as Error).message}. ` +
        'Set TEMPORAL_CLI_PATH to a temporal binary or TEMPORAL_ADDRESS to a running server.',
    );
  }
  let stopped = false;
  return {
    address: env.address,
    uiUrl: opts.uiPort === null ? null : `http://localhost:${opts.uiPort}`,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await env.teardown();
    },
  };
}

/** What the pid file says: the server's pid and the process that started it (either may be absent). */
async function recordedServer(files: ReturnType<typeof devServerFiles>): Promise<{ pid?: number; owner?: number } | null> {
  const text = await fs.readFile(files.pidFile, 'utf8').catch(() => null);
  if (text === null) return null;
  try {
    return JSON.parse(text) as { pid?: number; owner?: number };
  } catch {
    return {}; // unreadable: as good as absent
  }
}

/**
 * The pid of a dev server of `dataDir` left running by a run that is gone (killed before it could
 * stop it), which the next start stops (stopOrphan) rather than calling its ports taken; else null.
 */
export async function leftoverDevServer(dataDir: string): Promise<number | null> {
  const files = devServerFiles(dataDir);
  const { pid, owner } = (await recordedServer(files)) ?? {};
  if (pid === undefined || !isRunning(pid) || !commandLine(pid).includes(files.db)) return null;
  return owner !== undefined && isRunning(owner) ? null : pid;
}

async function stopOrphan(files: ReturnType<typeof devServerFiles>, log: Log, graceMs: number): Promise<void> {
  const recorded = await recordedServer(files);
  if (recorded === null) return;
  const { pid, owner } = recorded;
  const ours = pid !== undefined && isRunning(pid) && commandLine(pid).includes(files.db);
  if (ours && owner && isRunning(owner)) {
    // Another live process runs a server on this data directory; two servers on one SQLite
    // file would corrupt it.
    throw new Error(`a Temporal dev server (pid ${pid}) started by process ${owner} is already using ${files.db}`);
  }
  if (ours) {
    log.warn({ pid }, 'stopping a Temporal dev server left running by an earlier run');
    const kill = (sig: NodeJS.Signals) => {
      try {
        process.kill(pid, sig);
      } catch {
        // exited meanwhile
      }
    };
    kill('SIGTERM');
    const deadline = Date.now() + graceMs;
    while (isRunning(pid) && Date.now() < deadline) await sleep(100);
    if (isRunning(pid)) kill('SIGKILL');
    while (isRunning(pid)) await sleep(50);
  }
  await fs.rm(files.pidFile, { force: true });
}

function canConnect(address: string): Promise<boolean> {
  const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];
  return new Promise((resolve) => {
    const sock = net.connect({ host, port });
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

function pipeLines(child: ChildProcess, stream: 'stdout' | 'stderr', onLine: (line: string) => void): void {
  let buffered = '';
  child[stream]!.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl).trimEnd();
      buffered = buffered.slice(nl + 1);
      if (line) onLine(line);
    }
  });
}

/**
 * The server logs JSON at warn and above. While it stops, its pollers and dials fail by design,
 * so that burst goes to debug (`quiet`) instead of alarming whoever pressed Ctrl-C; so does the
 * panic trace that follows a lost port, which the launcher reports in its own words.
 */
function logServerLine(log: Log, line: string, quiet: boolean): void {
  let parsed: Record<string, unknown> | null = null;
  try {
    const value: unknown = JSON.parse(line);
    if (value && typeof value === 'object') parsed = value as Record<string, unknown>;
  } catch {
    // not JSON: a panic trace or a start-up error in plain text
  }
  if (!parsed) {
    if (quiet) log.debug({ source: 'temporal-server' }, line);
    else log.warn({ source: 'temporal-server' }, line);
    return;
  }
  const { msg, level, time: _time, ...fields } = parsed;
  const text = typeof msg === 'string' ? msg : line;
  const obj = { source: 'temporal-server', server: fields };
  if (quiet) log.debug(obj, text);
  else if (level === 'ERROR' || level === 'FATAL' || level === 'PANIC' || level === 'DPANIC') log.error(obj, text);
  else if (level === 'WARN') log.warn(obj, text);
  else log.info(obj, text);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
