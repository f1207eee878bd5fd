// The watchlist monitors' activities. pollTarget (scrapes queue) scrapes a target and stores a
// snapshot row only when the content changed. evaluateChange (monitors queue) diffs two stored
// snapshots with an item's rules and appends the notifications to the durable log, each keyed
// by (item, from, to, section, change type) so a retried or replayed evaluation writes nothing
// twice. joinTarget / leaveTarget subscribe a monitor to its target's shared poller, starting
// the poller when it is not running (signal-with-start is a client call, hence an activity).
import { createHash } from 'node:crypto';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Db } from '../db/connection.ts';
import type { Logger } from '../src/logger.ts';
import { detectChanges, type MonitorConfig } from '../src/monitors/changes.ts';
import { snapshotHash, toSnapshot, type TargetSnapshot } from '../src/monitors/snapshot.ts';
import { appendToLog, type LogEntry } from '../src/notifications/log.ts';
import { targetKey, type EventRef } from '../src/platform/event-ref.ts';
import type { Scrapers } from '../src/scrapers/index.ts';
import { subscribeSignal, unsubscribeSignal } from '../workflows/monitor-messages.ts';
import type { targetPoller } from '../workflows/target-poller.ts';
import { scrapeInActivity } from './scrape.ts';

export interface EvaluateInput {
  itemId: number;
  accountId: number;
  item: { website: string; event: string; region: string };
  config: MonitorConfig;
  fromSnapshotId: number;
  toSnapshotId: number;
}

export interface MonitorActivities {
  pollTarget(input: { target: EventRef }): Promise<{ snapshotId: number; changed: boolean }>;
  evaluateChange(input: EvaluateInput): Promise<{ notified: number; muted: boolean; missing: boolean }>;
  joinTarget(input: { target: EventRef; itemId: number; workflowId: string }): Promise<void>;
  leaveTarget(input: { target: EventRef; itemId: number }): Promise<void>;
}

export interface MonitorActivityOptions {
  db: Db;
  client: Client;
  scrapers: Scrapers;
  log: Logger;
  monitorQueue: string;
  scrapeQueue: string;
  intervalMs: number;
  jitterRatio: number;
  /** Snapshots kept per target (monitors diff the newest few; older ones only take space). */
  keepSnapshots?: number;
  /** Pollers' polls per run before continue-as-new (the workflow's default when unset). */
  pollsPerRun?: number;
}

export function pollerWorkflowId(target: EventRef): string {
  return `target:${targetKey(target)}`;
}

function dedupeKey(parts: (string | number)[]): string {
  // Hashed: section names are the platform's and may be long; the unique index wants short keys.
  return `n:${createHash('sha256').update(JSON.stringify(parts)).digest('base64url')}`;
}

export function createMonitorActivities(opts: MonitorActivityOptions): MonitorActivities {
  const { db, client, scrapers, log } = opts;
  const keep = opts.keepSnapshots ?? 20;
  return {
    async pollTarget({ target }) {
      const response = await scrapeInActivity(scrapers, target, log);
      const snapshot = toSnapshot(response);
      const hash = snapshotHash(snapshot);
      const key = targetKey(target);
      return db.transaction(async (trx) => {
        // One poller per target writes here; the lock only guards against a second run
        // overlapping during a continue-as-new or a reset.
        await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [key]);
        const latest = await trx('target_snapshots').where({ target: key }).orderBy('id', 'desc').first('id', 'hash');
        if (latest && latest.hash === hash) return { snapshotId: Number(latest.id), changed: false };
        const [row] = await trx('target_snapshots')
          .insert({ target: key, hash, data: JSON.stringify(snapshot), scraped_at: response.scrape_timestamp })
          .returning('id');
        const snapshotId = Number(row.id);
        await trx('target_snapshots')
          .where({ target: key })
          .andWhere('id', '<', trx('target_snapshots').where({ target: key }).orderBy('id', 'desc').offset(keep - 1).limit(1).select('id'))
          .delete();
        return { snapshotId, changed: true };
      });
    },

    async evaluateChange(input) {
      const rows: { id: string; data: TargetSnapshot; scraped_at: Date }[] = await db('target_snapshots')
        .whereIn('id', [input.fromSnapshotId, input.toSnapshotId])
        .select('id', 'data', 'scraped_at');
      const from = rows.find((r) => Number(r.id) === input.fromSnapshotId);
      const to = rows.find((r) => Number(r.id) === input.toSnapshotId);
      if (!from || !to) return { notified: 0, muted: false, missing: true };
      const detectedAt = to.scraped_at;
      // Muted against the time the change was seen, not the time this (possibly retried) evaluation runs.
      const muted = input.config.muted_until !== null && Date.parse(input.config.muted_until) > detectedAt.getTime();
      const changes = detectChanges(from.data, to.data, input.config);
      if (muted || changes.length === 0) return { notified: 0, muted, missing: false };
      const entries: LogEntry[] = changes.map((c) => ({
        accountId: input.accountId,
        itemId: input.itemId,
        kind: 'notification',
        dedupeKey: dedupeKey([input.itemId, input.fromSnapshotId, input.toSnapshotId, c.section, c.change_type]),
        payload: {
          item_id: input.itemId,
          change_type: c.change_type,
          platform: input.item.website,
          event: input.item.event,
          region: input.item.region,
          section: c.section,
          currency: c.currency,
          before: c.before,
          after: c.after,
          snapshot_id: input.toSnapshotId,
          detected_at: detectedAt.toISOString(),
        },
      }));
      const ids = await db.transaction((trx) => appendToLog(trx, entries));
      log.info({ item_id: input.itemId, account_id: input.accountId, notified: ids.length, changes: changes.length }, 'notifications written');
      return { notified: ids.length, muted: false, missing: false };
    },

    async joinTarget({ target, itemId, workflowId }) {
      await client.workflow.signalWithStart<typeof targetPoller, [{ itemId: number; workflowId: string }]>('targetPoller', {
        workflowId: pollerWorkflowId(target),
        taskQueue: opts.monitorQueue,
        args: [
          {
            target,
            scrapeQueue: opts.scrapeQueue,
            intervalMs: opts.intervalMs,
            jitterRatio: opts.jitterRatio,
            subscribers: {},
            lastSnapshotId: null,
            failures: 0,
            pollsPerRun: opts.pollsPerRun,
          },
        ],
        signal: subscribeSignal,
        signalArgs: [{ itemId, workflowId }],
      });
    },

    async leaveTarget({ target, itemId }) {
      try {
        await client.workflow.getHandle(pollerWorkflowId(target)).signal(unsubscribeSignal, { itemId });
      } catch (err) {
        // No poller running: nothing to leave.
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
    },
  };
}
