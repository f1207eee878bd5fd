// Who the scrapers' Chromium runs as (issue 38, src/scrapers/browser-user.ts): started by a root
// worker, every process of the browser runs as the browser user, with Chromium's own sandbox
// where it starts (it does on this machine: user namespaces), and that user cannot read the
// worker's environment, where DATABASE_URL is. The processes are read from /proc, not taken from
// the launcher's word.
import { execFile } from 'node:child_process';
import { readdir, readFile, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserEnvironment } from '../../src/scrapers/browser-env.ts';
import { CHROMIUM_ARGS, createBrowserPages } from '../../src/scrapers/browser-pages.ts';
import { browserLaunch, type BrowserLaunch } from '../../src/scrapers/browser-user.ts';

const run = promisify(execFile);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const root = process.getuid?.() === 0;

let server: Server;
let url: string;
beforeAll(async () => {
  server = createServer((_req, res) => res.end('<html><body><p id="x">rendered</p></body></html>'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

interface Proc {
  pid: number;
  ppid: number;
  uids: number[];
  args: string[];
}

async function allProcesses(): Promise<Proc[]> {
  const out: Proc[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = (await readFile(`/proc/${entry}/cmdline`, 'utf8')).split('\0').filter(Boolean);
      const status = await readFile(`/proc/${entry}/status`, 'utf8');
      const uids = /^Uid:\s+(\d+)\s+(\d+)/m.exec(status)!.slice(1, 3).map(Number);
      const ppid = Number(/^PPid:\s+(\d+)/m.exec(status)![1]);
      out.push({ pid: Number(entry), ppid, uids, args });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The browser whose command line names `profile`, and every process under it (zygotes, renderers, utilities). */
async function browserTree(profile: string): Promise<Proc[]> {
  const all = await allProcesses();
  const tree = all.filter((p) => p.args.some((a) => a.includes(profile)) && !p.args.some((a) => a.startsWith('--type=')));
  for (let grew = true; grew; ) {
    grew = false;
    for (const p of all) {
      if (!tree.includes(p) && tree.some((t) => t.pid === p.ppid)) {
        tree.push(p);
        grew = true;
      }
    }
  }
  return tree;
}

describe.runIf(root)('Chromium started by a root worker', { timeout: 120_000 }, () => {
  let how: BrowserLaunch;
  beforeAll(async () => {
    how = await browserLaunch(CHROMIUM, 'nobody');
  }, 60_000);
  afterAll(() => how?.remove());

  it('runs every process as the browser user, sandboxed, and renders a page', async () => {
    const { stdout } = await run('id', ['-u', 'nobody']);
    expect(how.user).toMatchObject({ name: 'nobody', uid: Number(stdout.trim()) });
    // This machine has user namespaces: the sandbox starts, so it must be on.
    expect(how.sandboxed).toBe(true);
    const profile = await mkdtemp(join(tmpdir(), 'browser-user-test-'));
    const home = await mkdtemp(join(tmpdir(), 'browser-user-home-'));
    await how.handOver(home);
    const args = CHROMIUM_ARGS.filter((a) => a !== '--no-sandbox');
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: how.executablePath,
      args,
      // Playwright adds --no-sandbox itself unless told otherwise.
      chromiumSandbox: true,
      env: { ...browserEnvironment(), HOME: home },
      headless: true,
    });
    try {
      const page = await context.newPage();
      await page.goto(url);
      expect(await page.textContent('#x')).toBe('rendered');
      const procs = await browserTree(profile);
      // The browser and its renderers, zygotes and utilities: all of them the browser user's.
      expect(procs.length, JSON.stringify(procs.map((p) => p.args[0]))).toBeGreaterThanOrEqual(3);
      // A forked child rewrites its title into one string: read the command line whole.
      const line = (p: Proc) => p.args.join(' ');
      expect(procs.some((p) => line(p).includes('--type=renderer')), JSON.stringify(procs.map(line))).toBe(true);
      for (const p of procs) {
        expect(p.uids, line(p)).toEqual([how.user!.uid, how.user!.uid]);
        expect(line(p)).not.toMatch(/--no-sandbox/);
      }
    } finally {
      await context.close();
      await rm(profile, { recursive: true, force: true });
      await rm(home, { recursive: true, force: true });
    }
  });

  it("the scrapers' own browser pool (createBrowserPages, as the worker starts it) runs as the browser user, sandboxed", async () => {
    const pages = createBrowserPages({ pages: 1, chromiumPath: CHROMIUM, timeoutMs: 30_000 });
    try {
      expect(await pages.withPage(url, (page) => page.textContent('#x'))).toBe('rendered');
      // Every Chromium process under this one: the launcher execs into the browser, which forks the rest.
      const all = await allProcesses();
      const mine = new Set([process.pid]);
      for (let grew = true; grew; ) {
        grew = false;
        for (const p of all) {
          if (mine.has(p.pid) || !mine.has(p.ppid)) continue;
          mine.add(p.pid);
          grew = true;
        }
      }
      const browsers = all.filter((p) => mine.has(p.pid) && p.args.join(' ').includes('chromium'));
      expect(browsers.length).toBeGreaterThanOrEqual(3);
      for (const p of browsers) {
        expect(p.uids, p.args.join(' ')).toEqual([how.user!.uid, how.user!.uid]);
        expect(p.args.join(' ')).not.toMatch(/--no-sandbox/);
      }
    } finally {
      await pages.close();
    }
  });

  it("the browser user cannot read the worker's environment (DATABASE_URL lives there)", async () => {
    // The refusal checked on the check itself: the same read as root succeeds, as the browser user it is refused.
    await expect(readFile(`/proc/${process.pid}/environ`)).resolves.toBeInstanceOf(Buffer);
    const asUser = run('setpriv', [`--reuid=${how.user!.uid}`, `--regid=${how.user!.gid}`, '--clear-groups', '--', 'cat', `/proc/${process.pid}/environ`]);
    await expect(asUser).rejects.toThrow(/Permission denied/);
  });

  it('`root` (SCRAPE_BROWSER_USER=root) keeps the old way: Chromium itself, as root', async () => {
    const old = await browserLaunch(CHROMIUM, null);
    expect(old).toMatchObject({ executablePath: CHROMIUM, user: null, sandboxed: false });
  });

  it('an unknown user is refused with a message naming the setting', async () => {
    await expect(browserLaunch(CHROMIUM, 'no-such-user-38')).rejects.toThrow(/SCRAPE_BROWSER_USER: no user named "no-such-user-38"/);
  });
});
