// CPU and memory of the processes the monitors bench runs, read from /proc (Linux): the worker
// child (with its helpers: esbuild, chromium), the Temporal dev server, the simulator child,
// PostgreSQL, this process (gateway, stream node, clients, the bench) and the machine as a
// whole, so a window's figures say where the CPU went.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

let ticksPerSecond = 100;
try {
  ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
} catch {
  // getconf missing: Linux's usual 100
}

/** Fields of /proc/<pid>/stat after the command name (which may contain spaces). */
function statFields(pid: number | 'self'): string[] | null {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
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

/** Every process's parent and CPU seconds (its own, and its reaped children's), from one scan of /proc. */
export function processTable(): Map<number, { ppid: number; cpu: number; reaped: number }> {
  const out = new Map<number, { ppid: number; cpu: number; reaped: number }>();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const f = statFields(Number(name));
    if (!f) continue;
    out.set(Number(name), { ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / ticksPerSecond, reaped: (Number(f[13]) + Number(f[14])) / ticksPerSecond });
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
  if (!table.has(root)) return 0;
  const children = new Map<number, number[]>();
  for (const [pid, p] of table) {
    const list = children.get(p.ppid);
    if (list) list.push(pid);
    else children.set(p.ppid, [pid]);
  }
  let total = 0;
  const stack = [root];
  while (stack.length) {
    const pid = stack.pop()!;
    const p = table.get(pid);
    if (!p) continue;
    total += p.cpu + p.reaped;
    stack.push(...(children.get(pid) ?? []));
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
