// A transaction's last statement sent together with its COMMIT, in one message, for statements
// that take a lock every writer of the service queues on (the notifications log's writers'
// lock, the watchlist changes' order): a transaction-scoped lock is held until the commit, and
// with the statement and the commit in two round trips it would be held for a whole round trip
// of the network as well. When PostgreSQL is 300 ms away (the rehearsal's pg-slow fault), that
// round trip is the lock's every holder's, and the writers behind them queued for seconds.
//
// Sent together, the lock is held only while the server runs the statement and commits. Two
// steps, because a message of several statements (the simple query protocol) takes no
// parameters, and inlining values into SQL text is not something to do with a client's data:
// 1. the values go first as one parameter, into a transaction-local setting (no lock is taken);
// 2. the statement reads them with `current_setting('tm.last_statement')::jsonb` and is sent
//    with `COMMIT AND CHAIN`: the commit releases the locks on the server, and opens an empty
//    transaction that the caller's own COMMIT (knex's, at the end of the callback) ends.
// The callback must do nothing after it: everything is committed once it returns.
import type { Knex } from 'knex';

/** The transaction-local setting the statement reads its values from. */
export const LAST_STATEMENT_SETTING = 'tm.last_statement';

/** SQL that reads the values sent with the statement, as jsonb. */
export const LAST_STATEMENT_VALUES = `current_setting('${LAST_STATEMENT_SETTING}')::jsonb`;

/**
 * Runs `sql` (which reads `values` through LAST_STATEMENT_VALUES and has no `?` of its own) as the
 * transaction's last statement, committed in the same message; its rows.
 */
export async function commitWithLastStatement<T>(trx: Knex.Transaction, sql: string, values: unknown): Promise<T[]> {
  // knex would take a `?` in the statement for a binding: the text must have none.
  if (sql.includes('?')) throw new Error('commitWithLastStatement: the statement must read its values from LAST_STATEMENT_VALUES, not from ? bindings');
  await trx.raw('SELECT set_config(?, ?, true)', [LAST_STATEMENT_SETTING, JSON.stringify(values)]);
  // No bindings: knex and pg send it as one simple query, both statements in one message.
  const results = (await trx.raw(`${sql};\nCOMMIT AND CHAIN`)) as { rows: T[] }[];
  return results[0]!.rows;
}
