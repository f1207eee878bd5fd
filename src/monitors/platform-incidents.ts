// Platform-wide incidents (issue 38). A platform that answers not-found for every event (a changed
// URL scheme, an outage page served with a 404) or blocks them all is the platform's failure, not
// each event's end: without this, each of its targets would be retired on its own clock and every
// item told its event is gone.
//
// The rule (docs/monitoring.md "Platform incidents", where the figures behind it are): a platform
// is failing when, of its watched targets (those with a member, not retired), at least
// MONITOR_INCIDENT_MIN_TARGETS and at least MONITOR_INCIDENT_SHARE of them stand failing: their
// newest answer was not-found (their not-found clock runs) or a block, within the last
// MONITOR_INCIDENT_WINDOW_MS (a blocked target also while its Retry-After lasts). The incident
// ends when fewer than half that share fail (hysteresis: a platform recovering target by target,
// each on its own back-off, does not open and close it in turn).
//
// While a platform's incident is open nothing of it is retired (retireTarget asks
// `retirementHeld`), and its targets go on being polled. Each item on the platform is told once
// when the incident opens (`platform_incident`, state `failing`) and once when it ends
// (`recovered`); at the end the platform's running not-found clocks restart, so an event that is
// really gone is retired MONITOR_RETIRE_AFTER_MS after the platform came back, not at once.
//
// One evaluation runs at a time across workers (a try-lock: a worker that finds it taken skips
// that round), each in one transaction. Opening and closing take the platform's advisory lock
// exclusively and retirement takes it shared, so no target is retired across an incident's start.
import type { Knex } from 'knex';
import { Gauge, type Registry } from 'prom-client';
import type { Db } from '../../db/connection.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { LogEntry } from '../notifications/log.ts';
import { appendWithDeliveries } from '../webhooks/outbox.ts';
import { notificationKey } from './record-poll.ts';
import { OutageLog } from '../runtime/outage-log.ts';

export interface IncidentRule {
  /** The share of a platform's watched targets failing at once that opens an incident (0..1]. */
  share: number;
  /** Fewer failing targets than this never open one: a platform watched on a few events retires them one by one. */
  minTargets: number;
  /** A failure older than this no longer counts (its target is being backed off, or no longer polled). */
  windowMs: number;
}

/** What one platform's watched targets stand at now. */
export interface PlatformReading {
  platform: string;
  targets: number;
  notFound: number;
  /** Blocked and not also not-found. */
  blocked: number;
}

export interface OpenIncident {
  id: number;
  platform: string;
  startedAt: Date;
  peakFailing: number;
}

export type IncidentStep = 'open' | 'close' | 'stay';

/** The rule on one platform's reading (pure; test/monitors/platform-incidents.test.ts). */
export function incidentStep(reading: PlatformReading, open: boolean, rule: IncidentRule): IncidentStep {
  const failing = reading.notFound + reading.blocked;
  const share = reading.targets > 0 ? failing / reading.targets : 0;
  if (!open) return failing >= rule.minTargets && share >= rule.share ? 'open' : 'stay';
  return reading.targets === 0 || share < rule.share / 2 ? 'close' : 'stay';
}

/** Closed incidents are kept this long (for the ops CLI), pruned as the next one of their platform closes. */
export const KEEP_INCIDENTS_DAYS = 90;

/** Arbitrary constant naming the evaluation's advisory lock (one evaluation at a time). */
const EVALUATION_LOCK = 7_204_338;

function platformLock(platform: string): string {
  return `platform-incident:${platform}`;
}

/** The rule as configured (MONITOR_INCIDENT_*). */
export function incidentRuleOf(config: Pick<Config, 'MONITOR_INCIDENT_SHARE' | 'MONITOR_INCIDENT_MIN_TARGETS' | 'MONITOR_INCIDENT_WINDOW_MS'>): IncidentRule {
  return { share: config.MONITOR_INCIDENT_SHARE, minTargets: config.MONITOR_INCIDENT_MIN_TARGETS, windowMs: config.MONITOR_INCIDENT_WINDOW_MS };
}

/** Why a retirement waits (null: it may go ahead). */
export type RetirementHold = 'incident_open' | 'incident_due' | 'platform_unheard';

/**
 * Whether retiring `target` of `platform`, whose not-found clock started at `notFoundSince`, must
 * wait. Takes the platform's lock shared until `trx` ends, so an incident cannot open between this
 * answer and the retirement it allows. A retirement waits
 * - while an incident of the platform is open;
 * - while the platform, read now with this target failing, meets the rule for opening one (the
 *   next evaluation opens it);
 * - until every other watched target of the platform that was checked within the window has been
 *   checked again since this target's clock started. The rule reads the platform as its targets
 *   last answered, and a target polled before the platform began failing still reads healthy: a
 *   retirement window shorter than a round of the platform's polls would otherwise retire the
 *   first targets of an outage before the rest had answered (bench:alerts, pf_01: three of five
 *   retired, and with them the incident's quorum).
 */
export async function retirementHeld(trx: Knex.Transaction, platform: string, target: string, notFoundSince: Date, rule: IncidentRule): Promise<RetirementHold | null> {
  await trx.raw('SELECT pg_advisory_xact_lock_shared(hashtext(?))', [platformLock(platform)]);
  if (await trx('monitor_platform_incidents').where({ platform }).whereNull('ended_at').first('id')) return 'incident_open';
  const [reading] = await readPlatforms(trx, rule.windowMs, platform);
  if (reading && incidentStep(reading, false, rule) === 'open') return 'incident_due';
  const { rows } = (await trx.raw(
    `SELECT EXISTS (
       SELECT 1 FROM (SELECT DISTINCT target FROM monitor_members WHERE platform = ? AND target <> ?) w
       JOIN monitor_target_checks c ON c.target = w.target
       LEFT JOIN monitor_target_status s ON s.target = w.target
       WHERE s.retired_at IS NULL
         AND c.checked_at > now() - make_interval(secs => ?)
         AND c.checked_at < ?::timestamptz
     ) AS unheard`,
    [platform, target, rule.windowMs / 1000, notFoundSince],
  )) as { rows: { unheard: boolean }[] };
  return rows[0]?.unheard ? 'platform_unheard' : null;
}

/**
 * The platforms whose incident state an evaluation could change: those with a target failing
 * within the window (as readPlatforms counts one, watched or not) or an open incident. Only they
 * are read: on a healthy service this reads only the few rows of failing targets, where
 * reading every platform groups the whole monitor_members table every 2 s (issue 38's
 * bench:monitors pairs).
 */
async function platformsInQuestion(db: Db, windowMs: number): Promise<string[]> {
  const { rows } = (await db.raw(
    `SELECT platform FROM monitor_target_status s
      WHERE s.retired_at IS NULL
        AND ((s.not_found_since IS NOT NULL AND s.updated_at > now() - make_interval(secs => ?))
          OR (s.kind = 'blocked' AND (s.blocked_until > now() OR s.updated_at > now() - make_interval(secs => ?))))
     UNION
     SELECT platform FROM monitor_platform_incidents WHERE ended_at IS NULL`,
    [windowMs / 1000, windowMs / 1000],
  )) as { rows: { platform: string }[] };
  return rows.map((r) => r.platform);
}

/** Every platform (or only those in `only`) with a watched target, or an open incident, as it stands now (the database's clock). */
export async function readPlatforms(db: Db | Knex.Transaction, windowMs: number, only?: string | readonly string[]): Promise<PlatformReading[]> {
  const among = only === undefined ? null : typeof only === 'string' ? [only] : [...only];
  const { rows } = (await db.raw(
    `WITH watched AS (SELECT DISTINCT platform, target FROM monitor_members WHERE ?::text[] IS NULL OR platform = ANY(?::text[])),
     standing AS (
       SELECT w.platform,
              s.retired_at IS NOT NULL AS retired,
              s.retired_at IS NULL AND s.not_found_since IS NOT NULL AND s.updated_at > now() - make_interval(secs => ?) AS not_found,
              s.retired_at IS NULL AND s.kind = 'blocked' AND (s.blocked_until > now() OR s.updated_at > now() - make_interval(secs => ?)) AS blocked
       FROM watched w LEFT JOIN monitor_target_status s ON s.target = w.target
     )
     SELECT platform,
            count(*) FILTER (WHERE retired IS NOT TRUE)::int AS targets,
            count(*) FILTER (WHERE not_found)::int AS not_found,
            count(*) FILTER (WHERE blocked AND NOT not_found)::int AS blocked
     FROM standing GROUP BY platform
     UNION ALL
     SELECT i.platform, 0, 0, 0 FROM monitor_platform_incidents i
     WHERE i.ended_at IS NULL AND (?::text[] IS NULL OR i.platform = ANY(?::text[])) AND NOT EXISTS (SELECT 1 FROM watched w WHERE w.platform = i.platform)
     ORDER BY platform`,
    [among, among, windowMs / 1000, windowMs / 1000, among, among],
  )) as { rows: { platform: string; targets: number; not_found: number; blocked: number }[] };
  return rows.map((r) => ({ platform: r.platform, targets: r.targets, notFound: r.not_found, blocked: r.blocked }));
}

interface MemberRow {
  item_id: string;
  account_id: string;
  item: { website: string; event: string; region: string };
}

/** The message each item on the platform gets when its incident opens or ends. */
function incidentEntry(m: MemberRow, incident: { id: number; startedAt: Date; endedAt: Date | null }, platform: string): LogEntry {
  const itemId = Number(m.item_id);
  const state = incident.endedAt === null ? 'failing' : 'recovered';
  return {
    accountId: Number(m.account_id),
    itemId,
    kind: 'platform_incident',
    // Once per incident and state, whoever writes it and however often.
    dedupeKey: notificationKey([itemId, 'incident', incident.id, state]),
    payload: {
      item_id: itemId,
      platform,
      event: m.item.event,
      region: m.item.region,
      state,
      incident_id: incident.id,
      started_at: incident.startedAt.toISOString(),
      ended_at: incident.endedAt?.toISOString() ?? null,
      // `message` is added by the database (monitor_append_notifications, db/migrations/036).
    },
  };
}

async function tellItems(trx: Knex.Transaction, platform: string, incident: { id: number; startedAt: Date; endedAt: Date | null }): Promise<number> {
  const members: MemberRow[] = await trx('monitor_members').where({ platform }).orderBy('item_id').select('item_id', 'account_id', 'item');
  const ids = await appendWithDeliveries(
    trx,
    members.map((m) => incidentEntry(m, incident, platform)),
  );
  return ids.length;
}

export interface IncidentChange {
  platform: string;
  state: 'failing' | 'recovered';
  incidentId: number;
  reading: PlatformReading;
  itemsTold: number;
}

/**
 * One evaluation of every platform: opens and closes incidents by the rule, telling the items.
 * Returns what changed; empty when another worker holds the evaluation.
 */
export async function evaluateIncidents(db: Db, rule: IncidentRule): Promise<IncidentChange[]> {
  // Read without the lock: a platform that starts failing just after is in the next round's.
  const platforms = await platformsInQuestion(db, rule.windowMs);
  if (platforms.length === 0) return [];
  return db.transaction(async (trx) => {
    const { rows } = (await trx.raw('SELECT pg_try_advisory_xact_lock(?) AS got', [EVALUATION_LOCK])) as { rows: { got: boolean }[] };
    if (!rows[0]?.got) return [];
    const readings = await readPlatforms(trx, rule.windowMs, platforms);
    const open = new Map<string, OpenIncident>(
      (
        (await trx('monitor_platform_incidents').whereNull('ended_at').select('id', 'platform', 'started_at', 'peak_failing')) as {
          id: string;
          platform: string;
          started_at: Date;
          peak_failing: number;
        }[]
      ).map((r) => [r.platform, { id: Number(r.id), platform: r.platform, startedAt: r.started_at, peakFailing: r.peak_failing }]),
    );
    const changes: IncidentChange[] = [];
    for (const reading of readings) {
      const current = open.get(reading.platform) ?? null;
      const step = incidentStep(reading, current !== null, rule);
      const failing = reading.notFound + reading.blocked;
      if (step === 'stay') {
        if (current && failing > current.peakFailing) await trx('monitor_platform_incidents').where({ id: current.id }).update({ peak_failing: failing });
        continue;
      }
      await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [platformLock(reading.platform)]);
      if (step === 'open') {
        const [row] = (await trx('monitor_platform_incidents')
          .insert({ platform: reading.platform, targets: reading.targets, not_found: reading.notFound, blocked: reading.blocked, peak_failing: failing })
          .returning(['id', 'started_at'])) as { id: string; started_at: Date }[];
        const incident = { id: Number(row!.id), startedAt: row!.started_at, endedAt: null };
        const told = await tellItems(trx, reading.platform, incident);
        await trx('monitor_platform_incidents').where({ id: incident.id }).update({ items_told: told });
        changes.push({ platform: reading.platform, state: 'failing', incidentId: incident.id, reading, itemsTold: told });
      } else if (current) {
        const [row] = (await trx('monitor_platform_incidents').where({ id: current.id }).update({ ended_at: trx.fn.now() }).returning('ended_at')) as { ended_at: Date }[];
        // What the incident hid restarts from its end: a gone event needs a full clock of its own.
        await trx('monitor_target_status').where({ platform: reading.platform }).whereNull('retired_at').whereNotNull('not_found_since').update({ not_found_since: trx.fn.now() });
        const told = await tellItems(trx, reading.platform, { id: current.id, startedAt: current.startedAt, endedAt: row!.ended_at });
        // The table's bound: a platform keeps the incidents of its last KEEP_INCIDENTS_DAYS.
        await trx('monitor_platform_incidents')
          .where({ platform: reading.platform })
          .whereNotNull('ended_at')
          .where('ended_at', '<', trx.raw(`now() - interval '${KEEP_INCIDENTS_DAYS} days'`))
          .delete();
        changes.push({ platform: reading.platform, state: 'recovered', incidentId: current.id, reading, itemsTold: told });
      }
    }
    return changes;
  });
}

export interface IncidentWatch {
  /** Runs one evaluation now (tests). */
  evaluate(): Promise<IncidentChange[]>;
  stop(): Promise<void>;
}

/**
 * Evaluates every `everyMs` (one at a time); logs each incident opened or closed, and keeps the
 * `monitor_platform_incident_open` gauge (1 per platform with an open incident) from the table,
 * whichever worker evaluated.
 */
export function startIncidentWatch(opts: { db: Db; rule: IncidentRule; everyMs: number; log: Logger; registry?: Registry; onChange?: (c: IncidentChange) => void }): IncidentWatch {
  const log = opts.log.child({ component: 'platform-incidents' });
  const gauge = opts.registry
    ? new Gauge({ name: 'monitor_platform_incident_open', help: 'Platforms with an open incident (most of their watched targets not found or blocked at once)', labelNames: ['platform'], registers: [opts.registry] })
    : null;
  const shown = new Set<string>();
  const showOpen = async () => {
    if (!gauge) return;
    const open = new Set(((await opts.db('monitor_platform_incidents').whereNull('ended_at').select('platform')) as { platform: string }[]).map((r) => r.platform));
    for (const p of shown) if (!open.has(p)) gauge.set({ platform: p }, 0);
    for (const p of open) {
      gauge.set({ platform: p }, 1);
      shown.add(p);
    }
  };
  let chain: Promise<unknown> = Promise.resolve();
  // One line when evaluating starts failing (a database outage), one when it works again.
  const outage = new OutageLog(log, 'evaluate platform incidents');
  const evaluate = (): Promise<IncidentChange[]> => {
    const next = chain.then(async () => {
      const changes = await evaluateIncidents(opts.db, opts.rule);
      await showOpen();
      return changes;
    });
    chain = next.catch(() => {});
    return next.then((changes) => {
      for (const c of changes) {
        const fields = { platform: c.platform, incident_id: c.incidentId, targets: c.reading.targets, not_found: c.reading.notFound, blocked: c.reading.blocked, items_told: c.itemsTold };
        if (c.state === 'failing') log.warn(fields, 'platform incident: most of its watched targets fail at once; nothing of it is retired until it recovers');
        else log.info(fields, 'platform incident over: its not-found clocks restart');
        opts.onChange?.(c);
      }
      return changes;
    });
  };
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    evaluate()
      .then(() => outage.succeeded())
      .catch((err: unknown) => outage.failed(err))
      .finally(() => (busy = false));
  }, opts.everyMs);
  timer.unref();
  return {
    evaluate,
    stop: async () => {
      clearInterval(timer);
      await chain;
    },
  };
}
