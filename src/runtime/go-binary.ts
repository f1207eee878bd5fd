// Provisions a Go-built tool (the Temporal CLI, stripe-mock) without touching the internet other
// than the Go module proxy: an explicit path from the tool's env variable, else a per-machine
// cache outside the checkout, else a one-time `go install` into that cache under a lock. Returns
// null when none of that is possible; what that means is up to the caller (see `fallback`).
// A tool that needs a dependency newer than its own go.mod names (a fix) is built inside a
// throwaway module that requires both, since `go install pkg@version` takes no such override.
import { spawn } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { isRunning } from '../../temporal/processes.ts';

/** What to install, where it is cached, and how it is named to a person. */
export interface GoTool {
  /** How progress messages name it: 'the Temporal CLI'. */
  label: string;
  /** The package `go install` builds: 'github.com/temporalio/cli/cmd/temporal'. */
  module: string;
  version: string;
  /**
   * Dependencies raised above what the tool's go.mod names, `{ 'modernc.org/sqlite': 'v1.62.0' }`:
   * the build runs in a module of its own that requires the tool and these (Go's minimal version
   * selection then takes them), and the cache keys on them, so a changed fix builds anew.
   */
  requires?: Record<string, string>;
  /** The file `go install` writes into GOBIN. */
  binaryName: string;
  /** `<cache>/<cacheDirName>/<version>/<binaryName>`. */
  cacheDirName: string;
  /** Names a binary to use as is (TEMPORAL_CLI_PATH); it must exist and be executable. */
  pathEnv: string;
  /** Overrides the cache base (TEMPORAL_CLI_CACHE); else XDG_CACHE_HOME, else ~/.cache. */
  cacheEnv: string;
  /** Tried when the machine's Go fails the build, fetched through the proxy (GOTOOLCHAIN). */
  fallbackToolchain?: string;
  /** How long a first build takes, for the message that announces it. */
  buildTime: string;
  /** What happens when no binary can be had, appended to the message that says so. */
  fallback: string;
}

export interface ResolveGoBinaryOptions {
  /** A binary to use as is; default `env[tool.pathEnv]`. */
  explicitPath?: string;
  onProgress?: (msg: string) => void;
  /** Where the tool's env variables, XDG_CACHE_HOME, HOME, GOROOT and PATH are read (default process.env). */
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

/** The build's name in the cache: the version, then each raised dependency, `v1.5.1+sqlite-v1.62.0`. */
export function buildKey(tool: GoTool): string {
  return [tool.version, ...Object.entries(tool.requires ?? {}).map(([mod, v]) => `${mod.split('/').at(-1)}-${v}`)].join('+');
}

/** The cached binary's path: `<cache>/<cacheDirName>/<buildKey>/<binaryName>`. */
export function cachedBinaryPath(tool: GoTool, env: NodeJS.ProcessEnv = process.env): string {
  const base = env[tool.cacheEnv] || env.XDG_CACHE_HOME || path.join(env.HOME || os.homedir(), '.cache');
  return path.join(base, tool.cacheDirName, buildKey(tool), tool.binaryName);
}

export async function resolveGoBinary(tool: GoTool, opts: ResolveGoBinaryOptions = {}): Promise<string | null> {
  const progress = opts.onProgress ?? (() => {});
  const env = opts.env ?? process.env;
  const explicit = opts.explicitPath ?? (env[tool.pathEnv] || undefined);
  if (explicit) {
    const given = path.resolve(explicit);
    const problem = await notExecutable(given);
    if (problem) throw new Error(`${tool.pathEnv}=${explicit}: ${problem}`);
    return given;
  }

  const target = cachedBinaryPath(tool, env);
  if (!(await notExecutable(target))) return target;

  const go = opts.goBinary ?? (await findGo(env));
  if (!go) {
    progress(`no ${noun(tool)} at ${target} and no Go toolchain to build it; ${tool.fallback}`);
    return null;
  }
  return buildOnce(tool, go, target, env, progress, opts);
}

/** 'the Temporal CLI' → 'Temporal CLI', for messages that put their own article before it. */
function noun(tool: GoTool): string {
  return tool.label.replace(/^the /, '');
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

export async function findGo(env: NodeJS.ProcessEnv = process.env): Promise<string | null> {
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
  tool: GoTool,
  go: string,
  target: string,
  env: NodeJS.ProcessEnv,
  progress: (msg: string) => void,
  opts: ResolveGoBinaryOptions,
): Promise<string | null> {
  const root = path.dirname(path.dirname(target)); // <cache>/<cacheDirName>
  await fs.mkdir(root, { recursive: true });
  const lockDir = path.join(root, `${buildKey(tool)}.lock`);
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
      progress(`another process (pid ${owner ?? '?'}) is building ${tool.label}; waiting for it`);
      announced = Date.now();
    } else if (Date.now() - announced >= interval) {
      progress(`still waiting for the ${noun(tool)} build (${Math.round((Date.now() - waitStarted) / 1000)} s elapsed)`);
      announced = Date.now();
    }
    if (Date.now() > waitDeadline) throw new Error(`timed out waiting for the ${noun(tool)} build lock ${lockDir}`);
    await sleep(500, opts.signal);
    if (!(await notExecutable(target))) return target;
  }

  try {
    // The previous holder may have finished between our check and our lock.
    if (!(await notExecutable(target))) return target;
    await removeLeftoverBuildDirs(tool, root);
    const toolchains = tool.fallbackToolchain ? [undefined, tool.fallbackToolchain] : [undefined];
    for (const toolchain of toolchains) {
      opts.signal?.throwIfAborted();
      const built = await goInstall(tool, go, root, env, toolchain, progress, opts);
      if (built) {
        await fs.mkdir(path.dirname(target), { recursive: true });
        // Same filesystem: a rename is atomic, so no reader ever sees a half-written binary.
        await fs.rename(built.binary, target);
        await fs.rm(built.dir, { recursive: true, force: true });
        return target;
      }
    }
    progress(`could not build ${tool.label}; ${tool.fallback}`);
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

async function removeLeftoverBuildDirs(tool: GoTool, root: string): Promise<void> {
  for (const name of await fs.readdir(root)) {
    if (name.startsWith(`${buildKey(tool)}.build-`)) await fs.rm(path.join(root, name), { recursive: true, force: true });
  }
}

async function goInstall(
  tool: GoTool,
  go: string,
  root: string,
  env: NodeJS.ProcessEnv,
  toolchain: string | undefined,
  progress: (msg: string) => void,
  opts: ResolveGoBinaryOptions,
): Promise<{ dir: string; binary: string } | null> {
  const dir = await fs.mkdtemp(path.join(root, `${buildKey(tool)}.build-`));
  const what = `${tool.module}@${tool.version}`;
  const raised = Object.entries(tool.requires ?? {}).map(([mod, v]) => `${mod}@${v}`);
  progress(
    `building ${tool.label} ${tool.version} (go install ${what}${raised.length ? ` with ${raised.join(', ')}` : ''}` +
      `${toolchain ? `, GOTOOLCHAIN=${toolchain}` : ''}); one time per machine, it takes ${tool.buildTime}`,
  );
  const started = Date.now();
  const childEnv: NodeJS.ProcessEnv = { ...env, GOBIN: dir };
  if (toolchain) childEnv.GOTOOLCHAIN = toolchain;
  // Without raised dependencies, one `go install pkg@version` (the tool's own go.mod decides).
  // With them, a module of our own in the build dir: `go get` the tool and the raised versions
  // into its go.mod, then `go install pkg` builds with that module's versions.
  const moduleDir = path.join(dir, 'module');
  const steps: { args: string[]; cwd?: string }[] = raised.length
    ? [
        { args: ['mod', 'init', 'ticket-market/go-tool-build'], cwd: moduleDir },
        { args: ['get', what, ...raised], cwd: moduleDir },
        { args: ['install', tool.module], cwd: moduleDir },
      ]
    : [{ args: ['install', what] }];
  if (raised.length) await fs.mkdir(moduleDir);
  let stderr = '';
  const ticker = setInterval(
    () => progress(`still building ${tool.label} (${Math.round((Date.now() - started) / 1000)} s elapsed)`),
    opts.progressIntervalMs ?? 15_000,
  );
  let code: number | null = 0;
  for (const step of steps) {
    code = await runGo(go, step.args, { cwd: step.cwd, env: childEnv, signal: opts.signal }, (d) => (stderr = (stderr + d).slice(-4000)));
    if (code !== 0) break;
  }
  clearInterval(ticker);
  const seconds = Math.round((Date.now() - started) / 1000);
  const binary = path.join(dir, tool.binaryName);
  if (code === 0 && !(await notExecutable(binary))) {
    progress(`built ${tool.label} in ${seconds} s`);
    await fs.rm(moduleDir, { recursive: true, force: true });
    return { dir, binary };
  }
  await fs.rm(dir, { recursive: true, force: true });
  opts.signal?.throwIfAborted();
  const tail = stderr.trim().split('\n').slice(-10).join('\n');
  progress(`go install failed after ${seconds} s (exit ${code}):\n${tail}`);
  return null;
}

/** One `go` command; its exit code (-1 when it could not run), stderr passed to `onStderr`. */
export async function runGo(
  go: string,
  args: string[],
  opts: { cwd?: string; env: NodeJS.ProcessEnv; signal?: AbortSignal },
  onStderr: (chunk: string) => void,
): Promise<number | null> {
  const child = spawn(go, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr.setEncoding('utf8').on('data', onStderr);
  const onAbort = () => child.kill('SIGTERM');
  opts.signal?.addEventListener('abort', onAbort);
  try {
    return await new Promise<number | null>((resolve) => {
      child.once('error', (err) => {
        onStderr(String(err));
        resolve(-1);
      });
      child.once('exit', (c) => resolve(c));
    });
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
  }
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
