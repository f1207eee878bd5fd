// A failed query's error never carries the values bound to it (issue 25): errors are logged, and
// knex by default writes the SQL with its values into the message (a key's hash, a webhook URL,
// a customer's data). createDb turns that off (compileSqlOnError: false): placeholders only.
import { afterAll, describe, expect, it } from 'vitest';
import { createDb } from '../../db/connection.ts';
import { testConfig } from '../support/harness.ts';

const db = createDb({ connectionString: testConfig().DATABASE_URL!, poolMax: 2 });
afterAll(() => db.destroy());

describe('query errors', () => {
  it('name the statement with placeholders, never the values bound to it', async () => {
    const secret = `tmk_${'S'.repeat(40)}`;
    const failure = await db('no_such_table')
      .insert({ api_key: secret })
      .then(
        () => null,
        (err: Error) => err,
      );
    expect(failure).toBeInstanceOf(Error);
    expect(failure!.message).toMatch(/relation "no_such_table" does not exist/);
    expect(failure!.message).toContain('$1');
    expect(failure!.message).not.toContain(secret);
    expect(JSON.stringify(failure, Object.getOwnPropertyNames(failure))).not.toContain(secret);
  });
});
