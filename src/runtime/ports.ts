// Ports for processes started on ports nobody configured (the test run's Temporal server, the
// start tests' services, the benchmarks' and the rehearsal's servers), and the message that says
// who holds a configured port that is taken.
//
// Why not "listen on 0, close, hand the number on": the kernel hands out port-0 binds and the
// source ports of outgoing connections from the same ephemeral range, so between the close and
// the child's bind any connection, or another process's port-0 probe, may take the number (issue
// 35: a Temporal server that then panicked, a gateway that never started). A reserved port is
// instead taken from outside that range, where the kernel never assigns one by itself, and held
// by a lock file that every process of every run on this machine consults before it picks: two
// callers can never be handed the same port while the first holder lives.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { commandLine, isRunning } from '../../temporal/processes.ts';

/** Where the locks live: shared by every run on the machine, whichever checkout it runs from. */
export const RESERVATIONS_DIR = process.env.TM_PORT_RESERVATIONS_DIR || path.join(os.tmpdir(), 'tm-port-reservations');

/** The lowest port we hand out: below it sit the well-known and most registered services. */
const LOWEST = 15_000;
const HIGHEST = 65_535;
const ATTEMPTS = 200;

/** The kernel's ephemeral range (net.ipv4.ip_local_port_range), Linux's default when unreadable. */
export function ephemeralRange(): [number, number] {
  try {
    const [lo, hi] = fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(lo) && Number.isInteger(hi) && lo! <= hi!) return [lo!, hi!];
  } catch {
    // not Linux
  }
  return [32_768, 60_999];
}

/** The ports a reservation may take: [LOWEST, HIGHEST] less the ephemeral range. */
export function reservableRanges(ephemeral: [number, number] = ephemeralRange()): [number, number][] {
  const [lo, hi] = ephemeral;
  const ranges: [number, number][] = [];
  if (lo - 1 >= LOWEST) ranges.push([LOWEST, lo - 1]);
  if (hi + 1 <= HIGHEST) ranges.push([Math.max(hi + 1, LOWEST), HIGHEST]);
  if (ranges.length === 0) throw new Error(`no port outside the ephemeral range ${lo}-${hi} is left to reserve`);
  return ranges;
}

function randomPort(ranges: [number, number][]): number {
  const sizes = ranges.map(([a, b]) => b - a + 1);
  let pick = Math.floor(Math.random() * sizes.reduce((s, n) => s + n, 0));
  for (let i = 0; i < ranges.length; i++) {
    if (pick < sizes[i]!) return ranges[i]![0] + pick;
    pick -= sizes[i]!;
  }
  throw new Error('unreachable');
}

const held = new Set<number>();
let exitHookInstalled = false;

function lockFile(port: number): string {
  return path.join(RESERVATIONS_DIR, String(port));
}

/** Takes the lock of `port` for this process; false when a live process holds it. */
function takeLock(port: number): boolean {
  const file = lockFile(port);
  try {
    fs.writeFileSync(file, String(process.pid), { flag: 'wx', mode: 0o644 });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  // A holder killed without its exit hook (SIGKILL) leaves its lock behind. It is moved aside
  // atomically before being judged, so that two processes clearing the same stale lock can't
  // both go on to take the port: only one rename finds the file.
  const owner = Number(readQuietly(file));
  if (Number.isInteger(owner) && owner > 0 && isRunning(owner)) return false;
  const aside = `${file}.stale.${process.pid}`;
  try {
    fs.renameSync(file, aside);
  } catch {
    return false; // someone else cleared it first
  }
  const moved = Number(readQuietly(aside));
  if (Number.isInteger(moved) && moved > 0 && isRunning(moved)) {
    // It was a fresh lock taken between our read and our rename: give it back.
    try {
      fs.linkSync(aside, file);
    } catch {
      // the port was taken again meanwhile; the newer holder keeps it
    }
    fs.rmSync(aside, { force: true });
    return false;
  }
  fs.rmSync(aside, { force: true });
  try {
    fs.writeFileSync(file, String(process.pid), { flag: 'wx', mode: 0o644 });
    return true;
  } catch {
    return false;
  }
}

function readQuietly(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/**
 * Whether something accepts a TCP connection at host:port now (a server up, a proxy not cut): the
 * counterpart of canBind. A connection neither accepted nor refused within `timeoutMs` is false.
 */
export function acceptsConnections(port: number, host = '127.0.0.1', timeoutMs = 2_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.setTimeout(timeoutMs);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** Binds the port on every address and lets it go: true when nothing listens on it now. */
export function canBind(port: number, host = '0.0.0.0'): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(true)));
  });
}

/**
 * A port that nothing listens on, that the kernel will not hand to anyone by itself, and that no
 * other caller of this function on the machine gets while this process lives (or until
 * releasePort). For a child process to bind; a server in this process should listen on port 0.
 * `highest` caps it for a program that cannot store a larger one.
 */
export async function reservePort(opts: { highest?: number } = {}): Promise<number> {
  const highest = opts.highest ?? HIGHEST;
  const ranges = reservableRanges()
    .map(([a, b]): [number, number] => [a, Math.min(b, highest)])
    .filter(([a, b]) => a <= b);
  if (ranges.length === 0) throw new Error(`no reservable port at or below ${highest}`);
  for (let i = 0; i < ATTEMPTS; i++) {
    const port = randomPort(ranges);
    if (await tryReserve(port)) return port;
  }
  throw new Error(`no free port to reserve after ${ATTEMPTS} tries (locks in ${RESERVATIONS_DIR})`);
}

/** Reserves this very port if no live process holds its lock and nothing listens on it. */
export async function tryReserve(port: number): Promise<boolean> {
  fs.mkdirSync(RESERVATIONS_DIR, { recursive: true, mode: 0o1777 });
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      for (const p of held) fs.rmSync(lockFile(p), { force: true });
    });
  }
  if (held.has(port) || !takeLock(port)) return false;
  held.add(port);
  // Another program may listen there (a service with a fixed port in this range).
  if (await canBind(port)) return true;
  releasePort(port);
  return false;
}

/** Gives a reserved port back before the process exits (a long bench that starts many servers). */
export function releasePort(port: number): void {
  if (!held.delete(port)) return;
  fs.rmSync(lockFile(port), { force: true });
}

/** Reservations held by this process (tests). */
export function heldPorts(): ReadonlySet<number> {
  return held;
}

/**
 * Who listens on a TCP port of this machine, as "pid N (command line)", or null when no listener
 * is found (gone meanwhile, or one that we may not inspect). Read from /proc: the socket's inode
 * in /proc/net/tcp{,6}, then the process holding that inode.
 */
export function portOwner(port: number): string | null {
  const inodes = new Set<string>();
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readQuietly(table).split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      // local_address is ADDR:PORT in hex; state 0A is LISTEN
      if (cols.length > 9 && cols[1]!.endsWith(`:${hexPort}`) && cols[3] === '0A') inodes.add(cols[9]!);
    }
  }
  if (inodes.size === 0) return null;
  let pids: string[];
  try {
    pids = fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return null;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const m = /^socket:\[(\d+)\]$/.exec(target);
      if (m && inodes.has(m[1]!)) {
        const cmd = commandLine(Number(pid)).trim();
        return `pid ${pid}${cmd ? ` (${cmd.length > 120 ? `${cmd.slice(0, 117)}...` : cmd})` : ''}`;
      }
    }
  }
  return null;
}

/** The one message for a configured port that is taken: which port, which setting, held by whom. */
export function portInUseMessage(port: number, variable: string): string {
  const owner = portOwner(port);
  return `port ${port} (${variable}) is already in use${owner ? ` by ${owner}` : ''}; set ${variable} to a free port`;
}

/** Rejects with portInUseMessage when `port` cannot be bound on `host`. */
export function assertPortFree(port: number, variable: string, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => {
      reject(err.code === 'EADDRINUSE' ? namedListenError(err, port, variable) : new Error(`cannot bind port ${port} (${variable}): ${err.message}`));
    });
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

/** A listen error as the user should read it: a taken port named with its setting and holder. */
export function namedListenError(err: unknown, port: number, variable: string): unknown {
  return (err as NodeJS.ErrnoException | null)?.code === 'EADDRINUSE' ? new Error(portInUseMessage(port, variable)) : err;
}
