// The signal relay (issue 38): tells Temporal what an account's change of served state asks of it,
// after the change has committed. The service sweep (service-state.ts) records each change and
// writes a row of account_service_signals in the same transaction, which makes no call outside
// PostgreSQL; this relay reads those rows and runs each consumer's ServiceSignals for them
// (a resumed account's trackings are woken, its shard pollers started), outside any transaction.
//
// - Never blocks the sweep: the sweep only kicks it; rows are claimed (claimed_until, a lease) in
//   one short statement with SKIP LOCKED, and the calls run with no transaction and no lock open.
// - Retried with backoff: a delivery that fails (Temporal down) is put back with next_attempt_at
//   1 s, 2 s, 4 s ... after, up to MAX_BACKOFF_MS, jittered; the outage is logged once
//   (OutageLog) and its end once.
// - Exactly once in effect: a delivered row is deleted; a relay that dies between its calls and
//   the delete leaves a claim that expires, and the row is delivered again. Every signal is
//   idempotent (a poller start meets the running chain, USE_EXISTING; a second resumeTracking
//   signal sets a flag that is already set), so a repeat changes nothing.
// - Superseded: one row per account, and the sweep overwrites it at each change with a new
//   version. An account resumed, then lapsed before its resume was delivered, has a row that
//   says not served: the resume is never sent. A relay delivering the earlier version when the
//   later one commits settles (deletes or reschedules) only the version it read, so the later one
//   stays to be delivered; its early resume (a tracking woken that pauses again at its next
//   check, a poller started that finds no members) is harmless.
import { Gauge, type Registry } from 'prom-client';
import type { Db } from '../../db/connection.ts';
import type { Logger } from '../logger.ts';
import { inParallel } from '../monitors/change-feed.ts';
import { OutageLog } from '../runtime/outage-log.ts';

/** What one consumer tells Temporal about changes that have committed; each call is retried until it resolves, so must be idempotent. */
export interface ServiceSignals {
  /** For logs: what it tells. */
  name: string;
  /** Accounts served again (and not changed since): outside any transaction. */
  resumed?(accountIds: number[]): Promise<void>;
  /** Accounts no longer served (and not changed since): outside any transaction. */
  suspended?(accountIds: number[]): Promise<void>;
}

export interface SignalRelayOptions {
  db: Db;
  signals: readonly ServiceSignals[];
  log: Logger;
  /** How often the outbox is looked at when not kicked (a row due for a retry, another worker's sweep). */
  pollMs?: number;
  /** Backoff of a failed delivery: base × 2^(attempts - 1), at most maxMs, ±20 %. */
  backoff?: { baseMs: number; maxMs: number };
  /** /metrics: the backlog (rows, oldest change's age). */
  registry?: Registry;
}

export interface DrainResult {
  /** Rows whose signals all went out (and were deleted, or found superseded). */
  delivered: number;
  /** Rows put back for a retry. */
  failed: number;
}

export interface SignalRelay {
  /** Delivers every row due now (tests; the timer and kicks call it too). One drain at a time. */
  drain(): Promise<DrainResult>;
  /** Asks for a drain soon; never waits (the sweep calls it after a change). */
  kick(): void;
  stop(): Promise<void>;
}

const POLL_MS = 1_000;
/** Rows claimed at once; each is delivered separately (one account's failure is its own). */
const BATCH = 32;
const PARALLEL = 8;
/**
 * How long a claim holds: longer than a batch's deliveries can take (each call is bounded at 5 s,
 * temporal/client.ts). A relay that died leaves its rows to another after this.
 */
const LEASE_MS = 120_000;
/** Capped at 15 s: work waiting on Temporal is applied within seconds of its return (issue 26's bound). */
const BASE_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 15_000;

interface Claimed {
  account_id: number;
  served: boolean;
  version: number;
  attempts: number;
}

/** The wait before the next try of a row that failed its `attempts`-th time. */
export function signalBackoffMs(attempts: number, backoff = { baseMs: BASE_BACKOFF_MS, maxMs: MAX_BACKOFF_MS }, random = Math.random): number {
  const raw = Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.max(0, attempts - 1));
  return Math.round(raw * (0.8 + 0.4 * random()));
}

/** Claims up to `limit` due rows for LEASE_MS, counting the attempt; one statement, no lock kept. */
async function claim(db: Db, limit: number): Promise<Claimed[]> {
  const { rows } = (await db.raw(
    `UPDATE account_service_signals s
        SET claimed_until = now() + make_interval(secs => ?), attempts = s.attempts + 1
       FROM (SELECT account_id FROM account_service_signals
              WHERE next_attempt_at <= now() AND (claimed_until IS NULL OR claimed_until <= now())
              ORDER BY next_attempt_at, account_id
              LIMIT ? FOR UPDATE SKIP LOCKED) due
      WHERE s.account_id = due.account_id
      RETURNING s.account_id, s.served, s.version, s.attempts`,
    [LEASE_MS / 1000, limit],
  )) as { rows: Claimed[] };
  return rows.map((r) => ({ account_id: Number(r.account_id), served: r.served, version: Number(r.version), attempts: Number(r.attempts) }));
}

export function startServiceSignalRelay(opts: SignalRelayOptions): SignalRelay {
  const { db, signals } = opts;
  const log = opts.log.child({ component: 'service-signals' });
  const outage = new OutageLog(log, 'tell Temporal of accounts’ served-state changes');
  const backoff = opts.backoff ?? { baseMs: BASE_BACKOFF_MS, maxMs: MAX_BACKOFF_MS };

  /** One row: every consumer's signal for its state, then the row settled at its version. */
  const deliver = async (row: Claimed): Promise<boolean> => {
    const ids = [row.account_id];
    try {
      for (const s of signals) {
        const fn = row.served ? s.resumed : s.suspended;
        if (fn) await fn.call(s, ids);
      }
    } catch (err) {
      const waitMs = signalBackoffMs(row.attempts, backoff);
      outage.failed(err, { account_id: row.account_id, served: row.served, attempts: row.attempts, retry_ms: waitMs });
      // Only the version read: a later change (already reset to be tried at once) is left alone.
      await db('account_service_signals')
        .where({ account_id: row.account_id, version: row.version })
        .update({
          claimed_until: null,
          next_attempt_at: db.raw('now() + make_interval(secs => ?)', [waitMs / 1000]),
          last_error: (err instanceof Error ? err.message : String(err)).slice(0, 1_000),
        });
      return false;
    }
    const n = await db('account_service_signals').where({ account_id: row.account_id, version: row.version }).delete();
    log.debug({ account_id: row.account_id, served: row.served, attempts: row.attempts, superseded: n === 0 }, 'told Temporal of the account’s served state');
    return true;
  };

  let running: Promise<DrainResult> | null = null;
  let again = false;
  let stopped = false;

  const drain = (): Promise<DrainResult> => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      const total: DrainResult = { delivered: 0, failed: 0 };
      do {
        again = false;
        for (;;) {
          if (stopped) break;
          const rows = await claim(db, BATCH);
          if (rows.length === 0) break;
          let ok = 0;
          await inParallel(rows, PARALLEL, async (row) => {
            if (await deliver(row)) ok++;
          });
          total.delivered += ok;
          total.failed += rows.length - ok;
          if (ok === rows.length) outage.succeeded();
          if (rows.length < BATCH) break;
        }
      } while (again && !stopped);
      return total;
    })().finally(() => {
      running = null;
    });
    return running;
  };

  const run = () =>
    void drain().catch((err: unknown) => {
      // The database itself: the rows stay, the next tick tries again.
      outage.failed(err);
    });
  const timer = setInterval(run, opts.pollMs ?? POLL_MS);
  timer.unref();

  if (opts.registry) {
    new Gauge({
      name: 'account_service_signals_pending',
      help: 'Accounts’ served-state changes whose signals Temporal has not been told yet (account_service_signals)',
      registers: [opts.registry],
      async collect() {
        const r = await db('account_service_signals').count<{ n: number }[]>('* as n').first();
        this.set(Number(r?.n ?? 0));
      },
    });
    new Gauge({
      name: 'account_service_signals_oldest_seconds',
      help: 'Age of the oldest undelivered served-state change (0 when none)',
      registers: [opts.registry],
      async collect() {
        const r = await db('account_service_signals').first(db.raw('extract(epoch FROM now() - min(changed_at)) AS s'));
        this.set(Number(r?.s ?? 0));
      },
    });
  }

  return {
    drain,
    kick: () => {
      if (!stopped) setImmediate(run);
    },
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await running?.catch(() => {});
    },
  };
}

export interface SignalBacklog {
  /** Changes not yet told to Temporal. */
  pending: number;
  /** When the oldest of them was recorded; null when none. */
  oldest_changed_at: string | null;
  /** Those that have failed at least once, oldest first (at most 50). */
  retrying: { account_id: number; served: boolean; attempts: number; next_attempt_at: string; last_error: string | null; changed_at: string }[];
}

/** The outbox as an operator sees it (`npm run ops -- accounts:signals`). */
export async function signalBacklog(db: Db): Promise<SignalBacklog> {
  const head = await db('account_service_signals').first(db.raw('count(*) AS n'), db.raw('min(changed_at) AS oldest'));
  const rows: Record<string, unknown>[] = await db('account_service_signals')
    .whereNotNull('last_error')
    .orderBy('changed_at')
    .limit(50)
    .select('account_id', 'served', 'attempts', 'next_attempt_at', 'last_error', 'changed_at');
  return {
    pending: Number(head?.n ?? 0),
    oldest_changed_at: head?.oldest ? new Date(head.oldest as Date).toISOString() : null,
    retrying: rows.map((r) => ({
      account_id: Number(r.account_id),
      served: Boolean(r.served),
      attempts: Number(r.attempts),
      next_attempt_at: new Date(r.next_attempt_at as Date).toISOString(),
      last_error: (r.last_error as string | null) ?? null,
      changed_at: new Date(r.changed_at as Date).toISOString(),
    })),
  };
}
