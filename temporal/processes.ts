// Whether a pid still runs, and whose child it is: the Go tools' build lock
// (src/runtime/go-binary.ts), the dev server's pid file (dev-server.ts) and the embedded
// PostgreSQL's (db/embedded.ts) decide from it whether what a process left behind may be taken
// over.
import { readFileSync, readdirSync } from 'node:fs';

/**
 * True while `pid` runs. A zombie counts as gone: an orphan re-parented to an init that never
 * reaps (as in some containers) would otherwise look alive forever.
 */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  let state: string;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return true; // no /proc (not Linux): kill(0) is all we know
  }
  if (state !== 'Z') return true;
  // The main thread of a multi-threaded process (a Go server) turns zombie first; its other
  // threads, and its open sockets, live on until they have all exited.
  try {
    return readdirSync(`/proc/${pid}/task`).length > 1;
  } catch {
    return false;
  }
}

/**
 * The process's state letter from /proc (R, S, D, T for stopped, Z), its parent and its process
 * group, or null when it is gone or unknown.
 */
export function processState(pid: number): { state: string; ppid: number; pgrp: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After the command's closing parenthesis: state, ppid, pgrp, ...
    const [state, ppid, pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return state ? { state, ppid: Number(ppid), pgrp: Number(pgrp) } : null;
  } catch {
    return null;
  }
}

/** The process's command line, '' when unknown (gone, or no /proc). */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}
