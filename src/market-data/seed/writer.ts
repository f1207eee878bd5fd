// Bulk writes for the seed: one INSERT ... SELECT FROM unnest(array per column) per table and
// batch, which PostgreSQL ingests at hundreds of thousands of rows a second with no per-row
// round trip and no giant VALUES list to parse.
import type { Knex } from 'knex';

/** A column and the PostgreSQL array type its values are sent as. */
export type Column<T> = readonly [name: string, type: string, value: (row: T) => unknown];

/** Inserts `rows` into `table`; returns the number of rows written. */
export async function insertRows<T>(db: Knex, table: string, columns: readonly Column<T>[], rows: readonly T[], suffix = ''): Promise<number> {
  if (rows.length === 0) return 0;
  const arrays = columns.map(([, , value]) => rows.map((r) => toParam(value(r))));
  const names = columns.map(([name]) => `"${name}"`).join(', ');
  const unnest = columns.map(([, type]) => `?::${type}[]`).join(', ');
  await db.raw(`INSERT INTO ${table} (${names}) SELECT * FROM unnest(${unnest}) ${suffix}`, arrays as Knex.RawBinding[]);
  return rows.length;
}

function toParam(v: unknown): unknown {
  if (v instanceof Date) return v.toISOString();
  if (v !== null && typeof v === 'object') return JSON.stringify(v);
  return v ?? null;
}

/** `count` fresh values of a table's id sequence, in one round trip (safe beside other writers). */
export async function reserveIds(db: Knex, table: string, count: number): Promise<number[]> {
  if (count === 0) return [];
  const { rows } = (await db.raw(`SELECT nextval(pg_get_serial_sequence(?, 'id'))::bigint AS id FROM generate_series(1, ?)`, [table, count])) as {
    rows: { id: number }[];
  };
  return rows.map((r) => Number(r.id));
}
