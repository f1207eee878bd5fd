// Where the embedded PostgreSQL keeps its cluster for a DATA_DIR: `DATA_DIR/postgres`, as it
// always has. Run as root, the server runs as user postgres; when that user cannot reach
// DATA_DIR (a checkout in /root, a DATA_DIR under a `mktemp -d`), the cluster lives under
// SHARED_ROOT instead and `DATA_DIR/postgres` is a symbolic link to it. The link is what every
// later start and the admin CLI follow, so they find the same cluster, and removing DATA_DIR
// still starts afresh. No permission of the user's own directories is changed.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { ensureSharedDirs, firstBlocked, serverUser, SERVER_USER, SHARED_ROOT, type OsUser } from './postgres-user.ts';

/** A DATA_DIR the server's user cannot reach: what the messages below are about. */
interface Unreachable {
  dataDir: string;
  /** The directory on the way that the server's user may not search. */
  blocked: string;
  user: OsUser | null;
  sharedRoot: string;
}

/**
 * The directory to run the cluster of `dataDir` in: one the server's user can reach. Creates
 * DATA_DIR, and when relocating, the link and the shared directory; says why once, when it
 * relocates. Throws a message naming DATA_DIR and the fix where no such directory can be had.
 */
export async function clusterLocation(dataDir: string, say: (msg: string) => void, sharedRoot = SHARED_ROOT): Promise<string> {
  const link = path.join(dataDir, 'postgres');
  await fs.mkdir(dataDir, { recursive: true });
  // Not root: the server runs as we do and reaches what we reach.
  if (process.getuid?.() !== 0) return link;
  const user = await serverUser();
  const existing = await fs.lstat(link).catch(() => null);
  if (existing?.isSymbolicLink()) return followLink(dataDir, link, user);
  const blocked = await firstBlocked(dataDir, user);
  if (!blocked) return link;
  const place: Unreachable = { dataDir, blocked, user, sharedRoot };
  if (!existing) {
    const dir = await sharedClusterDir(place);
    await fs.mkdir(dir, { mode: 0o700 });
    try {
      await fs.symlink(dir, link);
    } catch (err) {
      await fs.rmdir(dir);
      // Another start (the admin CLI, a second `npm start`) linked its own first: use that one.
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return clusterLocation(dataDir, say, sharedRoot);
      throw err;
    }
    say(`user ${SERVER_USER} cannot reach DATA_DIR (${blocked} is private to it): its PostgreSQL cluster lives in ${dir}, linked from ${link}`);
    return dir;
  }
  // A server still running from there (its parents closed after it started) keeps its cluster;
  // we join it. Moving a live cluster is not ours to do.
  if (await serverRunningIn(link)) return link;
  return moveToShared(place, link, say);
}

/** A link made by an earlier start (or by the operator): its target, if the server can reach it. */
async function followLink(dataDir: string, link: string, user: OsUser | null): Promise<string> {
  const target = path.resolve(dataDir, await fs.readlink(link));
  // A dangling link (its cluster removed): initdb makes a new cluster there.
  const real = await fs.realpath(target).catch(() => null);
  const blocked = await firstBlocked(real ?? path.dirname(target), user).catch(() => path.dirname(target));
  if (blocked) {
    throw new Error(
      `DATA_DIR=${dataDir}: ${link} links to ${target}, which user ${SERVER_USER} (the embedded PostgreSQL's user when run as root) cannot reach (${blocked}). ` +
        `Fix: point the link at a directory that user can reach, or remove it to let the service place the cluster itself.`,
    );
  }
  return real ?? target;
}

/**
 * An existing `DATA_DIR/postgres` the server can no longer reach (it could when it was made:
 * the checkout moved into /root, a parent's mode changed) is moved, data and all, and linked.
 * A rename: atomic, and the cluster keeps its owner and modes.
 */
async function moveToShared(place: Unreachable, link: string, say: (msg: string) => void): Promise<string> {
  const dir = await sharedClusterDir(place);
  try {
    await fs.rename(link, dir);
  } catch (err) {
    throw cannotWork(
      place,
      `its existing cluster ${link} could not be moved to ${dir} (${(err as Error).message})`,
      `move it yourself and link it: mv ${link} ${dir} && ln -s ${dir} ${link}`,
    );
  }
  await fs.symlink(dir, link);
  say(`user ${SERVER_USER} cannot reach DATA_DIR (${place.blocked} is private to it): moved its PostgreSQL cluster from ${link} to ${dir}, linked from ${link}`);
  return dir;
}

/** A new directory for the cluster under the shared root, named after DATA_DIR for whoever looks there. */
async function sharedClusterDir(place: Unreachable): Promise<string> {
  const base = path.join(place.sharedRoot, 'clusters');
  try {
    await ensureSharedDirs([place.sharedRoot, base]);
  } catch (err) {
    throw cannotWork(place, `no directory it can reach could be made in ${base} (${(err as Error).message})`);
  }
  const blocked = await firstBlocked(base, place.user);
  if (blocked) throw cannotWork(place, `nor can it reach ${base} (${blocked} is private to it)`);
  const real = await fs.realpath(place.dataDir);
  const name = real.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[-.]+|-+$/g, '').slice(-60) || 'data';
  // A fresh suffix: a DATA_DIR removed and made again at the same path starts afresh.
  return path.join(base, `${name}-${randomBytes(4).toString('hex')}`);
}

async function serverRunningIn(dir: string): Promise<boolean> {
  const pid = Number((await fs.readFile(path.join(dir, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n')[0]);
  if (!(pid > 0)) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function cannotWork(place: Unreachable, why: string, fix?: string): Error {
  return new Error(
    `DATA_DIR=${place.dataDir}: the embedded PostgreSQL runs as user ${SERVER_USER} when started as root, which cannot reach that directory ` +
      `(${place.blocked} is private to it), and ${why}. Fix: ${fix ? `${fix}; or ` : ''}set DATA_DIR to a directory whose parents user ${SERVER_USER} ` +
      `can search (e.g. DATA_DIR=/srv/ticket-market/data), or set DATABASE_URL to a PostgreSQL server of your own.`,
  );
}
