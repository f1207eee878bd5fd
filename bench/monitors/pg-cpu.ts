// PostgreSQL's CPU for this run only. The server is shared (DATABASE_URL: other people's tests
// run on it too), so the bench does not take the whole postmaster tree: once a second it lists
// the backends of the run's scratch database (pg_stat_activity) and the server's background
// processes (checkpointer, WAL writer...: shared, but on a quiet machine they work for this run's
// writes) and reads each one's CPU from /proc. A backend is counted from its first sight (from
// zero if it started after the bench began watching), and up to its last sight when it exits,
// so at most a second of a short-lived backend's CPU is lost. Groups by application_name say
// whose statements the CPU served. Needs PostgreSQL on this machine (its pids in /proc).
import type { Pool } from '../../db/pool.ts';
import { cpuSeconds } from './proc.ts';

export type PgGroup = 'worker' | 'stream' | 'gateway' | 'autovacuum' | 'background' | 'bench' | 'other';

/** The groups that count as "PostgreSQL" in the per-poll and per-notification figures. */
export const SERVICE_PG_GROUPS: readonly PgGroup[] = ['worker', 'stream', 'gateway', 'autovacuum', 'background', 'other'];

function groupOf(app: string, backendType: string, datname: string | null): PgGroup {
  if (backendType === 'autovacuum worker') return 'autovacuum';
  if (datname === null) return 'background';
  if (app === 'bench-monitors') return 'bench';
  // The worker's pools and listeners: its database pool, the two relays' cursors, the pollers' LISTEN.
  if (app === 'worker' || app === 'member-watch' || app.startsWith('monitor-members') || app.startsWith('watchlist-monitors')) return 'worker';
  if (app.startsWith('stream')) return 'stream';
  if (app.startsWith('gateway') || app.startsWith('ticket-market')) return 'gateway';
  return 'other';
}

interface Tracked {
  group: PgGroup;
  first: number;
  last: number;
}

export class PgCpu {
  private readonly tracked = new Map<number, Tracked>();
  private readonly retired: Record<PgGroup, number> = { worker: 0, stream: 0, gateway: 0, autovacuum: 0, background: 0, bench: 0, other: 0 };
  private timer: NodeJS.Timeout | null = null;
  private sampling: Promise<void> | null = null;
  private started = false;
  /**
   * Once a second, this run's sessions that were not idle, by group, state and wait event
   * ("worker active", "gateway active (Lock:advisory)"...): what the service's connections were
   * doing, or waiting for, when a phase ran slow.
   */
  private readonly sessions: [number, Record<string, number>][] = [];
  available = true;

  constructor(private readonly pool: Pool) {}

  /** Starts sampling once a second; false when PostgreSQL's processes are not visible here. */
  async start(): Promise<boolean> {
    await this.sample();
    const { rows } = await this.pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    this.available = cpuSeconds(Number(rows[0]!.pid)) > 0 || this.tracked.size > 0;
    if (!this.available) return false;
    this.timer = setInterval(() => void this.sample().catch(() => {}), 1_000);
    return true;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** One look at the run's backends (concurrent callers share it). */
  sample(): Promise<void> {
    return (this.sampling ??= this.look().finally(() => {
      this.sampling = null;
    }));
  }

  private async look(): Promise<void> {
    const { rows } = await this.pool.query<{ pid: number; app: string; type: string; datname: string | null; state: string | null; wait: string | null }>(
      `SELECT pid, coalesce(application_name, '') AS app, coalesce(backend_type, '') AS type, datname, state,
              wait_event_type || ':' || wait_event AS wait
         FROM pg_stat_activity WHERE datname = current_database() OR datname IS NULL`,
    );
    const seen = new Set<number>();
    const busy: Record<string, number> = {};
    for (const r of rows) {
      const pid = Number(r.pid);
      const cpu = cpuSeconds(pid);
      if (cpu === 0 && !this.tracked.has(pid)) continue; // not visible, or not started yet
      seen.add(pid);
      const group = groupOf(r.app, r.type, r.datname);
      if (r.datname !== null && group !== 'bench' && r.state !== null && r.state !== 'idle') {
        const key = `${group} ${r.state}${r.wait ? ` (${r.wait})` : ''}`;
        busy[key] = (busy[key] ?? 0) + 1;
      }
      const t = this.tracked.get(pid);
      if (t) t.last = Math.max(t.last, cpu);
      else this.tracked.set(pid, { group, first: this.started ? 0 : cpu, last: cpu });
    }
    for (const [pid, t] of this.tracked) {
      if (seen.has(pid)) continue;
      this.retired[t.group] += t.last - t.first;
      this.tracked.delete(pid);
    }
    if (this.started) this.sessions.push([performance.now(), busy]);
    this.started = true;
  }

  /**
   * Sessions that were not idle during the given spans: the mean number per state and wait
   * (most first), and how often the worker had `poolMax` of them busy at once (its pool full).
   */
  sessionsDuring(spans: readonly [number, number][], poolMax: number): { samples: number; means: [string, number][]; workerMean: number; workerMax: number; workerFullShare: number } {
    const picked = this.sessions.filter(([at]) => spans.some(([a, b]) => at >= a && at <= b)).map(([, s]) => s);
    const totals = new Map<string, number>();
    const worker: number[] = [];
    for (const s of picked) {
      let w = 0;
      for (const [k, n] of Object.entries(s)) {
        totals.set(k, (totals.get(k) ?? 0) + n);
        if (k.startsWith('worker ')) w += n;
      }
      worker.push(w);
    }
    const n = picked.length;
    return {
      samples: n,
      means: [...totals.entries()].map(([k, t]) => [k, t / n] as [string, number]).sort((a, b) => b[1] - a[1]),
      workerMean: n ? worker.reduce((a, b) => a + b, 0) / n : NaN,
      workerMax: n ? Math.max(...worker) : NaN,
      workerFullShare: n ? worker.filter((w) => w >= poolMax).length / n : NaN,
    };
  }

  /** The PostgreSQL processes being measured (so they are not counted again as "other work"). */
  pids(): number[] {
    return [...this.tracked.keys()];
  }

  /** CPU seconds by group since the bench began watching (monotonic). */
  totals(): Record<PgGroup, number> {
    const out = { ...this.retired };
    for (const t of this.tracked.values()) out[t.group] += t.last - t.first;
    return out;
  }
}
