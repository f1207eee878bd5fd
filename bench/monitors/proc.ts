// CPU and memory of the processes the monitors bench runs, read from /proc (Linux): the worker
// child (with its helpers: esbuild, and its Chromium, which is also measured on its own), the
// Temporal dev server, the simulator child, PostgreSQL, this process (gateway, stream node,
// clients, the bench) and the machine as a whole, so a window's figures say where the CPU went.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

let ticksPerSecond = 100;
try {
  ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
} catch {
  // getconf missing: Linux's usual 100
}

/** Fields of /proc/<pid>/stat after the command name (which may contain spaces), and that name. */
function statFields(pid: number | 'self'): string[] | null {
  return statLine(pid)?.fields ?? null;
}

function statLine(pid: number | 'self'): { name: string; fields: string[] } | null {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = text.lastIndexOf(')');
    return { name: text.slice(text.indexOf('(') + 1, close), fields: text.slice(close + 2).split(' ') };
  } catch {
    return null;
  }
}

/** CPU seconds a process has used (user + system, all its threads); 0 if it is gone. */
export function cpuSeconds(pid: number | 'self', withReapedChildren = false): number {
  const f = statFields(pid);
  if (!f) return 0;
  // After the name: [0] state, [1] ppid, ... utime is field 14 of the line, i.e. f[11].
  let ticks = Number(f[11]) + Number(f[12]);
  if (withReapedChildren) ticks += Number(f[13]) + Number(f[14]);
  return ticks / ticksPerSecond;
}

/** Resident memory in MiB (0 if the process is gone). */
export function rssMiB(pid: number | 'self'): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

export interface ProcessRow {
  ppid: number;
  /** CPU seconds of its own, and of its reaped children. */
  cpu: number;
  reaped: number;
  /** The kernel's short name (comm, at most 15 characters), e.g. `node`, `chromium`. */
  name: string;
}

/**
 * Proportional resident memory in MiB (shared pages divided among the processes sharing them, so
 * a sum over a browser's processes is not inflated); the RSS where the kernel does not say.
 */
export function pssMiB(pid: number): number {
  try {
    const rollup = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const pss = /^Pss:\s+(\d+)/m.exec(rollup)?.[1];
    if (pss !== undefined) return Number(pss) / 1024;
  } catch {
    // no smaps_rollup (old kernel, or gone): the RSS below
  }
  return rssMiB(pid);
}

/** Every process's parent, name and CPU seconds, from one scan of /proc. */
export function processTable(): Map<number, ProcessRow> {
  const out = new Map<number, ProcessRow>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const line = statLine(Number(entry));
    if (!line) continue;
    const f = line.fields;
    out.set(Number(entry), { ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / ticksPerSecond, reaped: (Number(f[13]) + Number(f[14])) / ticksPerSecond, name: line.name });
  }
  return out;
}

/** Every pid of a process tree, the root first (empty if the root is gone). */
export function treePids(root: number, table: Map<number, ProcessRow> = processTable()): number[] {
  if (!table.has(root)) return [];
  const children = new Map<number, number[]>();
  for (const [pid, p] of table) {
    const list = children.get(p.ppid);
    if (list) list.push(pid);
    else children.set(p.ppid, [pid]);
  }
  const out: number[] = [];
  const stack = [root];
  while (stack.length) {
    const pid = stack.pop()!;
    out.push(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  return out;
}

/** Debian's chromium, and the names its helpers run under (chrome_crashpad_handler, a headless shell). */
export function isChromium(name: string): boolean {
  return /^(chromium|chrome|headless_shell)/i.test(name);
}

/**
 * The Chromium processes under `root` (the worker): each browser whose parent is not itself a
 * Chromium process, with the CPU seconds of its whole tree (renderers, zygotes and GPU process,
 * their reaped children too), by the browser's pid. Every process of such a tree is Chromium's:
 * the browser starts nothing else.
 */
export function chromiumTrees(root: number, table: Map<number, ProcessRow> = processTable()): Map<number, number> {
  const out = new Map<number, number>();
  for (const pid of treePids(root, table)) {
    const p = table.get(pid)!;
    if (pid === root || !isChromium(p.name)) continue;
    if (isChromium(table.get(p.ppid)?.name ?? '')) continue;
    out.set(pid, descendantsCpuSeconds(pid, table));
  }
  return out;
}

/**
 * CPU seconds of a whole process tree, every level deep: each live process's own and what its
 * reaped children used. Monotonic while the root lives (a child that exits moves into its
 * parent's reaped time), so the difference of two readings is the tree's CPU in between. Used
 * for the worker (node, its esbuild service and its chromium) and the Temporal server.
 */
export function descendantsCpuSeconds(root: number, table = processTable()): number {
  let total = 0;
  for (const pid of treePids(root, table)) {
    const p = table.get(pid)!;
    total += p.cpu + p.reaped;
  }
  return total;
}

/**
 * Machine-wide CPU seconds, summed over cores: busy (work done in this VM), steal (taken by the
 * hypervisor: not ours to explain) and total.
 */
export function machineCpu(): { busy: number; steal: number; total: number } {
  const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest is already counted in user)
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = v;
  const busy = user + nice + system + irq + softirq;
  return { busy: busy / ticksPerSecond, steal: steal / ticksPerSecond, total: (busy + steal + idle + iowait) / ticksPerSecond };
}

/** CPU seconds of every process now, by pid (with a short name), to find who else was busy. */
export function allProcesses(): Map<number, { name: string; cpu: number }> {
  const out = new Map<number, { name: string; cpu: number }>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    const cpu = cpuSeconds(pid);
    let name = '';
    try {
      name = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      // Kernel threads have no command line.
      if (!name) name = `[${fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim()}]`;
    } catch {
      continue;
    }
    out.set(pid, { name: name.length > 70 ? `${name.slice(0, 70)}...` : name, cpu });
  }
  return out;
}
