// Each watchlist item's health (issue 38): `last_checked_at`, `check_status` and
// `last_changed_at`, added beside the spec's fields wherever the API returns an item. Read, never
// stored with the item, from what the monitors keep per target (an item's target is its
// platform, event and region: its monitor_members row's `target`, or the same key computed from
// the item while it has no row):
//   monitor_target_checks   when the target was last checked, and whether that check read it
//                           (src/monitors/check-log.ts);
//   monitor_target_status   the target's failure, if its last check failed: blocked, not found
//                           (the retirement clock), failing, or retired (src/monitors/target-status.ts);
//   target_snapshots        one row per version of the content: the newest's scraped_at is the
//                           last change, when there is an older one it changed from;
//   monitor_members         whether the item's monitor has had its first check (its baseline);
//   account_service         whether the account is served (src/accounts/service-state.ts).
// One statement for any number of items, plus, only when one of their targets is failing, the
// platform incidents (`platformFailing`).
//
// The rule (deriveHealth), first match wins:
//   paused            task_active is false, or the account is not served;
//   retired           the target is retired and no item on it was written since;
//   platform_failing  the target's last check failed and its platform is in an incident;
//   blocked           the target's last check was refused (429/403, a challenge);
//   not_found         the target's last check answered not-found (404/410);
//   failing           the target's last check failed otherwise;
//   ok                the target's last check read it (its check row says so), and this item's monitor
//                     has had its first check (its baseline);
//   pending           none of these yet: created or resumed, not yet checked for this item.
// While pending, both times are null: the item has not been checked. Otherwise they are the
// target's, shared by every item on the same event.
import type { Knex } from 'knex';
import { parseEventRef, targetKey } from '../../platform/event-ref.ts';
import type { CheckStatus, ItemHealth, WatchlistItem } from './schema.ts';

/** What deriveHealth needs to know of one item (read by readHealthFacts). */
export interface HealthFacts {
  /** task_active is false, or the account is not served. */
  paused: boolean;
  /** Whether the item has a monitor_members row, and whether its first check set its baseline. */
  member: { baselined: boolean } | null;
  /** The target's newest check: its check row, or its status row's last write if later. */
  checkedAt: Date | null;
  /** Whether the check in the check row read the event (null: no row). */
  lastCheckOk: boolean | null;
  /** The newest snapshot's scraped_at, when an older snapshot exists. */
  changedAt: Date | null;
  /** The target's monitor_target_status row, when it has one. */
  status: {
    kind: string;
    /** The ScrapeFailure kind of its last failure (null in rows written before migration 033). */
    lastFailure: string | null;
    notFoundSince: Date | null;
    retired: boolean;
    /** Retired, but an item on the target was written since: it is checked afresh. */
    revived: boolean;
  } | null;
  /** The item's platform is in an incident now (platformFailing). */
  platformFailing: boolean;
}

function iso(d: Date | null): string | null {
  return d === null ? null : d.toISOString();
}

/** The item's health from its facts (pure; the rule is in the header). */
export function deriveHealth(f: HealthFacts): ItemHealth {
  const times = (check_status: CheckStatus): ItemHealth => ({ last_checked_at: iso(f.checkedAt), check_status, last_changed_at: iso(f.changedAt) });
  const pending: ItemHealth = { last_checked_at: null, check_status: 'pending', last_changed_at: null };
  if (f.paused) return times('paused');
  const s = f.status;
  if (s?.retired) return s.revived ? pending : times('retired');
  if (s) {
    if (f.platformFailing) return times('platform_failing');
    if (s.kind === 'blocked') return times('blocked');
    const notFound = s.lastFailure === null ? s.notFoundSince !== null : s.lastFailure === 'not_found';
    return times(notFound ? 'not_found' : 'failing');
  }
  // Its first check sets the baseline at once; the check's time is written within a second
  // (check-log.ts): pending until both are there, so `ok` always has a time. A last check that
  // failed with no failure on record is a target checked afresh (revived): pending too.
  return f.member?.baselined && f.lastCheckOk === true ? times('ok') : pending;
}

/**
 * The platforms among `platforms` in an incident now: a platform-wide failure, which the
 * platform-incident change records in monitor_platform_incidents (migration 032: `platform`,
 * `started_at`, `ended_at` null while it lasts). Until that table exists, none is. Asked only for
 * the platforms of items whose target's last check failed.
 */
export async function platformFailing(db: Knex, platforms: readonly string[]): Promise<Set<string>> {
  if (platforms.length === 0) return new Set();
  const { rows } = (await db.raw(`SELECT to_regclass('monitor_platform_incidents') IS NOT NULL AS present`)) as { rows: { present: boolean }[] };
  if (!rows[0]?.present) return new Set();
  const open: { platform: string }[] = await db('monitor_platform_incidents')
    .whereIn('platform', [...new Set(platforms)])
    .whereNull('ended_at')
    .distinct('platform');
  return new Set(open.map((r) => r.platform));
}

interface FactRow {
  item_id: string;
  served: boolean;
  member: boolean;
  baselined: boolean;
  checked_at: Date | null;
  check_ok: boolean | null;
  changed_at: Date | null;
  kind: string | null;
  last_failure: string | null;
  not_found_since: Date | null;
  retired_at: Date | null;
  revived: boolean;
}

// One row per item. The target is the member row's, else the key computed from the item (a
// paused item has no row). The last change: the newest of the target's two newest snapshots,
// when there are two (the first version stored is not a change). Whether the account is served:
// read once for the one account of a list, a read or one account's creates (FACTS_ONE), or once
// per account for a group of several accounts' creates (FACTS_EACH, a join).
const SERVED_ONE = `(SELECT coalesce((SELECT a.served FROM account_service a WHERE a.account_id = ?), account_served(?)))`;
const SERVED_EACH = `JOIN (SELECT d.account_id, coalesce((SELECT a.served FROM account_service a WHERE a.account_id = d.account_id), account_served(d.account_id)) AS served
            FROM (SELECT DISTINCT unnest(?::bigint[]) AS account_id) d) sv ON sv.account_id = x.account_id`;
const factsSql = (oneAccount: boolean) => `
  SELECT x.item_id::text AS item_id,
         ${oneAccount ? SERVED_ONE : 'sv.served'} AS served,
         m.item_id IS NOT NULL AS member,
         m.baseline_snapshot_id IS NOT NULL AS baselined,
         greatest(c.checked_at, s.updated_at) AS checked_at,
         c.ok AS check_ok,
         v.changed_at,
         s.kind, s.last_failure, s.not_found_since, s.retired_at,
         s.retired_at IS NOT NULL AND EXISTS (SELECT 1 FROM monitor_members r WHERE r.target = t.target AND r.updated_at > s.retired_at) AS revived
    FROM unnest(?::bigint[], ?::text[]${oneAccount ? '' : ', ?::bigint[]'}) AS x(item_id, target${oneAccount ? '' : ', account_id'})
    ${oneAccount ? '' : SERVED_EACH}
    LEFT JOIN monitor_members m ON m.item_id = x.item_id
   CROSS JOIN LATERAL (SELECT coalesce(m.target, x.target) AS target) t
    LEFT JOIN monitor_target_checks c ON c.target = t.target
    LEFT JOIN monitor_target_status s ON s.target = t.target
    LEFT JOIN LATERAL (
      SELECT (array_agg(n.scraped_at ORDER BY n.id DESC))[1] AS changed_at
        FROM (SELECT id, scraped_at FROM target_snapshots WHERE target = t.target ORDER BY id DESC LIMIT 2) n
      HAVING count(*) = 2
    ) v ON true`;
const FACTS_ONE = factsSql(true);
const FACTS_EACH = factsSql(false);

/** The target key the monitors use for the item, or null when it has none (monitors/membership.ts). */
function itemTarget(item: Pick<WatchlistItem, 'website' | 'event' | 'region'>): string | null {
  const ref = parseEventRef(item.website, item.event, item.region);
  return ref.ok ? targetKey(ref.ref) : null;
}

/** One item's facts from its row of the facts statement and the platforms in an incident. */
function factsOf(item: WatchlistItem, r: FactRow, incidents: Set<string>): HealthFacts {
  return {
    paused: !item.task_active || !r.served,
    member: r.member ? { baselined: r.baselined } : null,
    checkedAt: r.checked_at,
    lastCheckOk: r.check_ok,
    changedAt: r.changed_at,
    status:
      r.kind === null
        ? null
        : {
            kind: r.kind,
            lastFailure: r.last_failure,
            notFoundSince: r.not_found_since,
            retired: r.retired_at !== null,
            // This item written after the retirement revives the target as soon as the membership
            // relay applies the write (its member row then is newer): a PATCH's own answer says so.
            revived: r.revived || (r.retired_at !== null && Date.parse(item.updated_at) > r.retired_at.getTime()),
          },
    platformFailing: incidents.has(item.website),
  };
}

/** An item's key in the facts statement: its id, its target and its account. */
interface FactKey {
  id: number;
  website: string;
  target: string | null;
  accountId: number;
}

/** The facts statement for `keys`, with its bindings. */
function factsQuery(keys: readonly FactKey[]): { sql: string; bindings: Knex.RawBinding[] } {
  const accounts = [...new Set(keys.map((k) => k.accountId))];
  const ids = keys.map((k) => k.id);
  const targets = keys.map((k) => k.target) as string[];
  if (accounts.length <= 1) return { sql: FACTS_ONE, bindings: [accounts[0] ?? 0, accounts[0] ?? 0, ids, targets] };
  return { sql: FACTS_EACH, bindings: [ids, targets, keys.map((k) => k.accountId), accounts] };
}

/** The platforms in an incident among those of `keys` whose target's last check failed. */
function incidentsOf(db: Knex, keys: readonly { id: number; website: string }[], byId: Map<number, FactRow>): Promise<Set<string>> {
  return platformFailing(
    db,
    keys.filter((k) => byId.get(k.id)?.kind != null && byId.get(k.id)?.retired_at == null).map((k) => k.website),
  );
}

/** The facts of `keys`, by item id, and the platforms in an incident among those whose target is failing. */
async function readFactRows(db: Knex, keys: readonly FactKey[]): Promise<{ byId: Map<number, FactRow>; incidents: Set<string> }> {
  const { sql, bindings } = factsQuery(keys);
  const { rows } = (await db.raw(sql, bindings)) as { rows: FactRow[] };
  const byId = new Map(rows.map((r) => [Number(r.item_id), r]));
  return { byId, incidents: await incidentsOf(db, keys, byId) };
}

/** The facts of each of `items` (all of account `accountId`), by item id. */
export async function readHealthFacts(db: Knex, accountId: number, items: readonly WatchlistItem[]): Promise<Map<number, HealthFacts>> {
  if (items.length === 0) return new Map();
  const { byId, incidents } = await readFactRows(
    db,
    items.map((i) => ({ id: i.id, website: i.website, target: itemTarget(i), accountId })),
  );
  return new Map(items.map((item) => [item.id, factsOf(item, byId.get(item.id)!, incidents)]));
}

/** Completes a created item with its health. */
export type CompleteNewItem = <T extends WatchlistItem>(item: T) => T & ItemHealth;

/**
 * The health of the items about to be created on `targets` (a group of creates, each with its
 * account, in order), read in the statement that takes the writers' locks (`sql` and `bindings`:
 * a row per target, its facts), so it costs the creates no round trip of their own and no time
 * inside the serialised section. A new item has no member row until the membership relay applies its
 * creation, after the commit, so everything its health depends on is its target's and its
 * account's, readable before the item exists. (Read as a statement of its own inside the
 * section, issue 38's first version took 16 creates in flight from 374 to 302 a second.)
 * `finish` turns those rows into one completion per target, in order (asking for the platforms'
 * incidents only when a target is failing).
 */
export function newItemsFacts(
  targets: readonly (Pick<WatchlistItem, 'website' | 'event' | 'region'> & { accountId: number })[],
): { sql: string; bindings: Knex.RawBinding[]; finish(db: Knex, rows: readonly Record<string, unknown>[]): Promise<CompleteNewItem[]> } {
  // Ids 0, -1, -2, ... are never an item's (ids start at 1): they match no member row, as the new
  // items' ids would not yet, and keep the targets apart.
  const keys = targets.map((target, k) => ({ id: -k, website: target.website, target: itemTarget(target), accountId: target.accountId }));
  return {
    ...factsQuery(keys),
    async finish(db, rows) {
      const byId = new Map((rows as unknown as FactRow[]).map((r) => [Number(r.item_id), r]));
      const incidents = await incidentsOf(db, keys, byId);
      return keys.map((key) => (item) => ({ ...item, ...deriveHealth(factsOf(item, byId.get(key.id)!, incidents)) }));
    },
  };
}

/** `items` with their health fields, beside the spec's. */
export async function withHealth<T extends WatchlistItem>(db: Knex, accountId: number, items: readonly T[]): Promise<(T & ItemHealth)[]> {
  const facts = await readHealthFacts(db, accountId, items);
  return items.map((item) => ({ ...item, ...deriveHealth(facts.get(item.id)!) }));
}
