// Who the scrapers' Chromium runs as, and whether it is sandboxed (issue 38: a compromised
// renderer must not reach what the worker holds). The browser renders third-party pages. Run as
// the worker's own user, with --no-sandbox (Chromium refuses its sandbox to root), a renderer
// exploit would run as that user and could read the worker's environment (/proc/<pid>/environ:
// DATABASE_URL) and memory, and so sign webhooks or write to any customer's stream.
//
// So, when the worker runs as root, Chromium is started through a small launcher that drops to
// SCRAPE_BROWSER_USER (default `nobody`: no database credentials, no files of the worker's)
// with setpriv, after handing it the profile Playwright made. As a non-root user it keeps
// Chromium's own sandbox (user namespaces); the sandbox is probed once (a headless page, about a
// second) and only where it cannot start is --no-sandbox added, with a warning: the separate user
// then still stands between the page and the worker's secrets. A worker that is not root runs
// Chromium as itself, sandboxed when the probe passes.
import { execFile } from 'node:child_process';
import { chmod, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface BrowserUser {
  name: string;
  uid: number;
  gid: number;
}

export interface BrowserLaunch {
  /** What Playwright starts: the launcher when dropping to another user, else Chromium itself. */
  executablePath: string;
  /** The user Chromium runs as; null when it is the worker's own. */
  user: BrowserUser | null;
  /** Chromium's own sandbox is on (no --no-sandbox). */
  sandboxed: boolean;
  /** Gives a directory Chromium uses (its HOME) to its user. */
  handOver(dir: string): Promise<void>;
  /** Removes the launcher. */
  remove(): Promise<void>;
}

/** How long the sandbox probe may take before it counts as failed. */
const PROBE_MS = 20_000;

async function lookUp(name: string): Promise<BrowserUser> {
  const { stdout } = await run('getent', ['passwd', name]).catch(() => ({ stdout: '' }));
  const fields = stdout.trim().split(':');
  if (fields.length < 4) throw new Error(`SCRAPE_BROWSER_USER: no user named ${JSON.stringify(name)} on this machine (getent passwd)`);
  return { name, uid: Number(fields[2]), gid: Number(fields[3]) };
}

function launcherScript(chromiumPath: string, user: BrowserUser): string {
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  return [
    '#!/bin/sh',
    `# Made by src/scrapers/browser-user.ts: Chromium as ${user.name}, never as root.`,
    '# Playwright makes the profile as root: it is handed to the browser user first.',
    'for arg in "$@"; do',
    '  case "$arg" in',
    `    --user-data-dir=*) chown -R ${user.uid}:${user.gid} "\${arg#--user-data-dir=}" ;;`,
    '  esac',
    'done',
    `exec setpriv --reuid=${user.uid} --regid=${user.gid} --clear-groups -- ${quote(chromiumPath)} "$@"`,
    '',
  ].join('\n');
}

/** Whether Chromium starts with its sandbox, run through `executable`, in a profile its user owns. */
async function sandboxStarts(executable: string, user: BrowserUser | null): Promise<boolean> {
  const dir = await mkdtemp(join(tmpdir(), 'scrape-browser-probe-'));
  try {
    if (user) await chown(dir, user.uid, user.gid);
    const { stdout } = await run(
      executable,
      ['--headless', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', `--user-data-dir=${dir}/profile`, '--dump-dom', 'data:text/html,<p>sandboxed</p>'],
      { timeout: PROBE_MS, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir } },
    );
    return stdout.includes('<p>sandboxed</p>');
  } catch {
    return false;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Decides how Chromium is started: as `userName` when this process is root (`null`: as root, the
 * old way, for a machine where no other user can run it), sandboxed where the sandbox starts.
 */
export async function browserLaunch(chromiumPath: string, userName: string | null): Promise<BrowserLaunch> {
  const root = process.getuid?.() === 0;
  if (!root || userName === null) {
    const sandboxed = !root && (await sandboxStarts(chromiumPath, null));
    return { executablePath: chromiumPath, user: null, sandboxed, handOver: async () => {}, remove: async () => {} };
  }
  const user = await lookUp(userName);
  // Root-owned and not writable by the browser user: it cannot change what it is started with.
  const dir = await mkdtemp(join(tmpdir(), 'scrape-browser-launcher-'));
  await chmod(dir, 0o755);
  const executablePath = join(dir, 'chromium');
  await writeFile(executablePath, launcherScript(chromiumPath, user), { mode: 0o755 });
  const sandboxed = await sandboxStarts(executablePath, user);
  return {
    executablePath,
    user,
    sandboxed,
    handOver: async (home) => {
      await run('chown', ['-R', `${user.uid}:${user.gid}`, home]);
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
