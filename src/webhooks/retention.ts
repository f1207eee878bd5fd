// How long finished webhook deliveries (and their attempts) are kept: WEBHOOK_RETENTION_DAYS,
// after which the gateway's housekeeping deletes them in small batches, so the deliveries list
// shows a month of history and the tables do not grow for ever. Pending deliveries are never
// pruned, however old: their workflow still needs them.
import type { Db } from '../../db/connection.ts';

const BATCH = 1_000;

/** Deletes finished deliveries last updated more than `olderThanMs` ago; returns how many. */
export async function pruneDeliveries(db: Db, olderThanMs: number): Promise<number> {
  let total = 0;
  for (;;) {
    // Attempts go with their delivery (ON DELETE CASCADE).
    const { rowCount } = await db.raw(
      `DELETE FROM webhook_deliveries WHERE id IN (
         SELECT id FROM webhook_deliveries
         WHERE state <> 'pending' AND updated_at < now() - make_interval(secs => ?)
         LIMIT ${BATCH})`,
      [olderThanMs / 1000],
    );
    total += rowCount ?? 0;
    if ((rowCount ?? 0) < BATCH) return total;
  }
}
