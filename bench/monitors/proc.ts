// CPU and memory of the processes the monitors bench runs, read from /proc (Linux): this
// process (gateway, worker, relay and the bench itself), the Temporal dev server, the simulator
// child, the PostgreSQL server (all its processes) and the machine as a whole, so a window's
// figures say where the CPU went.
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

export function parentPid(pid: number): number | null {
  const f = statFields(pid);
  return f ? Number(f[1]) : null;
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

function childrenOf(ppid: number): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    if (parentPid(Number(name)) === ppid) out.push(Number(name));
  }
  return out;
}

/**
 * All CPU seconds of a process tree one level deep: the parent's own, what its reaped children
 * used (so backends that exit between two readings are not lost), and its live children's.
 * Monotonic, so the difference of two readings is the tree's CPU in between. Used for the
 * PostgreSQL postmaster, whose children are the backends and background workers.
 */
export function treeCpuSeconds(pid: number): number {
  return cpuSeconds(pid, true) + childrenOf(pid).reduce((s, c) => s + cpuSeconds(c), 0);
}

/** Proportional set size in MiB: shared pages split between their users (PostgreSQL's shared buffers). */
export function pssMiB(pid: number): number {
  try {
    const text = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    return Number(/^Pss:\s+(\d+)/m.exec(text)?.[1] ?? 0) / 1024;
  } catch {
    return rssMiB(pid);
  }
}

/** PSS of a process and its children, so shared memory is counted once. */
export function treePssMiB(pid: number): number {
  return pssMiB(pid) + childrenOf(pid).reduce((s, c) => s + pssMiB(c), 0);
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

export interface Watched {
  name: string;
  cpu(): number;
  rss(): number;
}

export interface CpuReading {
  at: number;
  cpu: Record<string, number>;
  machine: { busy: number; steal: number; total: number };
  processes: Map<number, { name: string; cpu: number }>;
}

/** `withProcesses`: also every process's CPU (a scan of /proc: for window boundaries, not progress lines). */
export function readCpu(watched: readonly Watched[], withProcesses = true): CpuReading {
  return {
    at: performance.now(),
    cpu: Object.fromEntries(watched.map((w) => [w.name, w.cpu()])),
    machine: machineCpu(),
    processes: withProcesses ? allProcesses() : new Map(),
  };
}

export interface CpuWindow {
  seconds: number;
  /** Percent of one core, per watched process. */
  percent: Record<string, number>;
  /** Percent of one core used by the whole machine (steal apart), and the machine's cores. */
  machinePercent: number;
  stealPercent: number;
  cores: number;
  /** The busiest processes in between, by percent of one core (`exclude`: pids already accounted for). */
  others(exclude: (pid: number) => boolean, n?: number): { name: string; percent: number }[];
}

export function cpuBetween(a: CpuReading, b: CpuReading): CpuWindow {
  const seconds = (b.at - a.at) / 1000;
  const percent: Record<string, number> = {};
  for (const k of Object.keys(b.cpu)) percent[k] = (100 * (b.cpu[k]! - (a.cpu[k] ?? 0))) / seconds;
  const total = b.machine.total - a.machine.total;
  const cores = total > 0 ? Math.round(total / seconds) : 1;
  const share = (x: number) => (total > 0 ? (100 * cores * x) / total : 0);
  return {
    seconds,
    percent,
    machinePercent: share(b.machine.busy - a.machine.busy),
    stealPercent: share(b.machine.steal - a.machine.steal),
    cores,
    others: (exclude, n = 3) =>
      [...b.processes.entries()]
        .filter(([pid]) => !exclude(pid))
        // A process that started in between counts from zero.
        .map(([pid, p]) => ({ name: p.name, percent: (100 * (p.cpu - (a.processes.get(pid)?.cpu ?? 0))) / seconds }))
        .filter((p) => p.percent >= 1)
        .sort((x, y) => y.percent - x.percent)
        .slice(0, n),
  };
}
