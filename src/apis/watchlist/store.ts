// Watchlist persistence. Every change is written with a row in watchlist_changes (which the
// monitor relay applies to Temporal), a pg_notify and a `watchlist` message in the
// notifications log, all in the same transaction. Two locks, each held no longer than it must:
// - an account's writes are serialised by a lock of that account's (its item cap, and an item
//   never naming a webhook being deleted), held through the transaction's reads and writes; a
//   group of creates takes the locks of all its accounts, in key order, so two groups never
//   wait on each other in a cycle;
// - the change rows and the log's messages are written by the transaction's last statement,
//   under the notifications log's writers' lock, and committed in the same message
//   (db/last-statement.ts): change ids and log ids commit in order (a reader asking for
//   id > last never skips a late commit), and that lock, which every writer of the service
//   queues on, is held for the server's time only, never for a round trip of the network.
// Timestamps are taken by the statement that writes, after the account's lock is held (never
// now(), the transaction's start), so an account's created_at follows id order and updated_at
// never moves back.
//
// Every item the API returns (list, read, create, update) carries its health beside the spec's
// fields (health.ts), read after the write commits; the change log and the stream's `watchlist`
// messages carry the spec's fields only (renderItem).
import type { Knex } from 'knex';
import type { Db } from '../../../db/connection.ts';
import { commitWithLastStatement, LAST_STATEMENT_VALUES } from '../../../db/last-statement.ts';
import { logAppendCtes } from '../../notifications/log.ts';
import { MixedGroups } from '../../runtime/grouped-calls.ts';
import { newItemsFacts, withHealth } from './health.ts';
import type { CreateItem, UpdateItem, WatchlistItem, WatchlistItemWithHealth } from './schema.ts';

export const CHANGES_CHANNEL = 'watchlist_changes';
/**
 * The most creates written by one transaction. The creates that arrive while the transactions
 * out are running go together in the next, whichever accounts they are of (a bulk import of 16
 * in flight: one lock, one count, one insert and one commit for ~15 items, where each used to
 * queue for the lock with a transaction and a connection of its own; 16 accounts' creates at
 * once: one commit, and one hold of the notifications log's lock, for all of them).
 */
export const MAX_CREATE_GROUP = 50;
/**
 * Groups of creates out at once. An account has at most one of them (its creates keep their
 * order); a second lets the creates that arrive meanwhile go while a group waits on a lock held
 * elsewhere (an account's update, another gateway's group).
 */
export const CREATE_GROUPS_IN_FLIGHT = 2;
/** Arbitrary constant naming the class of the accounts' watchlist writers' locks (pg_advisory_xact_lock(class, key)). */
const ACCOUNT_WRITER_LOCK_CLASS = 7_204_311;

/** The account's key in that class: an int4 (two accounts sharing one only wait for each other). */
function accountLockKey(accountId: number): number {
  return accountId % 2_147_483_647;
}

/**
 * The transaction's last statement: the change rows in order, their NOTIFYs, and the `watchlist`
 * message of each in the notifications log, all under the log's writers' lock; sent with the
 * commit (db/last-statement.ts), whose values are the changes as a JSON array.
 */
const RECORD_CHANGES = `WITH ${logAppendCtes(
  `(SELECT account_id, item_id, 'watchlist' AS kind, 'watchlist:' || id AS dedupe_key, jsonb_build_object('op', op, 'item_id', item_id, 'item', item) AS payload, id AS ord FROM ch) AS e`,
  `ch AS (
    INSERT INTO watchlist_changes (account_id, item_id, op, item)
    SELECT (x.c->>'account_id')::bigint, (x.c->>'item_id')::bigint, x.c->>'op', x.c->'item'
      FROM log_lk, jsonb_array_elements(${LAST_STATEMENT_VALUES}) WITH ORDINALITY AS x(c, ord)
     ORDER BY x.ord
    RETURNING id, account_id, item_id, op, item),
  ch_notified AS (SELECT count(pg_notify('${CHANGES_CHANNEL}', id::text)) AS n FROM ch)`,
)}
  SELECT (SELECT n FROM ch_notified) AS changes, (SELECT ids FROM log_notified) AS log_ids`;
const JSON_COLUMNS = ['keywords', 'date_filter', 'row_filter', 'roles_json'] as const;
const MONEY_COLUMNS = ['min_price_filter', 'max_price_filter', 'min_avg_price_threshold', 'max_avg_price_threshold'] as const;
/** The start of the current statement: one value for every column it sets, taken once the locks are held. */
const WRITE_TIME = 'statement_timestamp()';

type Row = Record<string, unknown>;

function iso(v: unknown): string | null {
  return v == null ? null : (v as Date).toISOString();
}

function toNumber(v: unknown): number | null {
  return v == null ? null : Number(v);
}

/**
 * role_id as the client sent it, from its text column (db/migrations/021): the API takes an
 * integer only up to 2^53 - 1 (16 digits) and a string only of 17-20 digits, so the length says
 * which it was. Text that a number would not hold exactly stays text.
 */
function roleIdOut(v: unknown): number | string | null {
  if (v == null) return null;
  const text = String(v);
  const n = Number(text);
  return text.length <= 16 && Number.isSafeInteger(n) ? n : text;
}

/** A database row as the API returns it, in the field order of spec 2.1. */
export function renderItem(r: Row): WatchlistItem {
  return {
    id: Number(r.id),
    client_id: Number(r.client_id),
    website: r.website as WatchlistItem['website'],
    event: r.event as string,
    region: r.region as string,
    min_price_filter: toNumber(r.min_price_filter),
    max_price_filter: toNumber(r.max_price_filter),
    min_avg_price_threshold: toNumber(r.min_avg_price_threshold),
    max_avg_price_threshold: toNumber(r.max_avg_price_threshold),
    stock_threshold_filter: r.stock_threshold_filter as number | null,
    stock_threshold_filter_max: r.stock_threshold_filter_max as number | null,
    seat_quantity: r.seat_quantity as number,
    priority: r.priority as number,
    section: r.section as string | null,
    keywords: r.keywords as string[] | null,
    date_filter: r.date_filter as WatchlistItem['date_filter'],
    row_filter: r.row_filter as string[] | null,
    change_type: r.change_type as WatchlistItem['change_type'],
    standard_tickets: r.standard_tickets as boolean,
    resale_tickets: r.resale_tickets as boolean,
    general_admission_tickets: r.general_admission_tickets as boolean,
    platinum_tickets: r.platinum_tickets as boolean,
    no_restricted_view: r.no_restricted_view as boolean,
    no_accessibility: r.no_accessibility as boolean,
    no_presale: r.no_presale as boolean,
    auto_add_to_watchlist: r.auto_add_to_watchlist as boolean,
    task_active: r.task_active as boolean,
    muted_until: iso(r.muted_until),
    cooldown_seconds: r.cooldown_seconds as number,
    mb_did: r.mb_did as string | null,
    roles_json: r.roles_json as WatchlistItem['roles_json'],
    webhook_setting_id: toNumber(r.webhook_setting_id),
    role_id: roleIdOut(r.role_id),
    website_id: toNumber(r.website_id),
    notes: r.notes as string | null,
    created_at: iso(r.created_at)!,
    updated_at: iso(r.updated_at)!,
    deleted: r.deleted as boolean,
  };
}

/** Field values as columns: JSON columns serialised (pg would send arrays as SQL arrays). */
function toColumns(fields: Partial<CreateItem>): Row {
  const out: Row = { ...fields };
  for (const c of JSON_COLUMNS) if (out[c] !== undefined && out[c] !== null) out[c] = JSON.stringify(out[c]);
  for (const c of MONEY_COLUMNS) if (typeof out[c] === 'number') out[c] = String(out[c]);
  if (typeof out.role_id === 'number') out.role_id = String(out.role_id);
  return out;
}

export class TooManyItemsError extends Error {}
/** webhook_setting_id names no active webhook of the account. */
export class UnknownWebhookError extends Error {}

type Change = { op: 'create' | 'update' | 'delete'; item: WatchlistItem };

interface WriteOptions<T> {
  answer(trx: Knex.Transaction, item: WatchlistItem): Promise<T>;
}

/** One create, queued with the others waiting (WatchlistStore.create). */
interface CreateCall {
  accountId: number;
  fields: CreateItem;
  maxItems: number;
}

/**
 * A create's outcome in its group: the item, or why it was refused, or (tried alone after its
 * group failed on one row) its own failure; the others of the group are not refused with it.
 */
type CreateOutcome = { item: WatchlistItemWithHealth } | { refused: TooManyItemsError | UnknownWebhookError } | { failed: unknown };

/**
 * Whether a failed group's error is about what one of its rows holds (SQLSTATE class 22, a data
 * exception, or 23, a constraint): the statement failed, so nothing committed, and each create
 * is tried alone so the others are not refused for one row. Any other failure (the database
 * away, a commit whose outcome is unknown) fails the group: trying again could write twice.
 */
function aboutOneRow(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
}

/**
 * Why an item of `accountId` may not name webhook `id`, or null. Read under the account's writers' lock,
 * which deleting a webhook also takes, so no item can come to name a deleted one.
 */
async function webhookRefusal(trx: Knex.Transaction, accountId: number, id: number): Promise<string | null> {
  return (await webhookRefusals(trx, [{ accountId, id }]))[0] ?? null;
}

/** webhookRefusal for each (account, webhook) of `asked`, in one read, in order: null where none. */
async function webhookRefusals(trx: Knex.Transaction, asked: readonly { accountId: number; id: number }[]): Promise<(string | null)[]> {
  if (asked.length === 0) return [];
  const hooks: { id: string; account_id: string; active: boolean }[] = await trx('webhooks')
    .whereIn('id', [...new Set(asked.map((a) => a.id))].map(String))
    .where({ deleted: false })
    .select('id', 'account_id', 'active');
  const byId = new Map(hooks.map((h) => [Number(h.id), h]));
  return asked.map(({ accountId, id }) => {
    const hook = byId.get(id);
    if (hook === undefined || Number(hook.account_id) !== accountId) {
      return `webhook_setting_id: no webhook with id ${id} belongs to the account (create one with POST /webhooks)`;
    }
    return hook.active ? null : `webhook_setting_id: webhook ${id} is not active`;
  });
}

export class WatchlistStore {
  constructor(private readonly db: Db) {}

  async list(accountId: number): Promise<WatchlistItemWithHealth[]> {
    const rows = await this.db('watchlist_items').where({ client_id: accountId, deleted: false }).orderBy('id');
    return withHealth(this.db, accountId, rows.map(renderItem));
  }

  async get(accountId: number, id: number): Promise<WatchlistItemWithHealth | null> {
    const row = await this.db('watchlist_items').where({ id, client_id: accountId, deleted: false }).first();
    return row ? this.withHealth(renderItem(row)) : null;
  }

  private async withHealth(item: WatchlistItem, db: Knex = this.db): Promise<WatchlistItemWithHealth> {
    const [out] = await withHealth(db, item.client_id, [item]);
    return out!;
  }

  /**
   * A written item's health, read in the writing transaction: if it cannot be read (the
   * database went away), the write rolls back and the 5xx leaves nothing stored, rather than an
   * item the client was told was not created (test/faults/postgres-restart.test.ts). A create
   * reads it in the statement that takes the writers' lock, before the lock (newItemsFacts).
   */
  private readonly healthInWrite = (trx: Knex.Transaction, item: WatchlistItem) => this.withHealth(item, trx);

  /**
   * One transaction out per account; the creates that arrive while groups are out form the next,
   * whichever accounts they are of, each account taking its turn (runtime/grouped-calls.ts).
   */
  private readonly creates = new MixedGroups<CreateCall, CreateOutcome>({
    send: (calls) => this.createGroup(calls),
    maxGroup: MAX_CREATE_GROUP,
    inFlight: CREATE_GROUPS_IN_FLIGHT,
  });

  async create(accountId: number, fields: CreateItem, maxItems: number): Promise<WatchlistItemWithHealth> {
    const outcome = await this.creates.call({ accountId, fields, maxItems }, accountId);
    if ('refused' in outcome) throw outcome.refused;
    if ('failed' in outcome) throw outcome.failed;
    return outcome.item;
  }

  /**
   * A group of creates. When one row failed it, each account's creates are written apart, at
   * once (one transaction each, as if it had been alone), and only in the account whose row it
   * was is each create then tried alone: the others pay one more transaction, not one per create.
   */
  private async createGroup(calls: CreateCall[]): Promise<CreateOutcome[]> {
    try {
      return await this.createTogether(calls);
    } catch (err) {
      if (calls.length === 1 || !aboutOneRow(err)) throw err;
      const accounts = [...new Set(calls.map((c) => c.accountId))];
      if (accounts.length === 1) return this.createEachAlone(calls);
      const outcomes = new Map<CreateCall, CreateOutcome>();
      await Promise.all(
        accounts.map(async (accountId) => {
          const own = calls.filter((c) => c.accountId === accountId);
          const written = await this.createTogether(own).catch((failed: unknown) => {
            if (own.length === 1 || !aboutOneRow(failed)) return own.map(() => ({ failed }));
            return this.createEachAlone(own);
          });
          own.forEach((c, i) => outcomes.set(c, written[i]!));
        }),
      );
      return calls.map((c) => outcomes.get(c)!);
    }
  }

  /** Each of `calls` in a transaction of its own, one after another: one's failure is its own. */
  private async createEachAlone(calls: CreateCall[]): Promise<CreateOutcome[]> {
    const outcomes: CreateOutcome[] = [];
    for (const c of calls) outcomes.push(await this.createTogether([c]).then(([o]) => o!, (failed: unknown) => ({ failed })));
    return outcomes;
  }

  /**
   * Writes `calls` (each account's in arrival order) in one transaction: the cap and the webhooks
   * are checked for each in order, as if each had its own transaction one after another; the
   * accepted ones are inserted by one statement (ids in order), and their changes recorded and
   * committed by one more. A refused create refuses only itself.
   */
  private async createTogether(calls: CreateCall[]): Promise<CreateOutcome[]> {
    const accounts = [...new Set(calls.map((c) => c.accountId))];
    // In key order: two groups sharing accounts take their locks in the same order.
    const lockKeys = [...new Set(accounts.map(accountLockKey))].sort((a, b) => a - b);
    const facts = newItemsFacts(calls.map((c) => ({ ...c.fields, accountId: c.accountId })));
    const outcomes: (CreateOutcome | null)[] = calls.map(() => null);
    await this.db.transaction(async (trx) => {
      // The read is a lateral of one row that always exists, so the locks are taken whatever the
      // read returns; the projection takes them after the read's first row (the subquery is run
      // once, when first needed), one after another in the array's order.
      const { rows } = (await trx.raw(
        `SELECT r.*, (SELECT count(pg_advisory_xact_lock(?, k)) FROM unnest(?::int[]) AS k) AS locked
           FROM (SELECT 1) AS one LEFT JOIN LATERAL (${facts.sql}) AS r ON true`,
        [ACCOUNT_WRITER_LOCK_CLASS, lockKeys, ...facts.bindings] as Knex.RawBinding[],
      )) as { rows: Record<string, unknown>[] };
      const live: { client_id: string; n: string }[] = await trx('watchlist_items')
        .whereIn('client_id', accounts)
        .where({ deleted: false })
        .groupBy('client_id')
        .select('client_id', trx.raw('count(*) AS n'));
      const held = new Map(accounts.map((a) => [a, 0]));
      for (const r of live) held.set(Number(r.client_id), Number(r.n));
      const hooked = calls.flatMap((c, i) => (c.fields.webhook_setting_id != null ? [i] : []));
      const hookRefusals = await webhookRefusals(trx, hooked.map((i) => ({ accountId: calls[i]!.accountId, id: calls[i]!.fields.webhook_setting_id! })));
      const refusals = new Map(hooked.map((i, k) => [i, hookRefusals[k]]));
      const accepted: number[] = [];
      calls.forEach((c, i) => {
        const refusal = refusals.get(i);
        if (held.get(c.accountId)! >= c.maxItems) outcomes[i] = { refused: new TooManyItemsError(`an account may hold at most ${c.maxItems} watchlist items`) };
        else if (refusal != null) outcomes[i] = { refused: new UnknownWebhookError(refusal) };
        else {
          accepted.push(i);
          held.set(c.accountId, held.get(c.accountId)! + 1);
        }
      });
      if (accepted.length === 0) return;
      const inserted: Row[] = await trx('watchlist_items')
        .insert(accepted.map((i) => ({ ...toColumns(calls[i]!.fields), client_id: calls[i]!.accountId, created_at: trx.raw(WRITE_TIME), updated_at: trx.raw(WRITE_TIME) })))
        .returning('*');
      // One INSERT ... VALUES takes its ids from the sequence row by row, in the order of VALUES.
      const items = inserted.map(renderItem).sort((a, b) => a.id - b.id);
      const complete = await facts.finish(trx, rows);
      accepted.forEach((i, k) => (outcomes[i] = { item: complete[i]!(items[k]!) }));
      await this.recordAndCommit(trx, items.map((item) => ({ op: 'create', item })));
    });
    return outcomes.map((o) => o!);
  }

  /**
   * Applies a partial update; `check` sees the merged item and may refuse it with a message.
   * Returns null when the item does not exist for this account.
   */
  async update(
    accountId: number,
    id: number,
    patch: UpdateItem,
    check: (merged: WatchlistItem) => string | null,
  ): Promise<WatchlistItemWithHealth | string | null> {
    // An empty PATCH changes nothing: no write, no change row, updated_at stays.
    if (Object.keys(patch).length === 0) return this.get(accountId, id);
    let refusal: string | null = null;
    const item = await this.write(accountId, async (trx) => {
      const current = await trx('watchlist_items').where({ id, client_id: accountId, deleted: false }).forUpdate().first();
      if (!current) return null;
      refusal = check({ ...renderItem(current), ...patch } as WatchlistItem);
      // Only a PATCH that names a webhook is checked: an item keeps naming a webhook that was
      // deactivated since (its notifications are then not delivered there).
      if (!refusal && patch.webhook_setting_id != null) refusal = await webhookRefusal(trx, accountId, patch.webhook_setting_id);
      if (refusal) return null;
      const [row] = await trx('watchlist_items')
        .where({ id })
        .update({ ...toColumns(patch), updated_at: trx.raw(WRITE_TIME) })
        .returning('*');
      return { op: 'update', item: renderItem(row) };
    }, { answer: (trx, item) => this.healthInWrite(trx, item) });
    if (refusal !== null) return refusal;
    return item;
  }

  async softDelete(accountId: number, id: number): Promise<boolean> {
    const item = await this.write(accountId, async (trx) => {
      // Lock the row first so the timestamps below are taken after any concurrent writer committed.
      const current = await trx('watchlist_items').where({ id, client_id: accountId, deleted: false }).forUpdate().first('id');
      if (!current) return null;
      const [row] = await trx('watchlist_items')
        .where({ id })
        .update({ deleted: true, deleted_at: trx.raw(WRITE_TIME), updated_at: trx.raw(WRITE_TIME) })
        .returning('*');
      return { op: 'delete', item: renderItem(row) };
    });
    return item !== null;
  }

  /**
   * Removes a webhook (`remove`, false when there is none) and clears webhook_setting_id on every
   * live item of the account naming it, in one transaction under the writers' lock. Each cleared
   * item is an ordinary update: its monitor and the account's stream clients see it.
   */
  async detachWebhook(accountId: number, webhookId: number, remove: (trx: Knex.Transaction) => Promise<boolean>): Promise<boolean> {
    return this.db.transaction(async (trx) => {
      await trx.raw('SELECT pg_advisory_xact_lock(?, ?)', [ACCOUNT_WRITER_LOCK_CLASS, accountLockKey(accountId)]);
      if (!(await remove(trx))) return false;
      const rows = await trx('watchlist_items')
        .where({ client_id: accountId, webhook_setting_id: String(webhookId), deleted: false })
        .update({ webhook_setting_id: null, updated_at: trx.raw(WRITE_TIME) })
        .returning('*');
      await this.recordAndCommit(
        trx,
        rows.sort((a: Row, b: Row) => Number(a.id) - Number(b.id)).map((row) => ({ op: 'update', item: renderItem(row) })),
      );
      return true;
    });
  }

  /**
   * Runs one write of `accountId`'s, serialised with the account's others, and records its
   * change; `fn` returns null when nothing changed. `answer` turns the written item into the
   * answer, in the transaction, before the change is recorded and committed.
   */
  private async write(accountId: number, fn: (trx: Knex.Transaction) => Promise<Change | null>): Promise<WatchlistItem | null>;
  private async write<T>(accountId: number, fn: (trx: Knex.Transaction) => Promise<Change | null>, opts: WriteOptions<T>): Promise<T | null>;
  private async write<T>(accountId: number, fn: (trx: Knex.Transaction) => Promise<Change | null>, opts?: WriteOptions<T>): Promise<T | WatchlistItem | null> {
    return this.db.transaction(async (trx) => {
      await trx.raw('SELECT pg_advisory_xact_lock(?, ?)', [ACCOUNT_WRITER_LOCK_CLASS, accountLockKey(accountId)]);
      const change = await fn(trx);
      if (!change) return null;
      // The answer is read before the change is recorded: that statement commits.
      const answer = opts ? await opts.answer(trx, change.item) : change.item;
      await this.recordAndCommit(trx, [change]);
      return answer;
    });
  }

  /**
   * The change rows, their NOTIFYs and the stream's `watchlist` messages (an account's stream
   * clients see the change too, and a resuming client gets it in order with the notifications),
   * in one statement sent with the commit: nothing may follow it in the transaction.
   */
  private async recordAndCommit(trx: Knex.Transaction, changes: Change[]): Promise<void> {
    if (changes.length === 0) return;
    await commitWithLastStatement(
      trx,
      RECORD_CHANGES,
      changes.map((c) => ({ account_id: c.item.client_id, item_id: c.item.id, op: c.op, item: c.item })),
    );
  }
}
