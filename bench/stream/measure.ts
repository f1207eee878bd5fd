// Measurement helpers shared by bench:stream's processes: a mergeable latency histogram,
// per-process CPU and RSS from /proc, per-core utilisation, and a clock comparable across the
// processes of one machine (ms since the epoch, sub-millisecond).
import fs from 'node:fs';

/** Wall-clock milliseconds with sub-ms resolution; the same base in every process. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * Latency histogram in microseconds: 10 µs buckets below 1 ms, then 5% wide buckets up to
 * about two minutes. Plain arrays, so processes send them over IPC and the parent adds them up.
 */
export class Histogram {
  static readonly LINEAR = 100;
  static readonly SIZE = 100 + 250;
  counts: number[] = new Array<number>(Histogram.SIZE).fill(0);
  total = 0;

  static bucket(us: number): number {
    if (us < 1_000) return Math.max(0, Math.floor(us / 10));
    return Math.min(Histogram.SIZE - 1, Histogram.LINEAR + Math.floor(Math.log(us / 1_000) / Math.log(1.05)));
  }

  static upper(bucket: number): number {
    if (bucket < Histogram.LINEAR) return (bucket + 1) * 10;
    return 1_000 * 1.05 ** (bucket - Histogram.LINEAR + 1);
  }

  record(us: number): void {
    this.counts[Histogram.bucket(us)]!++;
    this.total++;
  }

  add(counts: readonly number[]): void {
    for (let i = 0; i < counts.length; i++) {
      this.counts[i]! += counts[i]!;
      this.total += counts[i]!;
    }
  }

  /** The q-quantile in milliseconds (upper edge of its bucket). */
  quantileMs(q: number): number {
    if (this.total === 0) return NaN;
    const target = Math.ceil(q * this.total);
    let seen = 0;
    for (let i = 0; i < this.counts.length; i++) {
      seen += this.counts[i]!;
      if (seen >= target) return Histogram.upper(i) / 1_000;
    }
    return Histogram.upper(this.counts.length - 1) / 1_000;
  }
}

/** utime + stime of a process, in seconds of CPU. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // clock ticks, USER_HZ = 100
  } catch {
    return 0;
  }
}

export function rssMiB(pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

/** Busy, softirq (the kernel's network processing) and total jiffies of every core, from /proc/stat. */
export function coreTimes(): { busy: number; soft: number; total: number }[] {
  return fs
    .readFileSync('/proc/stat', 'utf8')
    .split('\n')
    .filter((l) => /^cpu\d+ /.test(l))
    .map((l) => {
      const v = l.split(/\s+/).slice(1).map(Number);
      const idle = v[3]! + v[4]!;
      const total = v.reduce((a, b) => a + b, 0);
      return { busy: total - idle, soft: v[6]!, total };
    });
}

/** Utilisation of each core between two coreTimes() samples, in percent: busy, and softirq within it. */
export function coreUse(before: ReturnType<typeof coreTimes>, after: ReturnType<typeof coreTimes>): { busy: number; soft: number }[] {
  return after.map((a, i) => {
    const b = before[i]!;
    const span = a.total - b.total || 1;
    return { busy: Math.round(((a.busy - b.busy) / span) * 100), soft: Math.round(((a.soft - b.soft) / span) * 100) };
  });
}
