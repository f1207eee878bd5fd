// A counter of the SQL statements a process sends through its knex handle (db_statements_total),
// on its Prometheus registry: bench:capacity divides it by the polls and notifications of a window
// to say how many statements each costs. Counted at knex's 'query' event, one per statement sent
// (BEGIN and COMMIT included); a LISTEN connection's few statements (db/listener.ts) are not.
import type { Knex } from 'knex';
import { Counter, type Registry } from 'prom-client';

export function countStatements(db: Knex, registry: Registry): void {
  // One counter per registry, however many handles count into it.
  const statements =
    (registry.getSingleMetric('db_statements_total') as Counter | undefined) ??
    new Counter({ name: 'db_statements_total', help: "SQL statements sent through the process's knex handles (BEGIN and COMMIT included)", registers: [registry] });
  db.on('query', () => statements.inc());
}
