// Which accounts are served, as the monitors, webhooks and tracking act on it (issue 25: an account
// whose subscription is not served consumes nothing). "Served" has one definition, the SQL
// function account_served (db/migrations/026): a billing account and an `active` or `trialing`
// subscription. account_service keeps, per account, the state last acted on; a sweep every
// SERVICE_SWEEP_MS compares it with account_served and, for each account whose state changed,
// runs the hooks' database work (the monitors' members leave or come back, parked webhook
// deliveries go out) in the transaction that records the new state. So each change is acted on
// exactly once, whichever of several workers sweeps, and a crash mid-way leaves the change to the
// next sweep.
//
// That transaction makes no call to Temporal (issue 38): a call there held the accounts' rows for
// its length, and one refused call (Temporal down, one account being resumed) rolled back the
// suspension of every other account of the sweep. What Temporal must be told of a change (a
// resumed account's trackings woken, its shard pollers started) is written to the outbox
// account_service_signals in the same transaction, and the signal relay
// (src/accounts/service-signals.ts) tells it afterwards, retrying until it works.
//
// Writers that add work for an account (the membership relay) read its state with servedStates,
// which takes a share lock on its row: a sweep changing that account waits for them, and they
// for it, so a member is never added after its account's suspension was applied.
import type { Knex } from 'knex';
import type { Db } from '../../db/connection.ts';
import type { Logger } from '../logger.ts';

/**
 * What one account's change of state asks of a consumer's database, inside the sweep's
 * transaction. Database work only: no call to Temporal or anything else outside PostgreSQL (that
 * is a ServiceSignals', src/accounts/service-signals.ts).
 */
export interface ServiceHooks {
  /** Accounts no longer served: stop their work (it resumes, so keep what the account owns). */
  suspend(trx: Knex.Transaction, accountIds: number[]): Promise<void>;
  /** Accounts served again: resume their work from a fresh start. */
  resume(trx: Knex.Transaction, accountIds: number[]): Promise<void>;
}

export interface SweepResult {
  suspended: number[];
  resumed: number[];
}

/**
 * Records every account whose served state differs from the one last acted on, runs the hooks
 * for them and queues their signals for Temporal (account_service_signals), in one transaction
 * that makes no call outside the database. An account seen for the first time counts as a
 * change only when it is not served (its work, made before this sweep existed, must stop).
 */
export async function sweepServiceState(db: Db, hooks: readonly ServiceHooks[]): Promise<SweepResult> {
  // Candidates first, without locks: the sweep runs every few seconds and nearly always finds none.
  const candidates: { id: string }[] = await db('accounts as a')
    .leftJoin('account_service as s', 's.account_id', 'a.id')
    .whereRaw('s.served IS DISTINCT FROM account_served(a.id)')
    .orderBy('a.id')
    .select('a.id');
  if (candidates.length === 0) return { suspended: [], resumed: [] };
  return db.transaction(async (trx) => {
    // In id order, as servedStates locks: no deadlock between the two.
    const { rows } = (await trx.raw(
      `INSERT INTO account_service AS s (account_id, served, changed_at)
       SELECT id, account_served(id), now() FROM accounts WHERE id = ANY(?::bigint[]) ORDER BY id
       ON CONFLICT (account_id) DO UPDATE SET served = EXCLUDED.served, changed_at = EXCLUDED.changed_at
         WHERE s.served IS DISTINCT FROM EXCLUDED.served
       RETURNING account_id, served, (xmax = 0) AS inserted`,
      [candidates.map((c) => c.id)],
    )) as { rows: { account_id: string; served: boolean; inserted: boolean }[] };
    const suspended = rows.filter((r) => !r.served).map((r) => Number(r.account_id));
    const resumed = rows.filter((r) => r.served && !r.inserted).map((r) => Number(r.account_id));
    for (const hook of hooks) {
      if (suspended.length) await hook.suspend(trx, suspended);
      if (resumed.length) await hook.resume(trx, resumed);
    }
    await queueSignals(trx, [...suspended.map((id) => [id, false] as const), ...resumed.map((id) => [id, true] as const)]);
    return { suspended, resumed };
  });
}

/**
 * The outbox rows of these changes (src/accounts/service-signals.ts), in the change's transaction.
 * One row per account: a change overwrites an undelivered earlier one (a resume the relay has not
 * sent yet is not sent once the account lapsed again), with a new version, a fresh retry
 * schedule, and no claim (a relay delivering the earlier one leaves it in place).
 */
async function queueSignals(trx: Knex.Transaction, changes: (readonly [number, boolean])[]): Promise<void> {
  if (changes.length === 0) return;
  changes.sort((a, b) => a[0] - b[0]);
  await trx.raw(
    `INSERT INTO account_service_signals AS q (account_id, served)
     SELECT * FROM unnest(?::bigint[], ?::boolean[])
     ON CONFLICT (account_id) DO UPDATE SET served = EXCLUDED.served, version = EXCLUDED.version, attempts = 0,
       next_attempt_at = EXCLUDED.next_attempt_at, claimed_until = NULL, last_error = NULL, changed_at = EXCLUDED.changed_at`,
    [changes.map((c) => c[0]), changes.map((c) => c[1])],
  );
}

/**
 * The served state of each account, as last acted on, share-locked until `trx` ends. An account
 * not yet swept gets its row now, from account_served (nothing of it has been acted on yet).
 */
export async function servedStates(trx: Knex.Transaction, accountIds: readonly number[]): Promise<Map<number, boolean>> {
  const ids = [...new Set(accountIds)].sort((a, b) => a - b);
  if (ids.length === 0) return new Map();
  await trx.raw(
    `INSERT INTO account_service (account_id, served)
     SELECT id, account_served(id) FROM accounts WHERE id = ANY(?::bigint[]) ORDER BY id
     ON CONFLICT (account_id) DO NOTHING`,
    [ids],
  );
  const rows: { account_id: string; served: boolean }[] = await trx('account_service').whereIn('account_id', ids).orderBy('account_id').forShare().select('account_id', 'served');
  // An account that no longer exists has no row: nothing of it is served.
  return new Map(ids.map((id) => [id, rows.find((r) => Number(r.account_id) === id)?.served ?? false]));
}

export interface ServiceSweep {
  /** Runs one sweep now (tests, and a start-up that should not wait for the first tick). */
  sweep(): Promise<SweepResult>;
  stop(): Promise<void>;
}

/**
 * Sweeps every `everyMs` (one at a time); logs each account whose state changed. `onChange` runs
 * after a sweep that changed some (the signal relay's kick: it must not wait for anything).
 */
export function startServiceSweep(opts: { db: Db; hooks: readonly ServiceHooks[]; everyMs: number; log: Logger; onChange?: (r: SweepResult) => void }): ServiceSweep {
  const log = opts.log.child({ component: 'service-sweep' });
  let chain: Promise<unknown> = Promise.resolve();
  let busy = false;
  /** One sweep at a time; a sweep asked for while one runs starts after it (it may have read too early). */
  const sweep = (): Promise<SweepResult> => {
    const next = chain.then(() => sweepServiceState(opts.db, opts.hooks));
    chain = next.catch(() => {});
    return next.then((r) => {
      for (const id of r.suspended) log.info({ account_id: id }, 'account not served: its monitoring, webhooks and tracking pause');
      for (const id of r.resumed) log.info({ account_id: id }, 'account served again: its monitoring, webhooks and tracking resume');
      if (r.suspended.length || r.resumed.length) opts.onChange?.(r);
      return r;
    });
  };
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    sweep()
      .catch((err: unknown) => log.warn({ err }, 'could not sweep the accounts’ served state; will retry'))
      .finally(() => (busy = false));
  }, opts.everyMs);
  timer.unref();
  return {
    sweep,
    stop: async () => {
      clearInterval(timer);
      await chain;
    },
  };
}
