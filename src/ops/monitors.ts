// The monitors as an operator sees them: the logic behind `npm run ops -- monitors:*`. Targets
// the platforms are refusing (429/403, backed off until their Retry-After), failing, or retired
// (their event answered not-found too long) come from monitor_target_status, written by the shard
// pollers when a target starts or stops failing;
// one item's monitor is inspected through its workflow (an `inspect` signal, then its `status`
// query); the shard pollers are found through the Platform search attribute.
import type { Client } from '@temporalio/client';
import type { Db } from '../../db/connection.ts';
import { inspectSignal, monitorStatusQuery, shardStatusQuery, type MonitorStatus, type ShardPollerStatus } from '../../workflows/monitor-messages.ts';
import { monitorWorkflowId } from '../../workflows/watchlist-monitor.ts';
import { readPlatforms } from '../monitors/platform-incidents.ts';

export interface TroubledTarget {
  target: string;
  platform: string;
  shard: number;
  kind: 'blocked' | 'failing' | 'retired';
  failures: number;
  blocked_until: string | null;
  last_error: string | null;
  since: string;
  /** Since when its event has answered not-found (the retirement clock); null when it has not. */
  not_found_since: string | null;
  /** When it was retired (no longer polled); null when it is not. */
  retired_at: string | null;
  /** Items watching it now. */
  items: number;
}

/** Targets being backed off (blocked by their platform, or failing) or retired: blocked first, retired last, oldest first. */
export async function troubledTargets(db: Db, opts: { platform?: string } = {}): Promise<TroubledTarget[]> {
  const rows: Record<string, string | number | Date | null>[] = await db('monitor_target_status as s')
    .join('monitor_members as m', 'm.target', 's.target')
    .modify((q) => {
      if (opts.platform) q.where('s.platform', opts.platform);
    })
    .groupBy('s.target')
    .orderByRaw("min(s.kind) = 'blocked' DESC, min(s.kind) = 'retired', min(s.since)")
    .select(
      's.target',
      db.raw('min(s.platform) AS platform'),
      db.raw('min(s.shard) AS shard'),
      db.raw('min(s.kind) AS kind'),
      db.raw('max(s.failures) AS failures'),
      db.raw('max(s.blocked_until) AS blocked_until'),
      db.raw('min(s.last_error) AS last_error'),
      db.raw('min(s.since) AS since'),
      db.raw('min(s.not_found_since) AS not_found_since'),
      db.raw('min(s.retired_at) AS retired_at'),
      db.raw('count(*) AS items'),
    );
  return rows.map((r) => ({
    target: String(r.target),
    platform: String(r.platform),
    shard: Number(r.shard),
    kind: r.kind as TroubledTarget['kind'],
    failures: Number(r.failures),
    blocked_until: r.blocked_until ? new Date(r.blocked_until).toISOString() : null,
    last_error: r.last_error === null ? null : String(r.last_error),
    since: new Date(r.since as Date).toISOString(),
    not_found_since: r.not_found_since ? new Date(r.not_found_since).toISOString() : null,
    retired_at: r.retired_at ? new Date(r.retired_at).toISOString() : null,
    items: Number(r.items),
  }));
}

/** Asks the item's monitor to read its last notification and baseline, then returns its status. */
export async function showMonitor(client: Client, itemId: number, timeoutMs = 10_000): Promise<MonitorStatus> {
  const handle = client.workflow.getHandle(monitorWorkflowId(itemId));
  const before = (await handle.query(monitorStatusQuery)).inspection?.at ?? null;
  await handle.signal(inspectSignal);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await handle.query(monitorStatusQuery);
    if (status.inspection && status.inspection.at !== before) return status;
    if (Date.now() > deadline) throw new Error(`the monitor of item ${itemId} did not answer its inspection within ${timeoutMs} ms (is a worker running?)`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** How long monitors:pollers waits for one poller's worker to answer its query. */
const QUERY_WAIT_MS = 3_000;

export type PollerListing = { workflow_id: string } & (ShardPollerStatus | { unanswered: string });

/**
 * Every running shard poller (of one platform, one task queue), with its status. A poller whose
 * worker is down cannot answer its query: it is listed with the reason instead, since finding
 * those is much of why an operator asks.
 */
export interface IncidentListing {
  id: number;
  platform: string;
  started_at: string;
  ended_at: string | null;
  /** When it opened: watched targets, not found, blocked. */
  opened_with: { targets: number; not_found: number; blocked: number };
  peak_failing: number;
  items_told: number;
  /** Open ones: how the platform stands now. */
  now: { targets: number; not_found: number; blocked: number } | null;
}

/** Platform incidents (src/monitors/platform-incidents.ts): the open ones first, then the last 20 closed. */
export async function platformIncidents(db: Db, opts: { platform?: string; windowMs: number }): Promise<IncidentListing[]> {
  const rows: { id: string; platform: string; started_at: Date; ended_at: Date | null; targets: number; not_found: number; blocked: number; peak_failing: number; items_told: number }[] =
    await db('monitor_platform_incidents')
      .modify((q) => {
        if (opts.platform) q.where({ platform: opts.platform });
      })
      .orderByRaw('ended_at IS NULL DESC, started_at DESC')
      .limit(20 + 64)
      .select('*');
  const open = rows.filter((r) => r.ended_at === null);
  const standing = open.length ? new Map((await readPlatforms(db, opts.windowMs)).map((r) => [r.platform, r])) : new Map();
  return [...open, ...rows.filter((r) => r.ended_at !== null).slice(0, 20)].map((r) => {
    const now = r.ended_at === null ? standing.get(r.platform) : undefined;
    return {
      id: Number(r.id),
      platform: r.platform,
      started_at: r.started_at.toISOString(),
      ended_at: r.ended_at?.toISOString() ?? null,
      opened_with: { targets: r.targets, not_found: r.not_found, blocked: r.blocked },
      peak_failing: r.peak_failing,
      items_told: r.items_told,
      now: now ? { targets: now.targets, not_found: now.notFound, blocked: now.blocked } : null,
    };
  });
}

export async function listPollers(client: Client, opts: { platform?: string; taskQueue?: string } = {}): Promise<PollerListing[]> {
  const quote = (v: string) => `'${v.replace(/'/g, '')}'`;
  let query = "WorkflowType = 'shardPoller' AND ExecutionStatus = 'Running'";
  if (opts.platform) query += ` AND Platform = ${quote(opts.platform)}`;
  if (opts.taskQueue) query += ` AND TaskQueue = ${quote(opts.taskQueue)}`;
  const out: PollerListing[] = [];
  for await (const w of client.workflow.list({ query })) {
    const deadline = Date.now() + QUERY_WAIT_MS;
    try {
      // A query waits for a worker; an operator listing pollers should not wait on a dead one.
      const status = await client.withDeadline(deadline, () => client.workflow.getHandle(w.workflowId).query(shardStatusQuery));
      out.push({ workflow_id: w.workflowId, ...status });
    } catch (err) {
      const raw = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
      // The deadline surfaces as DEADLINE_EXCEEDED or, on a loaded machine, as "CANCELLED: Call
      // cancelled": either way what the operator needs is that no worker answered in time.
      const timedOut = Date.now() >= deadline - 100 || /DEADLINE_EXCEEDED|CANCELLED/.test(raw);
      out.push({ workflow_id: w.workflowId, unanswered: timedOut ? `no worker answered within ${QUERY_WAIT_MS / 1000} s (${raw})` : raw });
    }
  }
  return out.sort((a, b) => a.workflow_id.localeCompare(b.workflow_id));
}
