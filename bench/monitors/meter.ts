// Readings of everything the targets are computed from, taken at the boundaries of each phase
// (and, lighter, for the progress lines), and the windows between two readings: CPU seconds of
// each process the run started (the worker's Chromium apart from the worker; the loopback
// proxies' process, when the run has one, apart from everything), PostgreSQL's for
// this run, the machine's, the busiest other processes, polls and requests served by the
// simulator, the worker's metrics and the notifications written.
import type { Pool } from '../../db/pool.ts';
import type { PgCpu, PgGroup } from './pg-cpu.ts';
import { SERVICE_PG_GROUPS } from './pg-cpu.ts';
import { allProcesses, descendantsCpuSeconds, machineCpu, processTable } from './proc.ts';
import { PromSnapshot } from './prom.ts';
import type { WorkerProcess } from './worker-process.ts';

export type Source = 'worker' | 'chromium' | 'temporal' | 'postgres' | 'simulator' | 'proxies' | 'bench';
/** The processes every run has, as the reports list them. */
export const SOURCES: readonly Source[] = ['worker', 'chromium', 'temporal', 'postgres', 'simulator', 'bench'];
/** With the loopback proxies' process (BENCH_PROXIES, bench:proxies): reports list it only then. */
export const SOURCES_WITH_PROXIES: readonly Source[] = ['worker', 'chromium', 'temporal', 'postgres', 'simulator', 'proxies', 'bench'];
/**
 * What the per-poll and per-notification targets count: the worker with its Chromium,
 * Temporal and PostgreSQL; not the simulator, not the bench.
 */
export const SERVICE_SOURCES: readonly Source[] = ['worker', 'chromium', 'temporal', 'postgres'];
export const SOURCE_NAMES: Record<Source, string> = {
  worker: 'worker (child process, with its esbuild; without its Chromium)',
  chromium: "Chromium (the worker's browser processes)",
  temporal: 'Temporal server (the dev server, or go.temporal.io/server with BENCH_TEMPORAL=server)',
  postgres: "PostgreSQL (this run's backends + background processes)",
  simulator: 'simulator (child process; not in the targets)',
  proxies: 'loopback proxies (child process; not in the targets)',
  bench: 'this process (gateway, stream node, WebSocket clients, bench)',
};

export interface Reading {
  /** performance.now() and Date.now() */
  at: number;
  wall: number;
  cpu: Record<Source, number>;
  pg: Record<PgGroup, number>;
  machine: { busy: number; steal: number; total: number };
  /** Every process's CPU (full readings only), and the pids that are ours. */
  processes: Map<number, { name: string; cpu: number }> | null;
  ours: Set<number>;
  /** Polls served by the simulator (requests to the platform's poll route), and all its requests. */
  simHits: number;
  simRequests: number;
  /** pf_01's protection: sessions issued and arm requests refused so far (null: the simulator has none). */
  simSessions: { issued: number; refused: number } | null;
  metrics: PromSnapshot | null;
  notifications: number;
}

export interface Window {
  label: string;
  seconds: number;
  /** performance.now() spans the window covers (several for a combined window). */
  spans: [number, number][];
  cpu: Record<Source, number>;
  pg: Record<PgGroup, number>;
  machine: { busy: number; steal: number; total: number };
  /** CPU seconds of the busiest processes that are not ours, by command line. */
  others: Map<string, number>;
  polls: number;
  /** Requests the simulator served for the platform's events (pf_01: both arms, and the page when a poll renders it). */
  requests: number;
  /** pf_01 sessions the simulator issued, and arm requests it refused for want of one (null: not known). */
  sessions: { issued: number; refused: number } | null;
  metrics: PromSnapshot | null;
  notifications: number;
}

export interface MeterDeps {
  worker: WorkerProcess;
  temporalPid: number | null;
  simPid: number;
  simHitsUrl: string;
  /** The loopback proxies' process (null: the run has none; its CPU reads 0). */
  proxiesPid?: number | null;
  pg: PgCpu | null;
  /** The bench's own pool (application_name bench-monitors), for counting notifications. */
  pool: Pool;
}

const PG_ZERO: Record<PgGroup, number> = { worker: 0, stream: 0, gateway: 0, autovacuum: 0, background: 0, bench: 0, other: 0 };

/** What the simulator's wall in front of the bench's platform did (its /hits `walls`). */
export interface WallFigures {
  on: boolean;
  passed: number;
  refused: Record<string, number>;
  lastRefusal: { reason: string; detail: string; at: string } | null;
}

/** Every site's walls together (simulator-main.ts), with each site that refused any. */
export interface WallsAll {
  on: boolean;
  passed: number;
  refused: number;
  lastRefusal: WallFigures['lastRefusal'];
  refusingSites: { site: string; refused: Record<string, number>; cookiesIssued: number; recent: { reason: string; detail: string; at: string }[] }[];
}

export class Meter {
  constructor(private readonly deps: MeterDeps) {}

  /** Polls served so far (one request to the platform's poll route each). */
  async simHits(): Promise<number> {
    return (await this.simCounts()).total;
  }

  async simCounts(): Promise<{ total: number; requests: number; sessions: { issued: number; refused: number } | null; walls?: WallFigures }> {
    const res = await fetch(this.deps.simHitsUrl);
    return (await res.json()) as { total: number; requests: number; sessions: { issued: number; refused: number } | null; walls?: WallFigures };
  }

  /** Every site's walls together so far: requests let through and refused (simulator-main.ts). */
  async wallsAll(): Promise<WallsAll | null> {
    const counts = (await this.simCounts()) as { wallsAll?: WallsAll };
    return counts.wallsAll ?? null;
  }

  /** The platform's bot wall so far: requests it let through and refused, by reason (simulator-main.ts). */
  async walls(): Promise<WallFigures | null> {
    return (await this.simCounts()).walls ?? null;
  }

  /** Requests served per event key of the platform (the unit of the control API's PUT answer). */
  async simHitsByKey(): Promise<Record<string, number>> {
    const res = await fetch(`${this.deps.simHitsUrl}?keys=1`);
    return ((await res.json()) as { byKey: Record<string, number> }).byKey;
  }

  private counted = { rows: 0, upTo: 0 };
  private counting: Promise<number> | null = null;

  /**
   * Notifications written so far, counted on from the last id already counted (the log's ids
   * become visible in order, so nothing below it can still appear): an index range, not a scan
   * of a log that grows by a hundred thousand rows in a soak.
   */
  notifications(): Promise<number> {
    return (this.counting ??= (async () => {
      const { rows } = await this.deps.pool.query<{ n: string; m: string | null }>(
        `SELECT count(*) FILTER (WHERE kind = 'notification') AS n, max(id) AS m FROM notifications WHERE id > $1`,
        [this.counted.upTo],
      );
      this.counted.rows += Number(rows[0]!.n);
      if (rows[0]!.m !== null) this.counted.upTo = Number(rows[0]!.m);
      return this.counted.rows;
    })().finally(() => {
      this.counting = null;
    }));
  }

  /** `full`: also every process on the machine (a scan of /proc with command lines: boundaries only). */
  async read(full = true): Promise<Reading> {
    const { worker, pg } = this.deps;
    const [sim, metrics, notifications] = await Promise.all([this.simCounts(), worker.metrics(), this.notifications(), pg?.sample()]);
    const table = processTable();
    const chromium = worker.chromiumCpuSeconds(table);
    const pgTotals = pg?.totals() ?? { ...PG_ZERO };
    const ours = new Set<number>();
    const addTree = (root: number | null) => {
      if (!root || !table.has(root)) return;
      const stack = [root];
      while (stack.length) {
        const pid = stack.pop()!;
        ours.add(pid);
        for (const [child, p] of table) if (p.ppid === pid) stack.push(child);
      }
    };
    if (full) {
      for (const root of [worker.pid, this.deps.temporalPid, this.deps.simPid, this.deps.proxiesPid ?? null, process.pid]) addTree(root);
      for (const pid of pg?.pids() ?? []) ours.add(pid);
    }
    return {
      at: performance.now(),
      wall: Date.now(),
      cpu: {
        // The worker's whole tree, less its Chromium (counted on its own).
        worker: worker.cpuSeconds(table) - chromium,
        chromium,
        temporal: this.deps.temporalPid ? descendantsCpuSeconds(this.deps.temporalPid, table) : NaN,
        postgres: pg ? SERVICE_PG_GROUPS.reduce((s, g) => s + pgTotals[g], 0) : NaN,
        simulator: descendantsCpuSeconds(this.deps.simPid, table),
        proxies: this.deps.proxiesPid ? descendantsCpuSeconds(this.deps.proxiesPid, table) : 0,
        // Its own threads only: its children (simulator, worker, Temporal, proxies) are counted apart.
        bench: table.get(process.pid)?.cpu ?? 0,
      },
      pg: pgTotals,
      machine: machineCpu(),
      processes: full ? allProcesses() : null,
      ours,
      simHits: sim.total,
      simRequests: sim.requests,
      simSessions: sim.sessions ? { issued: sim.sessions.issued, refused: sim.sessions.refused } : null,
      metrics,
      notifications,
    };
  }
}

export function between(label: string, a: Reading, b: Reading): Window {
  const cpu = Object.fromEntries(SOURCES_WITH_PROXIES.map((s) => [s, b.cpu[s] - a.cpu[s]])) as Record<Source, number>;
  const pg = Object.fromEntries(Object.keys(PG_ZERO).map((g) => [g, b.pg[g as PgGroup] - a.pg[g as PgGroup]])) as Record<PgGroup, number>;
  const others = new Map<string, number>();
  if (a.processes && b.processes) {
    for (const [pid, p] of b.processes) {
      // A pg backend of this run is measured in `postgres`; everything we started, in its source.
      if (b.ours.has(pid) || a.ours.has(pid)) continue;
      const used = p.cpu - (a.processes.get(pid)?.cpu ?? 0);
      if (used > 0) others.set(p.name, (others.get(p.name) ?? 0) + used);
    }
  }
  return {
    label,
    seconds: (b.at - a.at) / 1000,
    spans: [[a.at, b.at]],
    cpu,
    pg,
    machine: { busy: b.machine.busy - a.machine.busy, steal: b.machine.steal - a.machine.steal, total: b.machine.total - a.machine.total },
    others,
    polls: b.simHits - a.simHits,
    requests: b.simRequests - a.simRequests,
    sessions: a.simSessions && b.simSessions ? { issued: b.simSessions.issued - a.simSessions.issued, refused: b.simSessions.refused - a.simSessions.refused } : null,
    metrics: b.metrics && a.metrics ? b.metrics.minus(a.metrics) : b.metrics,
    notifications: b.notifications - a.notifications,
  };
}

/** Several windows as one (their sums), e.g. the soak before the kill and after the recovery. */
export function combine(label: string, ws: readonly Window[]): Window | null {
  if (ws.length === 0) return null;
  if (ws.length === 1) return { ...ws[0]!, label };
  const sum = <K extends string>(pick: (w: Window) => Record<K, number>) => {
    const out = {} as Record<K, number>;
    for (const w of ws) for (const [k, v] of Object.entries(pick(w)) as [K, number][]) out[k] = (out[k] ?? 0) + v;
    return out;
  };
  const others = new Map<string, number>();
  for (const w of ws) for (const [k, v] of w.others) others.set(k, (others.get(k) ?? 0) + v);
  const metrics = ws.every((w) => w.metrics) ? ws.slice(1).reduce((m, w) => m.plus(w.metrics!), ws[0]!.metrics!) : null;
  return {
    label,
    seconds: ws.reduce((s, w) => s + w.seconds, 0),
    spans: ws.flatMap((w) => w.spans),
    cpu: sum((w) => w.cpu),
    pg: sum((w) => w.pg),
    machine: sum((w) => w.machine),
    others,
    polls: ws.reduce((s, w) => s + w.polls, 0),
    requests: ws.reduce((s, w) => s + w.requests, 0),
    sessions: ws.every((w) => w.sessions)
      ? { issued: ws.reduce((s, w) => s + w.sessions!.issued, 0), refused: ws.reduce((s, w) => s + w.sessions!.refused, 0) }
      : null,
    metrics,
    notifications: ws.reduce((s, w) => s + w.notifications, 0),
  };
}

/** CPU of the machine's cores in the window: how many cores, and the busy and steal shares in % of one core. */
export function machineShare(w: Window): { cores: number; busyPercent: number; stealPercent: number } {
  const cores = w.machine.total > 0 ? Math.max(1, Math.round(w.machine.total / w.seconds)) : 1;
  const share = (x: number) => (w.machine.total > 0 ? (100 * cores * x) / w.machine.total : NaN);
  return { cores, busyPercent: share(w.machine.busy), stealPercent: share(w.machine.steal) };
}

/** % of one core a source used in the window. */
export function percent(w: Window, s: Source): number {
  return (100 * w.cpu[s]) / w.seconds;
}

export function serviceCpu(w: Window): number {
  return SERVICE_SOURCES.reduce((t, s) => t + w.cpu[s], 0);
}

export { PromSnapshot };
