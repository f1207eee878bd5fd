// Finds the `temporal` CLI (which runs `temporal server start-dev`) without touching the internet:
// TEMPORAL_CLI_PATH, else a per-machine cache outside the checkout, else a one-time `go install`
// through the Go module proxy into that cache. Returns null when none of that is possible, which
// means "let @temporalio/testing download the server itself" (needs internet; see dev-server.ts).
import { spawn } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { isRunning } from './processes.ts';

/** Later tags carry a `replace` directive in their go.mod, so `go install` refuses them. */
export const TEMPORAL_CLI_VERSION = 'v1.5.1';
export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal';
/** The toolchain the tag was built with, fetched through the proxy if the machine's Go fails. */
export const FALLBACK_GO_TOOLCHAIN = 'go1.25.0';

export interface ResolveTemporalCliOptions {
  /** TEMPORAL_CLI_PATH: used as is; it must exist and be executable. */
  cliPath?: string;
  onProgress?: (msg: string) => void;
  /** Where TEMPORAL_CLI_CACHE, XDG_CACHE_HOME, HOME and PATH are read (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** The `go` command; found on PATH or at /usr/local/go/bin/go when not given. */
  goBinary?: string;
  /** How often a running build reports that it is still going. */
  progressIntervalMs?: number;
  /** How long to wait for another process's build before giving up. */
  lockTimeoutMs?: number;
  /** Aborts a build (its `go` process is killed) or a wait for another process's build. */
  signal?: AbortSignal;
}

/** The cached binary's path: `<cache>/tm-temporal/<version>/temporal`. */
export function cachedCliPath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.TEMPORAL_CLI_CACHE || env.XDG_CACHE_HOME || path.join(env.HOME || os.homedir(), '.cache');
  return path.join(base, 'tm-temporal', TEMPORAL_CLI_VERSION, 'temporal');
}

export async function resolveTemporalCli(opts: ResolveTemporalCliOptions = {}): Promise<string | null> {
  const progress = opts.onProgress ?? (() => {});
  if (opts.cliPath) {
    const given = path.resolve(opts.cliPath);
    const problem = await notExecutable(given);
    if (problem) throw new Error(`TEMPORAL_CLI_PATH=${opts.cliPath}: ${problem}`);
    return given;
  }

  const env = opts.env ?? process.env;
  const target = cachedCliPath(env);
  if (!(await notExecutable(target))) return target;

  const go = opts.goBinary ?? (await findGo(env));
  if (!go) {
    progress(`no Temporal CLI at ${target} and no Go toolchain to build it; falling back to the SDK's download`);
    return null;
  }
  return buildOnce(go, target, env, progress, opts);
}

async function notExecutable(file: string): Promise<string | null> {
  try {
    const st = await fs.stat(file);
    if (!st.isFile()) return 'not a file';
    await fs.access(file, fsConstants.X_OK);
    return null;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return 'no such file';
    if (code === 'EACCES') return 'not executable';
    return (err as Error).message;
  }
}

async function findGo(env: NodeJS.ProcessEnv): Promise<string | null> {
  const candidates = (env.PATH ?? '')
    .split(path.delimiter)
    .filter(Boolean)
    .map((dir) => path.join(dir, 'go'));
  // The official tarball's location, often not on PATH in non-login shells.
  candidates.push(path.join(env.GOROOT || '/usr/local/go', 'bin', 'go'));
  for (const c of candidates) if (!(await notExecutable(c))) return c;
  return null;
}

const LOCK_STALE_WITHOUT_OWNER_MS = 10_000;

/**
 * Builds under an exclusive lock directory next to the target, so concurrent first starts (npm
 * test's workers, `npm start` racing `npm run temporal:install`) build once and the others wait.
 */
async function buildOnce(
  go: string,
  target: string,
  env: NodeJS.ProcessEnv,
  progress: (msg: string) => void,
  opts: ResolveTemporalCliOptions,
): Promise<string | null> {
  const root = path.dirname(path.dirname(target)); // <cache>/tm-temporal
  await fs.mkdir(root, { recursive: true });
  const lockDir = path.join(root, `${TEMPORAL_CLI_VERSION}.lock`);
  const waitStarted = Date.now();
  const waitDeadline = waitStarted + (opts.lockTimeoutMs ?? 20 * 60_000);
  const interval = opts.progressIntervalMs ?? 15_000;
  let announced = 0;
  for (;;) {
    opts.signal?.throwIfAborted();
    if (await tryLock(lockDir)) break;
    const owner = await lockOwner(lockDir);
    if (owner === 'stale') {
      // The builder died (Ctrl-C, SIGKILL): its lock would otherwise block every later start.
      await fs.rm(lockDir, { recursive: true, force: true });
      continue;
    }
    if (announced === 0) {
      progress(`another process (pid ${owner ?? '?'}) is building the Temporal CLI; waiting for it`);
      announced = Date.now();
    } else if (Date.now() - announced >= interval) {
      progress(`still waiting for the Temporal CLI build (${Math.round((Date.now() - waitStarted) / 1000)} s elapsed)`);
      announced = Date.now();
    }
    if (Date.now() > waitDeadline) throw new Error(`timed out waiting for the Temporal CLI build lock ${lockDir}`);
    await sleep(500, opts.signal);
    if (!(await notExecutable(target))) return target;
  }

  try {
    // The previous holder may have finished between our check and our lock.
    if (!(await notExecutable(target))) return target;
    await removeLeftoverBuildDirs(root);
    for (const toolchain of [undefined, FALLBACK_GO_TOOLCHAIN]) {
      opts.signal?.throwIfAborted();
      const built = await goInstall(go, root, env, toolchain, progress, opts);
      if (built) {
        await fs.mkdir(path.dirname(target), { recursive: true });
        // Same filesystem: a rename is atomic, so no reader ever sees a half-written binary.
        await fs.rename(built.binary, target);
        await fs.rm(built.dir, { recursive: true, force: true });
        return target;
      }
    }
    progress(`could not build the Temporal CLI; falling back to the SDK's download`);
    return null;
  } finally {
    await fs.rm(lockDir, { recursive: true, force: true });
  }
}

async function tryLock(lockDir: string): Promise<boolean> {
  try {
    await fs.mkdir(lockDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  await fs.writeFile(path.join(lockDir, 'owner'), String(process.pid));
  return true;
}

/** The pid holding the lock, 'stale' if it is gone, null if it has not written its pid yet. */
async function lockOwner(lockDir: string): Promise<number | 'stale' | null> {
  const pid = Number(await fs.readFile(path.join(lockDir, 'owner'), 'utf8').catch(() => ''));
  if (pid > 0) return isRunning(pid) ? pid : 'stale';
  // Between mkdir and writing the pid a few milliseconds pass; only a lock that stays ownerless
  // for long was left by a process killed in that gap.
  const st = await fs.stat(lockDir).catch(() => null);
  if (!st) return null;
  return Date.now() - st.mtimeMs > LOCK_STALE_WITHOUT_OWNER_MS ? 'stale' : null;
}

async function removeLeftoverBuildDirs(root: string): Promise<void> {
  for (const name of await fs.readdir(root)) {
    if (name.startsWith(`${TEMPORAL_CLI_VERSION}.build-`)) await fs.rm(path.join(root, name), { recursive: true, force: true });
  }
}

async function goInstall(
  go: string,
  root: string,
  env: NodeJS.ProcessEnv,
  toolchain: string | undefined,
  progress: (msg: string) => void,
  opts: ResolveTemporalCliOptions,
): Promise<{ dir: string; binary: string } | null> {
  const dir = await fs.mkdtemp(path.join(root, `${TEMPORAL_CLI_VERSION}.build-`));
  const what = `${TEMPORAL_CLI_MODULE}@${TEMPORAL_CLI_VERSION}`;
  progress(
    `building the Temporal CLI ${TEMPORAL_CLI_VERSION} (go install ${what}${toolchain ? `, GOTOOLCHAIN=${toolchain}` : ''}); ` +
      'one time per machine, it takes a few minutes',
  );
  const started = Date.now();
  const childEnv: NodeJS.ProcessEnv = { ...env, GOBIN: dir };
  if (toolchain) childEnv.GOTOOLCHAIN = toolchain;
  const child = spawn(go, ['install', what], { env: childEnv, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-4000)));
  const ticker = setInterval(
    () => progress(`still building the Temporal CLI (${Math.round((Date.now() - started) / 1000)} s elapsed)`),
    opts.progressIntervalMs ?? 15_000,
  );
  const onAbort = () => child.kill('SIGTERM');
  opts.signal?.addEventListener('abort', onAbort);
  const code = await new Promise<number | null>((resolve) => {
    child.once('error', (err) => {
      stderr += String(err);
      resolve(-1);
    });
    child.once('exit', (c) => resolve(c));
  });
  clearInterval(ticker);
  opts.signal?.removeEventListener('abort', onAbort);
  const seconds = Math.round((Date.now() - started) / 1000);
  const binary = path.join(dir, 'temporal');
  if (code === 0 && !(await notExecutable(binary))) {
    progress(`built the Temporal CLI in ${seconds} s`);
    return { dir, binary };
  }
  await fs.rm(dir, { recursive: true, force: true });
  opts.signal?.throwIfAborted();
  const tail = stderr.trim().split('\n').slice(-10).join('\n');
  progress(`go install failed after ${seconds} s (exit ${code}):\n${tail}`);
  return null;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
