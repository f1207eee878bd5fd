// The production worker (`temporal/worker-main.ts`, i.e. `npm run worker`) as a child process
// of the bench, so its CPU is measured apart and it can be SIGKILLed mid-soak like a crashed
// machine. It runs in its own process group: a kill takes its helpers (tsx's esbuild service)
// with it, as a crash would. Its Chromium (playwright starts the browser as a process group of
// its own) is killed with it by pid, as the same crash would take it. Ready = its /metrics answers, which worker-main
// serves only once the workers run (with LOG_LEVEL=warn it logs nothing on the way).
//
// CPU and metrics carry over incarnations: before a kill the bench reads the dying worker's CPU
// and /metrics one last time and adds them to the next one's, so a window spanning a restart
// still sees every poll counted once. Chromium's CPU (every browser tree under the worker, see
// proc.ts chromiumTrees) is a part of the worker's that is also kept on its own: a browser
// that exits (retired by the pool, crashed, or killed) keeps its last reading.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { chromiumTrees, descendantsCpuSeconds, isChromium, processTable, pssMiB, rssMiB, treePids, type ProcessRow } from './proc.ts';
import { PromSnapshot } from './prom.ts';
import { sleep } from './support.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const WATCHDOG = fileURLToPath(new URL('./worker-watchdog.mjs', import.meta.url));
const READY_TIMEOUT_MS = 180_000;
const OUTPUT_KEPT = 40;

export interface WorkerStart {
  /** Date.now() when the process was spawned and when its /metrics first answered. */
  spawnedAt: number;
  readyAt: number;
}

export class WorkerProcess {
  private child: ChildProcess | null = null;
  private retiredCpu = 0;
  /** Chromium: CPU of the browsers that are gone, and the last reading of each live one by pid. */
  private retiredChromium = 0;
  private readonly browsers = new Map<number, number>();
  private retiredMetrics = new PromSnapshot();
  private lastMetrics: PromSnapshot | null = null;
  private readonly tail: string[] = [];
  private killing = false;
  /** Exits the bench did not ask for: code and the last output lines. */
  readonly crashes: string[] = [];
  incarnations = 0;

  constructor(
    private env: NodeJS.ProcessEnv,
    readonly metricsUrl: string,
    private readonly onLine: (line: string) => void,
    /** Told each new process group (the janitor's safety net). */
    private readonly onSpawn: (pid: number) => void,
  ) {}

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  async start(): Promise<WorkerStart> {
    const spawnedAt = Date.now();
    const child = spawn(process.execPath, ['--import', 'tsx', '--import', WATCHDOG, 'temporal/worker-main.ts'], {
      cwd: ROOT,
      env: this.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    this.child = child;
    if (child.pid) this.onSpawn(child.pid);
    this.killing = false;
    this.incarnations++;
    for (const stream of [child.stdout!, child.stderr!]) {
      let rest = '';
      stream.setEncoding('utf8').on('data', (d: string) => {
        const lines = (rest + d).split('\n');
        rest = lines.pop()!;
        for (const l of lines) {
          this.tail.push(l);
          if (this.tail.length > OUTPUT_KEPT) this.tail.shift();
          this.onLine(l);
        }
      });
    }
    child.once('exit', (code, signal) => {
      if (!this.killing) this.crashes.push(`worker exited by itself (code ${code}, signal ${signal}); last output:\n${this.tail.join('\n')}`);
    });
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the worker exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${this.tail.join('\n')}`);
      const m = await this.scrape(1_000);
      if (m) {
        this.lastMetrics = m;
        return { spawnedAt, readyAt: Date.now() };
      }
      if (Date.now() > deadline) throw new Error(`the worker was not ready within ${READY_TIMEOUT_MS / 1000} s:\n${this.tail.join('\n')}`);
      await sleep(100);
    }
  }

  private async scrape(timeoutMs: number): Promise<PromSnapshot | null> {
    try {
      const res = await fetch(this.metricsUrl, { signal: AbortSignal.timeout(timeoutMs) });
      if (res.status !== 200) return null;
      return PromSnapshot.parse(await res.text());
    } catch {
      return null;
    }
  }

  /** CPU seconds of every incarnation so far (this one's process tree included). */
  cpuSeconds(table = processTable()): number {
    return this.retiredCpu + (this.running && this.child?.pid ? descendantsCpuSeconds(this.child.pid, table) : 0);
  }

  /**
   * CPU seconds of the worker's Chromium over every incarnation: a part of cpuSeconds(). Keeps
   * growing when a browser exits (its last reading is kept; the moment after it is the worker's).
   */
  chromiumCpuSeconds(table = processTable()): number {
    const live = this.running && this.child?.pid ? chromiumTrees(this.child.pid, table) : new Map<number, number>();
    for (const [pid, last] of this.browsers) {
      if (live.has(pid)) continue;
      this.retiredChromium += last;
      this.browsers.delete(pid);
    }
    let total = this.retiredChromium;
    for (const [pid, cpu] of live) {
      // Never below its last reading (a helper that leaves the tree unreaped takes its time along).
      const v = Math.max(cpu, this.browsers.get(pid) ?? 0);
      this.browsers.set(pid, v);
      total += v;
    }
    return total;
  }

  /** Resident memory of the worker's node process. */
  rssMiB(): number {
    return this.running && this.child?.pid ? rssMiB(this.child.pid) : 0;
  }

  /** Memory of the worker's Chromium processes: their proportional set sizes, summed. */
  chromiumMemoryMiB(table = processTable()): number {
    return this.chromiumPids(table).reduce((t, pid) => t + pssMiB(pid), 0);
  }

  /** Every Chromium process under the worker now. */
  chromiumPids(table: Map<number, ProcessRow> = processTable()): number[] {
    if (!this.running || !this.child?.pid) return [];
    return treePids(this.child.pid, table).filter((pid) => pid !== this.child!.pid && isChromium(table.get(pid)!.name));
  }

  /**
   * The metrics of every incarnation so far, counters summed; null when the worker is down and
   * never answered. When this incarnation does not answer in time, its last answer stands in.
   */
  async metrics(): Promise<PromSnapshot | null> {
    if (this.running) {
      const m = await this.scrape(5_000);
      if (m) this.lastMetrics = m;
    }
    return this.lastMetrics ? this.retiredMetrics.plus(this.lastMetrics) : this.retiredMetrics.series.size ? this.retiredMetrics : null;
  }

  /** SIGKILL, as a crash: the last CPU and metrics readings are kept for the totals first. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    const browsers = await this.retire();
    const exited = new Promise((r) => child.once('exit', r));
    signalGroup(child.pid!, 'SIGKILL');
    killChromium(browsers);
    await exited;
    child.stdin?.destroy();
  }

  /**
   * A worker with other settings (bench:proxies: direct, then through its proxies): this one
   * stopped as the cleanup stops it, its CPU and metrics kept for the totals first (as a kill
   * keeps them, so no window goes backwards), then `beforeStart` (the simulator set for the new
   * one), then a new one started with `env` over the old environment.
   */
  async restart(env: NodeJS.ProcessEnv, beforeStart?: () => Promise<void>): Promise<WorkerStart> {
    if (this.running) {
      await this.retire();
      await this.stop();
    }
    this.env = { ...this.env, ...env };
    await beforeStart?.();
    return this.start();
  }

  /** Keeps the running incarnation's last CPU and metrics readings for the totals; returns its Chromium's pids. */
  private async retire(): Promise<number[]> {
    await this.metrics();
    const table = processTable();
    this.retiredCpu = this.cpuSeconds(table);
    this.retiredChromium = this.chromiumCpuSeconds(table);
    this.browsers.clear();
    const browsers = this.chromiumPids(table);
    if (this.lastMetrics) this.retiredMetrics = this.retiredMetrics.plus(this.lastMetrics);
    this.lastMetrics = null;
    this.killing = true;
    return browsers;
  }

  /** For the cleanup: SIGTERM (worker-main stops its workers), SIGKILL after 10 s. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    this.killing = true;
    const browsers = this.chromiumPids();
    const exited = new Promise((r) => child.once('exit', r));
    signalGroup(child.pid!, 'SIGTERM');
    const timer = setTimeout(() => signalGroup(child.pid!, 'SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
    // Its helpers may outlive a graceful exit by a moment: the group goes too, and its Chromium.
    signalGroup(child.pid!, 'SIGKILL');
    killChromium(browsers);
    child.stdin?.destroy();
  }
}

/** SIGKILL to the worker's Chromium processes seen a moment ago, each only if it is still Chromium (a pid is not reused by then, but checked). */
function killChromium(pids: readonly number[]): void {
  const table = processTable();
  for (const pid of pids) {
    const p = table.get(pid);
    if (!p || !isChromium(p.name)) continue;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}
