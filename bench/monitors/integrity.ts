// Phase 6: the notifications log against the changes the bench made. For every change and every
// item on its target there must be exactly one stock_increase notification for that section
// whose after.stock is the changed stock. A missing one is a miss, unless the target served no
// request (pf_03: no page; pf_01: no page, arm or session request) between the change and its
// next change (no poll could have seen it: "superseded", reported apart; the round-robin churn
// makes it rare). Extra copies are duplicates. Also
// counted: notifications that match no change, and duplicates by the service's own identity
// (item, snapshot, section, change type).
import type { Change } from './changes.ts';
import type { Stack } from './stack.ts';
import { changeKey } from './stream-clients.ts';

export interface IntegrityResult {
  /** (change, item) pairs expected. */
  expected: number;
  found: number;
  missed: number;
  /** Missing, but the change was never on a served page before the next one replaced it. */
  superseded: number;
  /** Copies beyond the first. */
  duplicated: number;
  /** Notifications of the soak that match no change the bench made. */
  unmatched: number;
  /** Duplicates by (item, snapshot_id, section, change_type). */
  sameSnapshotDuplicates: number;
  /** Of the missed and duplicated: those of changes made around the worker's SIGKILL. */
  missedAroundKill: number;
  duplicatedAroundKill: number;
  /** A few missed (change, item) pairs, for the report. */
  examples: string[];
  /** The changeKeys found in the log, for the stream check. */
  logged: Set<string>;
}

/** `aroundKill`: whether a change was made while the worker's SIGKILL could affect it. */
export async function checkLog(stack: Stack, changes: readonly Change[], afterId: number, aroundKill: (c: Change) => boolean): Promise<IntegrityResult> {
  const { rows } = await stack.pool.query<{ item_id: string; section: string | null; stock: string | null; change_type: string }>(
    `SELECT item_id, payload->>'section' AS section, payload->'after'->>'stock' AS stock, payload->>'change_type' AS change_type
       FROM notifications WHERE kind = 'notification' AND id > $1`,
    [afterId],
  );
  const counts = new Map<string, number>();
  let unmatchedKinds = 0;
  for (const r of rows) {
    if (r.change_type !== 'stock_increase') {
      unmatchedKinds++;
      continue;
    }
    const key = changeKey(Number(r.item_id), r.section ?? '', Number(r.stock));
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }

  // Requests served by each target now: after a target's last change, was it polled at all?
  const hitsNow = await stack.meter.simHitsByKey();
  const nextOf = new Map<Change, Change>();
  const lastByTarget = new Map<number, Change>();
  for (const c of [...changes].sort((a, b) => a.putAt - b.putAt)) {
    const prev = lastByTarget.get(c.target.index);
    if (prev) nextOf.set(prev, c);
    lastByTarget.set(c.target.index, c);
  }

  const result: IntegrityResult = {
    expected: 0,
    found: 0,
    missed: 0,
    superseded: 0,
    duplicated: 0,
    unmatched: 0,
    sameSnapshotDuplicates: 0,
    missedAroundKill: 0,
    duplicatedAroundKill: 0,
    examples: [],
    logged: new Set(),
  };
  const expectedKeys = new Set<string>();
  for (const c of changes) {
    const next = nextOf.get(c);
    const hitsAfter = next ? next.hitsBefore : (hitsNow[c.target.key] ?? 0);
    const seen = hitsAfter > c.hitsBefore;
    const around = aroundKill(c);
    for (const item of c.target.items) {
      const key = changeKey(item.id, c.section, c.stock);
      expectedKeys.add(key);
      result.expected++;
      const n = counts.get(key) ?? 0;
      if (n === 0) {
        if (seen) {
          result.missed++;
          if (around) result.missedAroundKill++;
          if (result.examples.length < 5) result.examples.push(`item ${item.id} on ${c.target.key}: ${c.section} → ${c.stock} at ${new Date(c.putAt).toISOString()}`);
        } else result.superseded++;
        continue;
      }
      result.found++;
      result.logged.add(key);
      result.duplicated += n - 1;
      if (around) result.duplicatedAroundKill += n - 1;
    }
  }
  for (const [key, n] of counts) if (!expectedKeys.has(key)) result.unmatched += n;
  result.unmatched += unmatchedKinds;

  const dup = await stack.pool.query<{ n: string }>(
    `SELECT coalesce(sum(c - 1), 0) AS n FROM (
       SELECT count(*) AS c FROM notifications WHERE kind = 'notification' AND id > $1
        GROUP BY item_id, payload->>'snapshot_id', payload->>'section', payload->>'change_type' HAVING count(*) > 1) d`,
    [afterId],
  );
  result.sameSnapshotDuplicates = Number(dup.rows[0]!.n);
  return result;
}
