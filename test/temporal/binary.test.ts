// How the Temporal CLI is found: TEMPORAL_CLI_PATH first, then the per-machine cache, then a
// one-time build under a lock (in a module of its own that raises the SQLite driver). The go command here is a fake script that "builds" a tiny
// binary, so the lock, the atomic rename and the GOTOOLCHAIN retry run for real without Go.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildKey } from '../../src/runtime/go-binary.ts';
import {
  FALLBACK_GO_TOOLCHAIN,
  TEMPORAL_CLI,
  TEMPORAL_CLI_MODULE,
  TEMPORAL_CLI_VERSION,
  TEMPORAL_SQLITE_DRIVER,
  cachedCliPath,
  resolveTemporalCli,
} from '../../temporal/binary.ts';

/** The cache's folder for this build: the CLI's version and the driver it is built with. */
const BUILD = buildKey(TEMPORAL_CLI);
/** A build's `go` commands: a module of its own, the CLI and the raised driver, the install. */
const BUILD_STEPS = 3;

const FAKE_GO = `#!/bin/sh
echo "\${GOTOOLCHAIN:-local} $GOBIN $*" >> "$CALLS"
if [ -n "$FAIL_UNLESS_TOOLCHAIN" ] && [ "$GOTOOLCHAIN" != "$FAIL_UNLESS_TOOLCHAIN" ]; then
  echo "go: cannot build with this toolchain" >&2; exit 1
fi
sleep "\${BUILD_SECONDS:-0}"
printf '#!/bin/sh\\necho fake temporal\\n' > "$GOBIN/temporal"
chmod +x "$GOBIN/temporal"
`;

let dir: string;
let env: NodeJS.ProcessEnv;
let go: string;
let messages: string[];
const onProgress = (m: string) => messages.push(m);

async function calls(): Promise<string[]> {
  const text = await fs.readFile(path.join(dir, 'calls'), 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean);
}

async function writeExecutable(file: string, text = '#!/bin/sh\necho hi\n', mode = 0o755): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  await fs.writeFile(file, text, { mode });
}

beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-cli-'));
  go = path.join(dir, 'fake-go');
  await writeExecutable(go, FAKE_GO);
  // No real toolchain reachable, whatever this machine has.
  env = { PATH: '/usr/bin:/bin', HOME: dir, GOROOT: path.join(dir, 'no-go'), TEMPORAL_CLI_CACHE: path.join(dir, 'cache'), CALLS: path.join(dir, 'calls') };
  messages = [];
});

afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

describe('resolveTemporalCli', () => {
  it('caches per CLI version and SQLite driver version, so a binary built with the old driver is not reused', () => {
    expect(BUILD).toBe(`${TEMPORAL_CLI_VERSION}+sqlite-${TEMPORAL_SQLITE_DRIVER.version}`);
    expect(cachedCliPath({ TEMPORAL_CLI_CACHE: '/c' })).toBe(`/c/tm-temporal/${BUILD}/temporal`);
    expect(cachedCliPath({ XDG_CACHE_HOME: '/x', HOME: '/h' })).toBe(`/x/tm-temporal/${BUILD}/temporal`);
    expect(cachedCliPath({ HOME: '/h' })).toBe(`/h/.cache/tm-temporal/${BUILD}/temporal`);
  });

  it('TEMPORAL_CLI_PATH wins over the cache and never builds', async () => {
    await writeExecutable(cachedCliPath(env));
    const given = path.join(dir, 'bin', 'temporal');
    await writeExecutable(given);
    expect(await resolveTemporalCli({ cliPath: given, env, goBinary: go, onProgress })).toBe(given);
    expect(await calls()).toEqual([]);
  });

  it('a TEMPORAL_CLI_PATH that does not exist or cannot run is a clear error', async () => {
    const missing = path.join(dir, 'nope', 'temporal');
    await expect(resolveTemporalCli({ cliPath: missing, env, goBinary: go })).rejects.toThrow(`TEMPORAL_CLI_PATH=${missing}: no such file`);
    const plain = path.join(dir, 'plain');
    await fs.writeFile(plain, 'not a program', { mode: 0o644 });
    // As root, access(X_OK) is still refused when no execute bit is set at all.
    await expect(resolveTemporalCli({ cliPath: plain, env, goBinary: go })).rejects.toThrow(/TEMPORAL_CLI_PATH=.*plain: not executable/);
    await expect(resolveTemporalCli({ cliPath: dir, env, goBinary: go })).rejects.toThrow(/not a file/);
    expect(await calls()).toEqual([]);
  });

  it('a cached binary is used as is', async () => {
    await writeExecutable(cachedCliPath(env));
    expect(await resolveTemporalCli({ env, goBinary: go, onProgress })).toBe(cachedCliPath(env));
    expect(await calls()).toEqual([]);
    expect(messages).toEqual([]);
  });

  it('builds once into the cache through a temp dir and a rename, reporting progress', async () => {
    const target = cachedCliPath(env);
    const result = await resolveTemporalCli({ env: { ...env, BUILD_SECONDS: '0.35' }, goBinary: go, onProgress, progressIntervalMs: 100 });
    expect(result).toBe(target);
    expect(spawnSync(target, { encoding: 'utf8' }).stdout).toBe('fake temporal\n');

    const steps = (await calls()).map((c) => c.split(' '));
    expect(steps.map(([_toolchain, _gobin, ...args]) => args)).toEqual([
      ['mod', 'init', 'ticket-market/go-tool-build'],
      ['get', `${TEMPORAL_CLI_MODULE}@${TEMPORAL_CLI_VERSION}`, `${TEMPORAL_SQLITE_DRIVER.module}@${TEMPORAL_SQLITE_DRIVER.version}`],
      ['install', TEMPORAL_CLI_MODULE],
    ]);
    expect(new Set(steps.map(([toolchain]) => toolchain))).toEqual(new Set(['local']));
    const gobin = steps[0]![1]!;
    expect(new Set(steps.map(([, bin]) => bin))).toEqual(new Set([gobin]));
    // Built beside the target (same filesystem, so the rename is atomic), then cleaned up.
    expect(path.dirname(gobin)).toBe(path.dirname(path.dirname(target)));
    await expect(fs.stat(gobin)).rejects.toThrow();
    expect((await fs.readdir(path.dirname(gobin))).sort()).toEqual([BUILD]);

    expect(messages[0]).toMatch(/building the Temporal CLI v1\.5\.1/);
    expect(messages.some((m) => /still building the Temporal CLI \(\d+ s elapsed\)/.test(m))).toBe(true);
    expect(messages.at(-1)).toMatch(/built the Temporal CLI in \d+ s/);

    // The next call is a cache hit.
    expect(await resolveTemporalCli({ env, goBinary: go })).toBe(target);
    expect(await calls()).toHaveLength(BUILD_STEPS);
  });

  it('concurrent callers build once: the others wait on the lock and get the same binary', async () => {
    const slow = { ...env, BUILD_SECONDS: '0.5' };
    const results = await Promise.all([1, 2, 3].map(() => resolveTemporalCli({ env: slow, goBinary: go, onProgress })));
    expect(results).toEqual([cachedCliPath(env), cachedCliPath(env), cachedCliPath(env)]);
    expect(await calls()).toHaveLength(BUILD_STEPS);
    expect(messages.filter((m) => /is building the Temporal CLI; waiting/.test(m))).toHaveLength(2);
  });

  it('a lock left by a dead process is taken over', async () => {
    const dead = spawnSync('/bin/sh', ['-c', 'echo $$'], { encoding: 'utf8' });
    const lock = path.join(path.dirname(path.dirname(cachedCliPath(env))), `${BUILD}.lock`);
    await fs.mkdir(lock, { recursive: true });
    await fs.writeFile(path.join(lock, 'owner'), dead.stdout.trim());
    // And a half-finished build of that process.
    await fs.mkdir(path.join(path.dirname(lock), `${BUILD}.build-old`));
    expect(await resolveTemporalCli({ env, goBinary: go })).toBe(cachedCliPath(env));
    expect(await fs.readdir(path.dirname(lock))).toEqual([BUILD]);
  });

  it(`a build that fails under the machine's Go is retried once with GOTOOLCHAIN=${FALLBACK_GO_TOOLCHAIN}`, async () => {
    const result = await resolveTemporalCli({ env: { ...env, FAIL_UNLESS_TOOLCHAIN: FALLBACK_GO_TOOLCHAIN }, goBinary: go, onProgress });
    expect(result).toBe(cachedCliPath(env));
    // The first build stops at its first failing step; the retry runs all of them.
    expect((await calls()).map((c) => c.split(' ')[0])).toEqual(['local', ...Array(BUILD_STEPS).fill(FALLBACK_GO_TOOLCHAIN)]);
    expect(messages.join('\n')).toMatch(/go install failed after \d+ s \(exit 1\):\ngo: cannot build with this toolchain/);
  });

  it("returns null (the SDK's download) when both builds fail, leaving no lock or temp dir", async () => {
    const result = await resolveTemporalCli({ env: { ...env, FAIL_UNLESS_TOOLCHAIN: 'go0.0' }, goBinary: go, onProgress });
    expect(result).toBeNull();
    expect(await calls()).toHaveLength(2);
    expect(messages.at(-1)).toMatch(/falling back to the SDK's download/);
    expect(await fs.readdir(path.join(env.TEMPORAL_CLI_CACHE!, 'tm-temporal'))).toEqual([]);
  });

  it('returns null when there is no Go toolchain at all', async () => {
    expect(await resolveTemporalCli({ env, onProgress })).toBeNull();
    expect(messages).toEqual([expect.stringMatching(/no Go toolchain/)]);
  });

  it('finds go on PATH', async () => {
    const bin = path.join(dir, 'gobin');
    await writeExecutable(path.join(bin, 'go'), FAKE_GO);
    expect(await resolveTemporalCli({ env: { ...env, PATH: `${bin}:${env.PATH}` } })).toBe(cachedCliPath(env));
    expect(await calls()).toHaveLength(BUILD_STEPS);
  });

  it('an abort kills the build and releases the lock', async () => {
    const controller = new AbortController();
    const pending = resolveTemporalCli({ env: { ...env, BUILD_SECONDS: '30' }, goBinary: go, signal: controller.signal });
    while ((await calls()).length === 0) await new Promise((r) => setTimeout(r, 20));
    controller.abort(new Error('stopping'));
    await expect(pending).rejects.toThrow('stopping');
    expect(await fs.readdir(path.join(env.TEMPORAL_CLI_CACHE!, 'tm-temporal'))).toEqual([]);
  });
});
