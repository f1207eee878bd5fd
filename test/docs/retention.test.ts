// docs/operations.md "Retention" lists every table of the schema with its rule or the reason it
// needs none, and every rule the housekeeping runs is there with its setting: a new table, or a
// new rule, comes with its line.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { retentionRules } from '../../src/retention/rules.ts';
import { databaseUrl, testConfig } from '../support/harness.ts';
import { readDoc } from './markdown.ts';

let db: Db;

beforeAll(() => {
  db = createDb({ connectionString: databaseUrl(), poolMax: 1 });
});

afterAll(async () => {
  await db?.destroy();
});

/** The Retention table's rows: the tables each names (first column, in backticks) and its cells. */
function retentionRows(): { tables: string[]; cells: string[] }[] {
  const doc = readDoc('docs/operations.md');
  const start = doc.indexOf('\n## Retention\n');
  expect(start).toBeGreaterThan(0);
  const section = doc.slice(start + 1, doc.indexOf('\n## ', start + 1));
  return section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => {
      const cells = line.slice(1, -1).split('|').map((c) => c.trim());
      return { tables: [...cells[0]!.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!), cells };
    });
}

describe('docs/operations.md: Retention', () => {
  it('names every table of the schema once, each with what it holds, its rule and why', async () => {
    const { rows } = await db.raw(`SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`);
    const schema = (rows as { tablename: string }[]).map((r) => r.tablename);
    const documented = retentionRows().flatMap((r) => r.tables);
    expect(documented.length).toBe(new Set(documented).size);
    expect([...documented].sort()).toEqual(schema);
    for (const row of retentionRows()) {
      expect(row.cells, row.tables.join(', ')).toHaveLength(5);
      const [, holds, rule, , why] = row.cells;
      expect(holds && rule && why, row.tables.join(', ')).toBeTruthy();
    }
  });

  it('gives each table the housekeeping prunes a rule and its setting', () => {
    const rows = retentionRows();
    for (const rule of retentionRules(testConfig())) {
      const row = rows.find((r) => r.tables.includes(rule.table));
      expect(row, rule.table).toBeDefined();
      expect(row!.cells[2], rule.table).not.toBe('none');
    }
  });
});
