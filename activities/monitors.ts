// The item monitors' one activity: inspectMonitor reads what the shard pollers recorded for an
// item (its baseline and newest notification), for the monitor's `status` query. Run as a local
// activity when an operator sends the monitor an `inspect` signal; never on the hot path.
import type { Db } from '../db/connection.ts';
import type { Inspection } from '../workflows/monitor-messages.ts';

export interface MonitorActivities {
  inspectMonitor(input: { itemId: number; accountId: number }): Promise<Inspection>;
}

export function createMonitorActivities(opts: { db: Db }): MonitorActivities {
  const { db } = opts;
  return {
    async inspectMonitor({ itemId, accountId }) {
      const [member, last] = await Promise.all([
        db('monitor_members').where({ item_id: itemId }).first('baseline_snapshot_id'),
        // By account first: that is the log's index; an account's rows are few next to the log's.
        db('notifications')
          .where({ account_id: accountId, item_id: itemId, kind: 'notification' })
          .orderBy('id', 'desc')
          .first('id', 'payload', 'created_at'),
      ]);
      return {
        at: new Date().toISOString(),
        baselineSnapshotId: member?.baseline_snapshot_id == null ? null : Number(member.baseline_snapshot_id),
        lastNotification: last
          ? { id: Number(last.id), change_type: String(last.payload.change_type), section: String(last.payload.section), created_at: (last.created_at as Date).toISOString() }
          : null,
      };
    },
  };
}
